// Forwarding a request to a service and its response back: the identity signed for the service (with that
// service's own key, over the body's bytes, with a nonce of its own: every request sent is signed anew), event
// streams passed through unbuffered and without a time limit, client disconnects propagated upstream,
// failures reported in the spec's error body (or, mid-stream, as an SSE `error` event). The gateway never
// resends a request: undici does not retry one that reached the service, and nothing here does.
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { formatSse } from '@fin/contracts';
import { identityKey, loggerOf, requestIdOf, signIdentity, trackEventStream, type Caller, type IdentityKey } from '@fin/http';
import { currentTrace, runInSpan, type Logger } from '@fin/log';
import { endSpan, SpanKind, startSpan, type LiveSpan } from '@fin/tracing';
import type { Request, Response } from 'express';
import type { Dispatcher } from 'undici';
import { bodyOf } from './body';
import { isPassableErrorBody, midStreamFailure, normalisedError, upstreamFailure } from './errors';
import { requestHeaders, responseHeaders, setResponseHeaders } from './headers';
import { IdleTimeoutError, copyBody, copyEventStream, readBounded } from './stream';
import { UPSTREAM_NAMES, type UpstreamName } from '../routes';
import type { ServicePool } from './service-pools';

/** Successful answers up to this size (with a Content-Length) are relayed in one piece rather than streamed. */
const WHOLE_BODY_BYTES = 64 * 1024;

export type SigningKeys = Readonly<Record<UpstreamName, IdentityKey>>;

/** One key per service, derived from INTERNAL_SIGNING_SECRET once, at start (see identityKey in @fin/http). */
export function signingKeysFor(secret: string): SigningKeys {
  return Object.fromEntries(UPSTREAM_NAMES.map((name) => [name, identityKey(secret, name)])) as Record<UpstreamName, IdentityKey>;
}

export interface ProxyOptions {
  logger: Logger;
  /** The key of each service the gateway signs identities for. */
  signingKeys: SigningKeys;
  /** Until the service's response headers arrive. */
  responseTimeoutMs: number;
  /** Longest silence inside a non-event-stream response body. */
  idleTimeoutMs: number;
}

/** Error bodies longer than this are not inspected: they are not the spec's body. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

class ClientGoneError extends Error {
  constructor() {
    super('the client closed the connection');
    this.name = 'ClientGoneError';
  }
}

function isEventStream(response: Dispatcher.ResponseData): boolean {
  const type = response.headers['content-type'];
  return response.statusCode >= 200 && response.statusCode < 300 && typeof type === 'string' && /^text\/event-stream\b/i.test(type);
}

/**
 * Forwards the request to `upstream` with `who`'s identity signed (null: forwarded without an API key, e.g. the
 * portal's pages) and relays the answer. Rejects with the error to answer when the service could not be reached or
 * failed before its answer began.
 */
export async function forward(
  upstream: ServicePool,
  options: ProxyOptions,
  who: Caller | null,
  req: Request,
  res: Response,
): Promise<void> {
  // The portal's web pages, forwarded without an API key: a browser session of the portal's own.
  const browserPage = upstream.name === 'portal' && who === null;

  // The client going away (closing an event stream, a timeout of its own) aborts the work upstream.
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort(new ClientGoneError());
  });

  // With traces exported, the hop is a CLIENT span of the request's trace, and the service's span its child.
  const hop = startHopSpan(upstream, req, res);
  let response: Dispatcher.ResponseData;
  try {
    const request = () => send(req, res, upstream, options, who, browserPage, controller.signal);
    response = await (hop === undefined ? request() : runInSpan(hop.context, request));
    hop?.span.setAttribute('http.response.status_code', response.statusCode);
  } catch (error) {
    hop?.span.setAttribute('error.type', error instanceof Error ? error.name : 'unknown');
    if (controller.signal.aborted) {
      log(res, options, upstream).info('the client left before the service answered; request aborted');
      return;
    }
    throw upstreamFailure(upstream, error, options.responseTimeoutMs);
  }

  const { statusCode, body } = response;
  try {
    if (isEventStream(response)) {
      // The body went upstream; an event stream may stay open for minutes and need not keep it.
      req.body = undefined;
      await relayEventStream(response, res, controller.signal, upstream, options);
      return;
    }
    if (statusCode >= 400) {
      await relayError(response, res, upstream, options, browserPage);
      return;
    }
    res.statusCode = statusCode;
    setResponseHeaders(res, response.headers);
    const length = Number(response.headers['content-length']);
    if (Number.isInteger(length) && length <= WHOLE_BODY_BYTES) {
      // A small answer of known length goes out whole: status line, headers and body in one write.
      res.end(await readDeclared(body, length, options.idleTimeoutMs));
      return;
    }
    await copyBody(body, res, controller.signal, options.idleTimeoutMs);
    res.end();
  } catch (error) {
    body.destroy();
    if (controller.signal.aborted) {
      log(res, options, upstream).info('the client left during the response; request aborted');
      return;
    }
    log(res, options, upstream).error({ err: error, status: statusCode }, 'the service failed during its response');
    if (res.headersSent) res.destroy();
    else throw upstreamFailure(upstream, error, options.responseTimeoutMs);
  }
}

/** The proxy hop's span, ended when the client's response is done (or the client has gone). */
function startHopSpan(upstream: ServicePool, req: Request, res: Response): LiveSpan | undefined {
  const hop = startSpan(`${req.method} ${upstream.name}`, currentTrace(), {
    kind: SpanKind.CLIENT,
    attributes: { 'http.request.method': req.method, 'server.address': upstream.name },
  });
  if (hop !== undefined) res.once('close', () => endSpan(hop.span));
  return hop;
}

