// Calls a customer's API on the model's behalf without letting the call reach anything but the public internet.
//
// The address check lives in the undici Agent's `connect` hook: the host is resolved there, every address it
// resolves to must be public (isAllowedAddress), and the socket is opened to exactly the address that was checked
// (TLS still verifies the certificate against the host name). There is no second resolution between check and
// connect, so DNS rebinding has no window; the connected socket's peer address is checked once more. IP literals
// in any spelling (decimal 2130706433, octal, hex, IPv4-mapped IPv6) are normalised by the URL parser and checked
// the same way. Redirects are never followed: a 3xx answer is reported to the model as a failure, so a public
// endpoint cannot bounce the call to an internal one. Every call has a time limit and a response-size cap, and
// ends in a CallResult (never a throw, never a hang).
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { type CustomerToolCallOutcome } from '@fin/contracts';
import { Agent, buildConnector, errors as undiciErrors, type Dispatcher } from 'undici';
import { bareAddress, isAllowedAddress, isLoopbackHost } from './address';

export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
const USER_AGENT = 'FinancialIntelligenceAPI-CustomerTools/1.0';
/** Host names whose resolution is kept at once (with resolutionTtlMs). */
const MAX_CACHED_RESOLUTIONS = 10_000;

/** How a call ended (the contract's outcomes). `ok`: a 2xx answer read in full; `http_error`: a 4xx/5xx answer read in full. */
export type CallOutcome = CustomerToolCallOutcome;

export interface ToolRequest {
  endpoint: string;
  method: 'GET' | 'POST';
  /** The tool's configured headers (decrypted); sent, never logged or recorded. */
  headers: Readonly<Record<string, string>>;
  /** The arguments: query parameters for GET, a JSON body for POST. */
  input: Readonly<Record<string, unknown>>;
  /** A POST body sent byte for byte instead of `input` as JSON: a webhook delivery, whose signature covers it. */
  body?: string;
  timeoutMs: number;
}

export interface CallResult {
  outcome: CallOutcome;
  httpStatus: number | null;
  durationMs: number;
  /** Response body bytes received (up to the cap). */
  responseBytes: number;
  contentType: string | null;
  /** The response body as text when it was read in full (ok and http_error), else null. */
  body: string | null;
  /** A short, secret-free reason when the outcome is not `ok`, fit for the model, the audit and the portal. */
  error: string | null;
}

export interface ExecutorOptions {
  /** Tests only: allow 127.0.0.0/8 and ::1 (see AddressPolicy). Default false. */
  allowLoopback?: boolean;
  /**
   * Development only: plain http:// to a loopback host (`localhost`, 127.0.0.0/8, ::1) is allowed; needs
   * allowLoopback too. The webhook sender sets it under WEBHOOK_ALLOW_LOCAL_HTTP. Default false.
   */
  allowLocalHttp?: boolean;
  /** Largest response body read; the call is cut off beyond it. Default 1 MiB. */
  maxResponseBytes?: number;
  /** Resolves a host name to its addresses. Default: the system resolver (all addresses). Injected by tests. */
  resolve?: (hostname: string) => Promise<string[]>;
  /** Extra trusted CA certificates (PEM), replacing the defaults; tests with a self-signed fake API use it. */
  ca?: string | Buffer;
  /**
   * Connections kept to one origin; calls beyond wait for one. Default 16. The webhook sender raises it, so that
   * one account's hanging endpoint cannot take every connection to a host that other accounts' endpoints share.
   */
  connectionsPerOrigin?: number;
  /**
   * How long a host's checked addresses are reused (default 0: resolved for every connection). The webhook sender
   * sets it so that the address it counts an attempt against (destination) is the one the attempt connects to;
   * a connection is then also closed after this long, so none outlives the answer it was opened with by more.
   */
  resolutionTtlMs?: number;
}

export interface ToolExecutor {
  call(request: ToolRequest, options?: { signal?: AbortSignal }): Promise<CallResult>;
  /**
   * The address a call to `endpoint` would connect to now (its host's first checked answer, or the IP literal), or
   * null when it would not connect (not a URL, unresolved, not public). Never throws.
   */
  destination(endpoint: string): Promise<string | null>;
  close(): Promise<void>;
}

/** Raised inside the connect hook when the target is not a public address; nothing was connected. */
class BlockedAddressError extends Error {
  readonly code = 'FIN_BLOCKED_ADDRESS';
  constructor(readonly host: string) {
    super(`${host} is not a public address`);
    this.name = 'BlockedAddressError';
  }
}

class UnresolvedHostError extends Error {
  readonly code = 'FIN_UNRESOLVED_HOST';
}

