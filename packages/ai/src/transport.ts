// The Anthropic SDK's HTTP transport: a `fetch` on node:http and node:https with keep-alive agents, in place of
// the SDK's default (undici's fetch). An open model stream is held for as long as a chat or analysis reply
// streams to its client, so what the transport keeps per stream is memory per open stream: undici's fetch keeps
// about 43 KB of heap per open SDK stream (its Request and Response with their web streams and header lists,
// the request body, the fetch controller), this transport about 15 KB less (docs/benchmarks.md, chat-stream).
//
// What the SDK sends goes through here: a string or bytes body, headers, an abort signal (the SDK's timeout and
// the caller's cancellation). Anything else (a streamed body, a Request object) goes to the platform's fetch.
// The contract the SDK relies on is kept: an aborted call rejects, and an aborted response body errors, with
// the signal's reason (an AbortError); a connection failure rejects with a TypeError whose cause is the
// socket's error, as fetch does; the response is a standard Response with a web ReadableStream body.
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';

export interface HttpFetch {
  fetch: typeof globalThis.fetch;
  /** Closes the idle keep-alive connections (at shutdown). */
  close(): void;
}

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/** The body as bytes or text, or undefined for a body this transport does not send itself. */
function plainBody(body: RequestInit['body']): string | Uint8Array | null | undefined {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  return undefined;
}

function outgoingHeaders(headers: RequestInit['headers'], body: string | Uint8Array | null): Record<string, string> {
  const out: Record<string, string> = {};
  new Headers(headers).forEach((value, name) => {
    out[name] = value;
  });
  if (body !== null && out['content-length'] === undefined) out['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
  if (typeof body === 'string' && out['content-type'] === undefined) out['content-type'] = 'text/plain;charset=UTF-8';
  return out;
}

function responseHeaders(raw: readonly string[]): Headers {
  const headers = new Headers();
  for (let index = 0; index + 1 < raw.length; index += 2) headers.append(raw[index] as string, raw[index + 1] as string);
  return headers;
}

/** Undoes a Content-Encoding the server applied (none is asked for; a server may still send one). */
function decoded(response: http.IncomingMessage): Readable {
  const encoding = response.headers['content-encoding']?.trim().toLowerCase();
  if (encoding === 'gzip' || encoding === 'x-gzip') return response.pipe(zlib.createGunzip());
  if (encoding === 'deflate') return response.pipe(zlib.createInflate());
  if (encoding === 'br') return response.pipe(zlib.createBrotliDecompress());
  return response;
}

/**
 * The response body as a web stream, read from the socket only as fast as the SDK reads it. Cancelling it (the
 * SDK stops reading) or an abort destroys the request, so the connection is not reused half-read.
 */
function webBody(source: Readable, request: http.ClientRequest, signal: AbortSignal | undefined): ReadableStream<Uint8Array> {
  let finished = false;
  let onAbort: (() => void) | undefined;
  const detach = () => {
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
  };
  const finish = (controller: ReadableStreamDefaultController<Uint8Array>, error?: unknown) => {
    if (finished) return;
    finished = true;
    detach();
    if (error === undefined) controller.close();
    else controller.error(error);
  };
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        source.on('data', (chunk: Buffer) => {
          if (finished) return;
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 0) <= 0) source.pause();
        });
        source.once('end', () => finish(controller));
        source.once('error', (error) => finish(controller, error));
        // The connection closed before the end of the body (fetch reports this as "terminated").
        source.once('close', () => {
          if (!source.readableEnded) finish(controller, new TypeError('terminated', { cause: new Error('the connection closed before the response ended') }));
        });
        if (signal) {
          onAbort = () => {
            finish(controller, abortReason(signal));
            request.destroy();
          };
          signal.addEventListener('abort', onAbort, { once: true });
        }
      },
      pull() {
        source.resume();
      },
      cancel() {
        finished = true;
        detach();
        request.destroy();
      },
    },
    { highWaterMark: 1 },
  );
}

/** The Response to `request`: settles once its headers arrive, the connection fails, or `signal` aborts. */
function responseTo(request: http.ClientRequest, signal: AbortSignal | undefined, head: boolean): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    let settled = false;
    const onAbort = () => {
      if (settled || signal === undefined) return;
      settled = true;
      reject(abortReason(signal));
      request.destroy();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    request.once('error', (error) => {
      signal?.removeEventListener('abort', onAbort);
      if (settled) return;
      settled = true;
      reject(new TypeError('fetch failed', { cause: error }));
    });
    request.once('response', (response) => {
      signal?.removeEventListener('abort', onAbort);
      if (settled) {
        response.destroy();
        return;
      }
      settled = true;
      const status = response.statusCode ?? 0;
      const headers = responseHeaders(response.rawHeaders);
      if (NULL_BODY_STATUSES.has(status) || head) {
        response.resume();
        resolve(new Response(null, { status, statusText: response.statusMessage ?? '', headers }));
        return;
      }
      resolve(new Response(webBody(decoded(response), request, signal), { status, statusText: response.statusMessage ?? '', headers }));
    });
  });
}

export function createHttpFetch(): HttpFetch {
  const agents = {
    'http:': new http.Agent({ keepAlive: true }),
    'https:': new https.Agent({ keepAlive: true }),
  };

  // No closure in here refers to the body: an open stream must not keep its request body alive.
  const fetchOverHttp = (input: Parameters<typeof fetch>[0], init: RequestInit = {}): Promise<Response> => {
    const body = plainBody(init.body);
    const url = typeof input === 'string' ? new URL(input) : input instanceof URL ? input : undefined;
    if (url === undefined || body === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) return fetch(input, init);
    const signal = init.signal ?? undefined;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const method = init.method ?? 'GET';
    const request = (url.protocol === 'https:' ? https : http).request(url, { method, headers: outgoingHeaders(init.headers, body), agent: agents[url.protocol] });
    const response = responseTo(request, signal, method === 'HEAD');
    request.end(body ?? undefined);
    return response;
  };

  return {
    fetch: fetchOverHttp as typeof globalThis.fetch,
    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}
