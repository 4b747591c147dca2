// A fetch answered by a request listener of this process (an express app) without a socket or an HTTP parser: the
// WHATWG Request becomes a real http.IncomingMessage and its http.ServerResponse is answered as the listener writes
// it, so the app runs exactly as for a network request (its middleware, its error translator, its 'close' and
// 'finish' events) while nothing is ever serialised as HTTP and parsed back. The response's status and headers are
// read through its header API when the head is committed, and only body bytes reach the in-memory socket.
//
// What a socket gives the app is kept: the body streams both ways with back-pressure (the request's body is pushed as
// the app reads it; a write returns false, and 'drain' follows, as the reader of the Response's body falls behind);
// the fetch's AbortSignal, or the reader cancelling the body, closes the request as a client disconnect does
// (the request is destroyed as 'aborted', then the response emits 'close' unfinished); a response the app destroys
// ends the fetch with a network error, as undici reports one.
//
// Not a general HTTP client: one origin, no redirects followed (a 3xx is answered as it is), no compression asked
// for, and nothing of the network's limits (timeouts are the caller's signal).
import { IncomingMessage, ServerResponse, type OutgoingHttpHeader, type OutgoingHttpHeaders, type RequestListener } from 'node:http';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';

export interface InMemoryFetchOptions {
  /** The origin the fetch answers, e.g. the server's http://127.0.0.1:8080; a request for another is refused. */
  origin: string;
  /** The peer the app sees (req.socket.remoteAddress). Default 127.0.0.1, as for a request over loopback. */
  remoteAddress?: string;
}

/** Response bodies a fetch never has (the Response constructor refuses one for these statuses). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);
/** Response headers about the connection, which the fetch has none of. */
const CONNECTION_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding']);
/** How much of the response's body waits for its reader before the app's writes return false. */
const RESPONSE_BUFFER_BYTES = 64 * 1024;

/** The socket the app sees: its addresses, and the body bytes the response writes (only those: see writeHead). */
class InMemorySocket extends Duplex {
  readonly remotePort = 0;
  readonly remoteFamily: string;
  readonly localAddress: string;
  readonly localPort: number;
  /** Where the response's body bytes go; `done` once they are taken (back-pressure). */
  sink: (chunk: Uint8Array, done: () => void) => void = (_chunk, done) => done();

  constructor(
    readonly remoteAddress: string,
    origin: URL,
  ) {
    // Strings as written: they are turned into bytes of their own (a Buffer the app may reuse is copied).
    super({ decodeStrings: false });
    this.remoteFamily = remoteAddress.includes(':') ? 'IPv6' : 'IPv4';
    this.localAddress = origin.hostname;
    this.localPort = Number(origin.port || (origin.protocol === 'https:' ? 443 : 80));
  }

  override _read(): void {
    // The request's body is pushed to the IncomingMessage itself; nothing is ever read from here.
  }

  override _write(chunk: Buffer | string, encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.sink(typeof chunk === 'string' ? Buffer.from(chunk, encoding) : new Uint8Array(chunk), callback);
  }

  address(): { address: string; family: string; port: number } {
    return { address: this.localAddress, family: this.remoteFamily, port: this.localPort };
  }

  // What apps call on a net.Socket: network settings, which mean nothing here.
  setTimeout(): this {
    return this;
  }
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
}

/** What the HTTP parser hands a new request, and the response's own record of its head (Node's, not typed). */
interface NodeInternals {
  _addHeaderLines(headers: string[], count: number): void;
  _headerSent: boolean;
  _flush(): void;
}

/** The byte length of a body given to fetch, when it is known before it is read (a stream's is not). */
function knownLength(body: unknown): number | undefined {
  if (body === undefined || body === null) return 0;
  if (typeof body === 'string') return Buffer.byteLength(body);
  if (body instanceof URLSearchParams) return Buffer.byteLength(body.toString());
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return body.byteLength;
  if (body instanceof Blob) return body.size;
  return undefined;
}

/** An error of the kind undici rejects fetch with when the connection fails ("fetch failed", with its cause). */
function networkError(message: string, cause?: unknown): TypeError {
  return new TypeError(message, cause === undefined ? undefined : { cause });
}

/** What an aborted fetch rejects with: the signal's reason (an AbortError unless the caller gave its own). */
function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException('This operation was aborted', 'AbortError');
}

/** What a client disconnect gives the request (Node's server destroys it with this). */
function connectionReset(): Error {
  return Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
}