async function systemResolve(hostname: string): Promise<string[]> {
  const answers = await lookup(hostname, { all: true, order: 'verbatim' });
  return answers.map((answer) => answer.address);
}

/** The error and its causes. Duck-typed: errors from Node's core may come from another realm (Jest's VM). */
function* causes(error: unknown): Generator<{ code?: unknown; cause?: unknown }> {
  let current: unknown = error;
  for (let depth = 0; typeof current === 'object' && current !== null && depth < 5; depth++) {
    const link = current as { code?: unknown; cause?: unknown };
    yield link;
    current = link.cause;
  }
}

function findCause<T extends Error>(error: unknown, type: new (...args: never[]) => T): T | undefined {
  for (const link of causes(error)) if (link instanceof type) return link;
  return undefined;
}

/** A system or TLS error code (ECONNREFUSED, DEPTH_ZERO_SELF_SIGNED_CERT): safe to show, and says what failed. */
function errorCode(error: unknown): string | undefined {
  for (const { code } of causes(error)) {
    if (typeof code === 'string' && /^[A-Z0-9_]{2,64}$/.test(code) && !code.startsWith('UND_ERR_')) return code;
  }
  return undefined;
}

/** The URL the call goes to: GET carries the arguments as query parameters (objects as JSON). */
function targetUrl(request: ToolRequest, allowLocalHttp: boolean): URL | string {
  let url: URL;
  try {
    url = new URL(request.endpoint);
  } catch {
    return 'the endpoint is not a valid URL';
  }
  const localHttp = allowLocalHttp && url.protocol === 'http:' && isLoopbackHost(url.hostname);
  if (url.protocol !== 'https:' && !localHttp) return 'the endpoint must be an https:// URL';
  if (url.username !== '' || url.password !== '') return 'the endpoint must not contain credentials';
  if (request.method === 'GET') {
    for (const [name, value] of Object.entries(request.input)) {
      for (const item of Array.isArray(value) ? (value as unknown[]) : [value]) {
        if (item === undefined || item === null) continue;
        // A JSON value from the model: text as it is, numbers, booleans and objects in their JSON form.
        url.searchParams.append(name, typeof item === 'string' ? item : JSON.stringify(item));
      }
    }
  }
  return url;
}

