// The Anthropic SDK's HTTP transport: a `fetch` on node:http and node:https with keep-alive agents, in place of
// the SDK's default (undici's fetch). An open model stream is held for as long as a chat or analysis reply
// streams to its client, so what the transport keeps per stream is memory per open stream (docs/benchmarks.md,
// chat-stream): undici's fetch kept about 47 KB of heap per open SDK MessageStream (its Request and Response with
// their web streams and header lists, the request body, the fetch controller). This transport keeps the node:http
// request and response and a small body reader, about 8 KB per open stream:
//
// - the request's headers go to node:http as a flat list, so the ClientRequest keeps no header map of its own;
// - a streamed body is not a web ReadableStream (with its controller, queue, reader and read requests) but a
//   `ResponseBody`: an async iterable over the node:http response, which is what the SDK reads a body as. It
//   turns itself into a web ReadableStream (getReader, pipeTo, …) for a consumer that asks for one.
//
// What the SDK sends goes through here: a string or bytes body, headers, an abort signal (the SDK's timeout and
// the caller's cancellation). Anything else (a streamed body, a Request object) goes to the platform's fetch.
// The contract the SDK relies on is kept: an aborted call rejects, and an aborted response body errors, with
// the signal's reason (an AbortError); a connection failure rejects with a TypeError whose cause is the
// socket's error, as fetch does; the response is a Response (status, headers, text(), json(), …) whose body
// yields Uint8Array chunks as they arrive.
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

/**
 * What an aborted call rejects with: the signal's reason, as fetch does. The signals that reach here carry an
 * Error (the SDK aborts its own controller without a reason, which makes the reason an AbortError; the market-data
 * provider's timeout and its callers abort with Errors); a reason that is not one is reported as an AbortError.
 */
function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException('This operation was aborted', 'AbortError');
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

/**
 * The request's headers as node:http's flat list [name, value, …], Host first as node:http would add it. Given a
 * list, node:http writes the head straight from it and keeps no header map on the request for its lifetime.
 */
function outgoingHeaders(url: URL, headers: RequestInit['headers'], body: string | Uint8Array | null): string[] {
  const out: string[] = [];
  const given = new Headers(headers);
  if (!given.has('host')) out.push('host', url.host);
  given.forEach((value, name) => out.push(name, value));
  if (body !== null && !given.has('content-length'))
    out.push('content-length', String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength));
  if (typeof body === 'string' && !given.has('content-type')) out.push('content-type', 'text/plain;charset=UTF-8');
  return out;
}

function responseHeaders(raw: readonly string[]): Headers {
  const headers = new Headers();
  for (let index = 0; index + 1 < raw.length; index += 2) headers.append(raw[index] as string, raw[index + 1] as string);
  return headers;
}

/** Undoes a Content-Encoding the server applied (none is asked for; a server may still send one). */
function decoded(response: http.IncomingMessage, contentEncoding: string | null): Readable {
  const encoding = contentEncoding?.trim().toLowerCase();
  if (encoding === 'gzip' || encoding === 'x-gzip') return response.pipe(zlib.createGunzip());
  if (encoding === 'deflate') return response.pipe(zlib.createInflate());
  if (encoding === 'br') return response.pipe(zlib.createBrotliDecompress());
  return response;
}

type Settled = { kind: 'open' } | { kind: 'ended' } | { kind: 'failed'; error: Error };

/**
 * A response body read from the socket only as fast as it is consumed: one chunk at a time (the source is paused
 * while a chunk waits). Iterating it is reading it; `return()` (a consumer that stops) or an abort destroys the
 * request, so the connection is not reused half-read. Errors as fetch's body does: with the abort reason, or a
 * TypeError "terminated" when the connection closes before the end.
 */
export class ResponseBody implements AsyncIterableIterator<Uint8Array> {
  #source: Readable | undefined;
  #request: http.ClientRequest | undefined;
  #signal: AbortSignal | undefined;
  #chunk: Uint8Array | undefined;
  #state: Settled = { kind: 'open' };
  #waiting: { resolve: (result: IteratorResult<Uint8Array>) => void; reject: (error: Error) => void } | undefined;
  #used = false;
  #stream: ReadableStream<Uint8Array> | undefined;
  // The listeners, made once in the constructor so that they can be removed by reference when the body settles.
  readonly #onData: (chunk: Buffer) => void;
  readonly #onEnd: () => void;
  readonly #onError: (error: Error) => void;
  readonly #onClose: () => void;
  readonly #onAbort: (() => void) | undefined;