/** Applies writeHead's headers argument through the header API, as Node does when some were set before. */
function setHeadersFrom(res: ServerResponse, headers: OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined): void {
  if (headers === undefined) return;
  if (!Array.isArray(headers)) {
    for (const [name, value] of Object.entries(headers)) if (name !== '' && value !== undefined) res.setHeader(name, value);
    return;
  }
  const pairs: [string, OutgoingHttpHeader][] = [];
  if (Array.isArray(headers[0])) pairs.push(...(headers as unknown as [string, OutgoingHttpHeader][]));
  else for (let i = 0; i + 1 < headers.length; i += 2) pairs.push([String(headers[i]), headers[i + 1] ?? '']);
  for (const [name] of pairs) res.removeHeader(name);
  for (const [name, value] of pairs) if (name !== '') res.appendHeader(name, typeof value === 'number' ? String(value) : value);
}

function responseHeaders(res: ServerResponse): Headers {
  const headers = new Headers();
  for (const name of res.getHeaderNames()) {
    if (CONNECTION_HEADERS.has(name)) continue;
    const value = res.getHeader(name);
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else if (value !== undefined) headers.append(name, String(value));
  }
  return headers;
}

/**
 * A fetch whose requests are answered by `listener` in this process, as if they had come over a connection from
 * `remoteAddress` to `origin`. See the top of this file for what it keeps of a network request and what it does not.
 */
export function inMemoryFetch(listener: RequestListener, options: InMemoryFetchOptions): typeof fetch {
  const origin = new URL(options.origin);
  const remoteAddress = options.remoteAddress ?? '127.0.0.1';
  return (input, init) => {
    let request: Request;
    try {
      request = new Request(input, init);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : networkError('fetch failed', error));
    }
    const url = new URL(request.url);
    if (url.origin !== origin.origin)
      return Promise.reject(networkError(`fetch failed: this fetch answers ${origin.origin} only, not ${url.origin}`));
    if (request.signal.aborted) return Promise.reject(abortReason(request.signal));
    return dispatch(listener, request, url, new InMemorySocket(remoteAddress, origin), knownLength(init?.body ?? undefined));
  };
}