export function createToolExecutor(options: ExecutorOptions = {}): ToolExecutor {
  const {
    allowLoopback = false,
    allowLocalHttp = false,
    maxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES,
    resolve = systemResolve,
    ca,
    connectionsPerOrigin = 16,
    resolutionTtlMs = 0,
  } = options;
  const policy = { allowLoopback };
  const baseConnect = buildConnector({ ...(ca === undefined ? {} : { ca }), rejectUnauthorized: true });
  const resolutions = new Map<string, { address: Promise<string>; expires: number }>();

  /** The checked address of `host` to connect to (an IP literal as it is); rejects when it has none or one is not public. */
  function checkedAddress(host: string): Promise<string> {
    if (isIP(host) !== 0) return isAllowedAddress(host, policy) ? Promise.resolve(host) : Promise.reject(new BlockedAddressError(host));
    const now = Date.now();
    const cached = resolutions.get(host);
    if (cached !== undefined && cached.expires > now) return cached.address;
    const address = resolve(host).then((resolved) => {
      if (resolved.length === 0) throw new UnresolvedHostError(`${host} did not resolve`);
      // One non-public answer refuses the host: a name that mixes public and internal addresses is an attack.
      if (!resolved.every((candidate) => isAllowedAddress(candidate, policy))) throw new BlockedAddressError(host);
      return resolved[0] as string;
    });
    if (resolutionTtlMs > 0) {
      resolutions.delete(host);
      // Bounded: the oldest entry goes first (a Map iterates in insertion order).
      if (resolutions.size >= MAX_CACHED_RESOLUTIONS) resolutions.delete(resolutions.keys().next().value as string);
      resolutions.set(host, { address, expires: now + resolutionTtlMs });
      // A failure is not kept: the next call asks again.
      address.catch(() => {
        if (resolutions.get(host)?.address === address) resolutions.delete(host);
      });
    }
    return address;
  }

  /** Resolve, check every address, connect to the checked one, check the peer again. */
  const connect: buildConnector.connector = (connectOptions, callback) => {
    const host = bareAddress(connectOptions.hostname);
    checkedAddress(host)
      .then((address) => {
        baseConnect({ ...connectOptions, hostname: address, servername: isIP(host) === 0 ? host : '' }, (error, socket) => {
          if (error !== null) {
            callback(error, null);
          } else if (socket.remoteAddress !== undefined && !isAllowedAddress(socket.remoteAddress, policy)) {
            socket.destroy();
            callback(new BlockedAddressError(host), null);
          } else {
            callback(null, socket);
          }
        });
      })
      .catch((error: unknown) => callback(error as Error, null));
  };

  const agent = new Agent({
    connect,
    keepAliveTimeout: 4_000,
    connections: connectionsPerOrigin,
    ...(resolutionTtlMs > 0 ? { clientTtl: resolutionTtlMs } : {}),
  });

  async function destination(endpoint: string): Promise<string | null> {
    try {
      return await checkedAddress(bareAddress(new URL(endpoint).hostname));
    } catch {
      return null;
    }
  }

  async function call(request: ToolRequest, { signal }: { signal?: AbortSignal } = {}): Promise<CallResult> {
    const started = performance.now();
    const result = (outcome: CallOutcome, fields: Partial<CallResult> = {}): CallResult => ({
      outcome,
      httpStatus: null,
      responseBytes: 0,
      contentType: null,
      body: null,
      error: null,
      ...fields,
      durationMs: Math.round(performance.now() - started),
    });
    const url = targetUrl(request, allowLocalHttp && allowLoopback);
    if (typeof url === 'string') return result('invalid_endpoint', { error: url });

    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new Error('timeout')), request.timeoutMs);
    const combined = signal === undefined ? timeout.signal : AbortSignal.any([signal, timeout.signal]);
    const ended = (error: unknown, fields: Partial<CallResult> = {}): CallResult => {
      if (timeout.signal.aborted) return result('timeout', { ...fields, error: `no complete answer within ${request.timeoutMs} ms` });
      if (signal?.aborted) return result('aborted', { ...fields, error: 'the run was aborted' });
      if (findCause(error, BlockedAddressError)) {
        return result('blocked_address', {
          error: 'the endpoint does not resolve to a public internet address; only public addresses can be called',
        });
      }
      if (findCause(error, UnresolvedHostError) || errorCode(error) === 'ENOTFOUND')
        return result('connection_failed', { error: 'the endpoint host name could not be resolved' });
      if (error instanceof undiciErrors.HeadersTimeoutError || error instanceof undiciErrors.BodyTimeoutError) {
        return result('timeout', { ...fields, error: `no complete answer within ${request.timeoutMs} ms` });
      }
      const code = errorCode(error);
      return result('connection_failed', {
        ...fields,
        error: code === undefined ? 'the connection to the endpoint failed' : `the connection to the endpoint failed (${code})`,
      });
    };

    let response: Dispatcher.ResponseData;
    try {
      response = await agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: request.method,
        headers: {
          'user-agent': USER_AGENT,
          accept: 'application/json, text/plain;q=0.9, */*;q=0.1',
          ...(request.method === 'POST' ? { 'content-type': 'application/json' } : {}),
          ...request.headers,
        },
        body: request.method === 'POST' ? (request.body ?? JSON.stringify(request.input)) : null,
        signal: combined,
        headersTimeout: request.timeoutMs,
        bodyTimeout: request.timeoutMs,
      });
    } catch (error) {
      clearTimeout(timer);
      return ended(error);
    }

    const { statusCode, body } = response;
    // Destroying a body we stop reading emits an abort error; the outcome is decided here, not by that event.
    body.on('error', () => undefined);
    const rawType = response.headers['content-type'];
    const contentType = typeof rawType === 'string' ? rawType.slice(0, 200) : null;
    if (statusCode >= 300 && statusCode < 400) {
      clearTimeout(timer);
      body.destroy();
      return result('redirect_refused', {
        httpStatus: statusCode,
        contentType,
        error: `the endpoint answered with a redirect (HTTP ${statusCode}); redirects are not followed`,
      });
    }
    const chunks: Buffer[] = [];
    let bytes = 0;
    try {
      for await (const chunk of body as AsyncIterable<Buffer>) {
        bytes += chunk.length;
        if (bytes > maxResponseBytes) {
          body.destroy();
          return result('response_too_large', {
            httpStatus: statusCode,
            contentType,
            responseBytes: maxResponseBytes,
            error: `the response exceeded ${maxResponseBytes} bytes and was cut off`,
          });
        }
        chunks.push(chunk);
      }
    } catch (error) {
      body.destroy();
      return ended(error, { httpStatus: statusCode, contentType, responseBytes: bytes });
    } finally {
      clearTimeout(timer);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    if (statusCode >= 200 && statusCode < 300)
      return result('ok', { httpStatus: statusCode, contentType, responseBytes: bytes, body: text });
    return result('http_error', {
      httpStatus: statusCode,
      contentType,
      responseBytes: bytes,
      body: text,
      error: `the endpoint answered HTTP ${statusCode}`,
    });
  }

  return {
    call,
    destination,
    close: () => agent.close(),
  };
}