  constructor(source: Readable, request: http.ClientRequest, signal: AbortSignal | undefined) {
    this.#source = source;
    this.#request = request;
    this.#signal = signal;
    this.#onData = (chunk) => this.#push(chunk);
    this.#onEnd = () => this.#settle({ kind: 'ended' });
    this.#onError = (error) => this.#settle({ kind: 'failed', error });
    // The connection closed before the end of the body (fetch reports this as "terminated").
    this.#onClose = () => {
      if (!source.readableEnded)
        this.#settle({
          kind: 'failed',
          error: new TypeError('terminated', { cause: new Error('the connection closed before the response ended') }),
        });
    };
    source.on('data', this.#onData);
    source.once('end', this.#onEnd);
    source.once('error', this.#onError);
    source.once('close', this.#onClose);
    if (signal !== undefined) {
      this.#onAbort = () => {
        this.#settle({ kind: 'failed', error: abortReason(signal) });
        request.destroy();
      };
      signal.addEventListener('abort', this.#onAbort, { once: true });
    }
  }

  /** Whether reading has begun (fetch's bodyUsed). */
  get used(): boolean {
    return this.#used;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<Uint8Array>> {
    this.#used = true;
    const chunk = this.#chunk;
    if (chunk !== undefined) {
      this.#chunk = undefined;
      this.#source?.resume();
      return Promise.resolve({ done: false, value: chunk });
    }
    if (this.#state.kind === 'ended') return Promise.resolve({ done: true, value: undefined });
    if (this.#state.kind === 'failed') return Promise.reject(this.#state.error);
    if (this.#waiting !== undefined) return Promise.reject(new TypeError('the body is already being read'));
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
    });
  }

  /** The consumer stops reading: the rest of the body is not wanted, and the connection is closed. */
  return(): Promise<IteratorResult<Uint8Array>> {
    this.#used = true;
    this.#chunk = undefined;
    if (this.#state.kind === 'open') {
      const request = this.#request;
      this.#settle({ kind: 'ended' });
      request?.destroy();
    }
    return Promise.resolve({ done: true, value: undefined });
  }

  /** As ReadableStream.cancel. */
  async cancel(): Promise<void> {
    await this.return();
  }

  /** The body as a web ReadableStream, for a consumer that needs one (made once, on demand). */
  stream(): ReadableStream<Uint8Array> {
    this.#stream ??= new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          const read = await this.next();
          if (read.done) controller.close();
          else controller.enqueue(read.value);
        },
        cancel: () => this.cancel(),
      },
      { highWaterMark: 0 },
    );
    return this.#stream;
  }

  getReader(): ReadableStreamDefaultReader<Uint8Array> {
    return this.stream().getReader();
  }

  /** The whole (rest of the) body. */
  async bytes(): Promise<Uint8Array<ArrayBuffer>> {
    const chunks: Uint8Array[] = [];
    for await (const chunk of this) chunks.push(chunk);
    const out = new Uint8Array(chunks.reduce((size, chunk) => size + chunk.byteLength, 0));
    let offset = 0;
    for (const chunk of chunks) {
      out.set(chunk, offset);
      offset += chunk.byteLength;
    }
    return out;
  }

  /** A chunk goes to the reader waiting for one, or waits (the source paused) until it is read. */
  #push(chunk: Buffer): void {
    if (this.#state.kind !== 'open') return;
    const value = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const waiting = this.#waiting;
    if (waiting !== undefined) {
      this.#waiting = undefined;
      waiting.resolve({ done: false, value });
      return;
    }
    this.#chunk = value;
    this.#source?.pause();
  }

  /**
   * The body ends (a chunk already read stays readable). The error listener stays: an error after the end (the
   * request destroyed) must not go unhandled.
   */
  #settle(state: Settled): void {
    if (this.#state.kind !== 'open') return;
    this.#state = state;
    const source = this.#source;
    source?.off('data', this.#onData);
    source?.off('end', this.#onEnd);
    source?.off('close', this.#onClose);
    if (this.#onAbort !== undefined) this.#signal?.removeEventListener('abort', this.#onAbort);
    this.#source = undefined;
    this.#request = undefined;
    this.#signal = undefined;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting === undefined) return;
    if (state.kind === 'failed') waiting.reject(state.error);
    else waiting.resolve({ done: true, value: undefined });
  }
}

/**
 * A Response whose body is a ResponseBody. `body` gives the ResponseBody itself (async iterable, as the SDK reads
 * it; getReader() and cancel() as on a web stream), and text(), json(), arrayBuffer(), bytes() and blob() read it.
 */
// Response's members are declared as properties: typed as a plain base so that the accessors can replace them.
const ResponseBase = Response as unknown as new (body: null, init: ResponseInit) => Pick<Response, 'headers'>;

class StreamedResponse extends ResponseBase {
  readonly #body: ResponseBody;

  constructor(body: ResponseBody, init: ResponseInit) {
    super(null, init);
    this.#body = body;
  }

  get body(): ReadableStream<Uint8Array<ArrayBuffer>> {
    return this.#body as unknown as ReadableStream<Uint8Array<ArrayBuffer>>;
  }

  get bodyUsed(): boolean {
    return this.#body.used;
  }

  async bytes(): Promise<Uint8Array<ArrayBuffer>> {
    if (this.#body.used) throw new TypeError('Body is unusable: Body has already been read');
    return this.#body.bytes();
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return (await this.bytes()).buffer;
  }

  async text(): Promise<string> {
    return new TextDecoder().decode(await this.bytes());
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text()) as unknown;
  }

  async blob(): Promise<Blob> {
    return new Blob([await this.bytes()], { type: this.headers.get('content-type') ?? '' });
  }

  clone(): Response {
    throw new TypeError('A streamed response of the node:http transport cannot be cloned.');
  }
}

/** The request's errors once its response has come: the response body reports the failures that matter. */
function ignoreLateError(): void {}

/**
 * The Response to `request`: settles once its headers arrive, the connection fails, or `signal` aborts. Nothing
 * made here outlives the settling: a streamed body can stay open for minutes.
 */
function responseTo(request: http.ClientRequest, signal: AbortSignal | undefined, head: boolean): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    let settled = false;
    const onAbort = () => {
      if (settled || signal === undefined) return;
      settled = true;
      reject(abortReason(signal));
      request.destroy();
    };
    const onError = (error: Error) => {
      signal?.removeEventListener('abort', onAbort);
      if (settled) return;
      settled = true;
      reject(new TypeError('fetch failed', { cause: error }));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    request.once('error', onError);
    request.once('response', (response) => {
      signal?.removeEventListener('abort', onAbort);
      request.off('error', onError);
      request.on('error', ignoreLateError);
      if (settled) {
        response.destroy();
        return;
      }
      settled = true;
      const status = response.statusCode ?? 0;
      const headers = responseHeaders(response.rawHeaders);
      const init = { status, statusText: response.statusMessage ?? '', headers };
      if (NULL_BODY_STATUSES.has(status) || head) {
        response.resume();
        resolve(new Response(null, init));
        return;
      }
      resolve(
        new StreamedResponse(
          new ResponseBody(decoded(response, headers.get('content-encoding')), request, signal),
          init,
        ) as unknown as Response,
      );
    });
  });
}

/**
 * node:http builds the request's head by appending to a string, and keeps it (ClientRequest._header) for as long as
 * the response lasts: a tree of a few hundred string pieces, about twice its length in memory. Once the head has
 * been handed over for sending, the same text is kept as one flat string instead. (Node-internal field: when it is
 * not a string, nothing is done.)
 */
function flattenHead(request: http.ClientRequest): void {
  const holder = request as unknown as { _header?: unknown };
  if (typeof holder._header === 'string') holder._header = Buffer.from(holder._header, 'latin1').toString('latin1');
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
    const headers = outgoingHeaders(url, init.headers, body);
    const request = (url.protocol === 'https:' ? https : http).request({
      protocol: url.protocol,
      hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
      port: url.port,
      path: `${url.pathname}${url.search}`,
      method,
      headers,
      agent: agents[url.protocol],
    });
    // The head is written (request._header) once the request is made. The agent keeps these options for as long as
    // the connection lives (kept alive, for more requests than this one): without the header list.
    headers.length = 0;
    const response = responseTo(request, signal, method === 'HEAD');
    request.end(body ?? undefined);
    flattenHead(request);
    return response;
  };

  return {
    fetch: fetchOverHttp,
    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}