function dispatch(
  listener: RequestListener,
  request: Request,
  url: URL,
  socket: InMemorySocket,
  length: number | undefined,
): Promise<Response> {
  const { signal } = request;
  const bodySource = request.body?.getReader();

  // The request: its head as the parser would give it (Node's own header joining), its body pushed as it is read.
  const req = new IncomingMessage(socket as unknown as Socket);
  req.method = request.method;
  req.url = `${url.pathname}${url.search}`;
  req.httpVersionMajor = 1;
  req.httpVersionMinor = 1;
  req.httpVersion = '1.1';
  const head: string[] = request.headers.has('host') ? [] : ['host', url.host];
  for (const [name, value] of request.headers) head.push(name, value);
  // The framing undici would send: a length when it is known, chunks otherwise, and 0 for a POST or PUT without a body.
  if (bodySource !== undefined)
    head.push(...(length === undefined ? ['transfer-encoding', 'chunked'] : ['content-length', String(length)]));
  else if (request.method === 'POST' || request.method === 'PUT') head.push('content-length', '0');
  (req as unknown as NodeInternals)._addHeaderLines(head, head.length);

  const res = new ServerResponse(req);
  // The body reaches the socket as written: no chunked framing to take off again (the head never reaches it).
  res.useChunkedEncodingByDefault = false;

  let settle: { resolve: (response: Response) => void; reject: (error: unknown) => void } | undefined;
  const answered = new Promise<Response>((resolve, reject) => (settle = { resolve, reject }));
  let body: ReadableStreamDefaultController<Uint8Array> | undefined;
  let bodyOpen = false;
  let pendingWrite: (() => void) | undefined;
  let finished = false;
  let disconnected = false;
  let cause: unknown;

  const fail = (error: unknown) => {
    if (settle !== undefined) {
      settle.reject(error);
      settle = undefined;
    } else if (bodyOpen) {
      bodyOpen = false;
      body?.error(error);
    }
  };

  /** The client's side goes away (the signal, or the reader cancelling the body): as a closed connection. */
  const disconnect = (reason: unknown) => {
    if (disconnected) return;
    disconnected = true;
    fail(reason);
    void bodySource?.cancel(reason).catch(() => undefined);
    socket.destroy();
  };
  const onAbort = () => disconnect(abortReason(signal));
  signal.addEventListener('abort', onAbort, { once: true });

  // The Response, once the head is known: its body a stream of what the app writes next.
  const commit = () => {
    if (settle === undefined) return;
    const withBody = !NULL_BODY_STATUSES.has(res.statusCode) && request.method !== 'HEAD';
    const stream = withBody
      ? new ReadableStream<Uint8Array>(
          {
            start: (controller) => {
              body = controller;
              bodyOpen = true;
            },
            pull: () => {
              const next = pendingWrite;
              pendingWrite = undefined;
              next?.();
            },
            cancel: (reason) => {
              bodyOpen = false;
              if (!finished) disconnect(reason);
            },
          },
          { highWaterMark: RESPONSE_BUFFER_BYTES, size: (chunk) => chunk.byteLength },
        )
      : null;
    try {
      settle.resolve(new Response(stream, { status: res.statusCode, statusText: res.statusMessage, headers: responseHeaders(res) }));
    } catch (error) {
      // A status a Response cannot have (an informational one as the final answer).
      settle.reject(networkError('fetch failed', error));
    }
    settle = undefined;
  };

  // The head: committed through the header API, then marked sent, so that what the socket receives is the body. An
  // own property, so that it stays when express gives the response its prototype (and wraps, as on-headers does).
  const writeHead = ServerResponse.prototype.writeHead.bind(res);
  Object.defineProperty(res, 'writeHead', {
    configurable: true,
    writable: true,
    value: (
      statusCode: number,
      reason?: string | OutgoingHttpHeaders | OutgoingHttpHeader[],
      headers?: OutgoingHttpHeaders | OutgoingHttpHeader[],
    ): ServerResponse => {
      setHeadersFrom(res, typeof reason === 'string' ? headers : reason);
      if (res.hasHeader('transfer-encoding')) res.removeHeader('transfer-encoding');
      if (typeof reason === 'string') writeHead(statusCode, reason);
      else writeHead(statusCode);
      (res as unknown as NodeInternals)._headerSent = true;
      commit();
      return res;
    },
  });

  socket.sink = (chunk, done) => {
    // Before the head, only informational answers (103 Early Hints) reach the socket: a fetch shows none.
    if (!bodyOpen || body === undefined || chunk.byteLength === 0) {
      done();
      return;
    }
    body.enqueue(chunk);
    if ((body.desiredSize ?? 0) > 0) done();
    else pendingWrite = done;
  };
  // As the server's drain handler does: the response's own 'drain' once the socket took everything.
  socket.on('drain', () => {
    if (!res.writableEnded && res.writableNeedDrain && res.writableLength === 0) (res as unknown as NodeInternals)._flush();
  });
  socket.on('error', (error) => (cause = error));
  // Registered before the response's own listener (assignSocket), so the request is destroyed first, as Node's
  // server does when a connection closes with a response in progress.
  socket.on('close', () => {
    signal.removeEventListener('abort', onAbort);
    if (finished) return;
    if (!req.destroyed) req.destroy(connectionReset());
    if (!disconnected)
      fail(settle !== undefined ? networkError('fetch failed', cause ?? connectionReset()) : networkError('terminated', cause));
  });
  res.assignSocket(socket as unknown as Socket);

  // Once the response is written, as the server does: an unread body is drained, the socket let go, 'close' follows.
  res.once('finish', () => {
    finished = true;
    signal.removeEventListener('abort', onAbort);
    if (bodyOpen) {
      bodyOpen = false;
      body?.close();
    }
    if (req.readableFlowing === null) req.resume();
    res.detachSocket(socket as unknown as Socket);
    res.destroy();
    socket.destroy();
  });

  void pushBody(req, bodySource);
  try {
    listener(req, res);
  } catch (error) {
    disconnect(networkError('fetch failed', error));
  }
  return answered;
}

/** The request's body into the IncomingMessage, as fast as the app reads it. */
async function pushBody(req: IncomingMessage, source: ReadableStreamDefaultReader<Uint8Array> | undefined): Promise<void> {
  let wanted: (() => void) | undefined;
  const wake = () => {
    const next = wanted;
    wanted = undefined;
    next?.();
  };
  const read = req._read.bind(req);
  req._read = (size) => {
    read(size);
    wake();
  };
  req.once('close', wake);
  try {
    while (source !== undefined) {
      const { done, value } = await source.read();
      if (done || req.destroyed) break;
      if (!req.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength)))
        await new Promise<void>((resolve) => (wanted = resolve));
    }
    if (req.destroyed) return;
    req.complete = true;
    req.push(null);
  } catch (error) {
    // The body's source failed (the caller's stream errored, or the request was aborted): the request did not arrive whole.
    if (!req.destroyed) req.destroy(error instanceof Error ? error : connectionReset());
  } finally {
    req.off('close', wake);
  }
}