/**
 * A body of declared length, read into one buffer (the common answer: a cached JSON body of a few KB). Listeners
 * and one idle timer, refreshed per chunk, rather than an async iterator and a timer per chunk.
 */
function readDeclared(body: Readable, length: number, idleMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const whole = Buffer.allocUnsafe(length);
    let received = 0;
    const timer = setTimeout(() => body.destroy(new IdleTimeoutError(idleMs)), idleMs);
    const settle = (error: Error | undefined) => {
      clearTimeout(timer);
      body.removeListener('data', onData);
      body.removeListener('end', onEnd);
      body.removeListener('error', onError);
      if (error !== undefined) reject(error);
      else resolve(whole);
    };
    function onData(chunk: Buffer): void {
      if (received + chunk.length > length) {
        settle(new Error('the service sent more than its Content-Length'));
        return;
      }
      chunk.copy(whole, received);
      received += chunk.length;
      timer.refresh();
    }
    function onEnd(): void {
      settle(received === length ? undefined : new Error('the service sent less than its Content-Length'));
    }
    function onError(error: Error): void {
      settle(error);
    }
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', onError);
  });
}

/**
 * The request's logger naming the service. Made when a line is logged (rarely: errors and aborts), not per
 * request: a child logger costs time, and a closure kept for an event stream's life costs memory.
 */
function log(res: Response, options: ProxyOptions, upstream: ServicePool): Logger {
  return loggerOf(res, options.logger).child({ upstream: upstream.name });
}

/**
 * Sends the request to the service. Apart from what forwardTo keeps, the request's headers, path and body live
 * only here: an event stream keeps forwardTo's state for its whole life.
 */
function send(
  req: Request,
  res: Response,
  upstream: ServicePool,
  options: ProxyOptions,
  caller: Caller | null,
  browserPage: boolean,
  signal: AbortSignal,
): Promise<Dispatcher.ResponseData> {
  const requestId = requestIdOf(res) ?? randomUUID();
  const path = `${upstream.basePath}${req.originalUrl}`;
  // The bytes sent are the bytes signed: the body was read whole before (readBody), never streamed.
  const body = bodyOf(req.body);
  const headers = Object.assign(
    requestHeaders(req, { browserCredentials: browserPage, apiKey: upstream.name === 'mcp' }),
    signIdentity({ requestId, caller }, options.signingKeys[upstream.name], { method: req.method, path, body }),
  );
  return upstream.pool.request({
    method: req.method,
    path,
    headers,
    body,
    signal,
    headersTimeout: options.responseTimeoutMs,
    // Bodies have no undici time limit: event streams may stay quiet for long; copyBody limits the rest.
    bodyTimeout: 0,
  });
}

/** Sets headers exactly as given (express's res.set would add a charset to Content-Type). */
function setHeaders(res: Response, headers: Record<string, string | string[]>): void {
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
}

async function relayEventStream(
  response: Dispatcher.ResponseData,
  res: Response,
  signal: AbortSignal,
  upstream: ServicePool,
  options: ProxyOptions,
): Promise<void> {
  res.status(response.statusCode);
  // No compression and no buffering anywhere on the way (X-Accel-Buffering: nginx-based ingresses).
  setHeaders(res, {
    ...responseHeaders(response.headers, ['content-length', 'content-encoding']),
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
  trackEventStream('gateway', res);
  res.socket?.setNoDelay(true);
  try {
    await copyEventStream(response.body, res, signal);
  } catch (error) {
    if (signal.aborted) throw error;
    // The service failed mid-stream (crashed, connection lost): the client learns it from a last event.
    log(res, options, upstream).error({ err: error }, 'the service failed in the middle of an event stream');
    res.write(formatSse('error', midStreamFailure(upstream)));
  }
  res.end();
}

async function relayError(
  response: Dispatcher.ResponseData,
  res: Response,
  upstream: ServicePool,
  options: ProxyOptions,
  browserPage: boolean,
): Promise<void> {
  const { statusCode, headers } = response;
  const bytes = await readBounded(response.body, MAX_ERROR_BODY_BYTES, options.idleTimeoutMs);
  const contentType = typeof headers['content-type'] === 'string' ? headers['content-type'] : undefined;
  const encoded = headers['content-encoding'] !== undefined && headers['content-encoding'] !== 'identity';
  // A portal page saying "not found" or "refused" to a browser is the portal's own HTML, not a leaked internal
  // error page: 4xx HTML pages pass (5xx and 401 are still replaced).
  const portalPage =
    browserPage && statusCode < 500 && statusCode !== 401 && bytes !== undefined && /^text\/html\b/i.test(contentType ?? '');
  if (!encoded && (portalPage || isPassableErrorBody(statusCode, bytes, contentType))) {
    res.status(statusCode);
    setHeaders(res, responseHeaders(headers, ['content-length']));
    res.end(bytes);
    return;
  }
  const replacement = normalisedError(upstream, statusCode);
  const level = statusCode === 401 || statusCode >= 500 ? 'error' : 'warn';
  log(res, options, upstream)[level](
    { status: statusCode, sent: replacement.status_code, body: bytes?.subarray(0, 2048).toString('utf8') },
    statusCode === 401
      ? "the service refused the gateway's identity signature: is INTERNAL_SIGNING_SECRET the same everywhere, and do the clocks agree?"
      : "the service answered an error without the spec's error body; replaced",
  );
  res.status(replacement.status_code);
  setHeaders(res, responseHeaders(headers, ['content-length', 'content-type', 'content-encoding', 'etag', 'last-modified']));
  res.json(replacement);
}
