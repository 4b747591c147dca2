// The abuse suites' HTTP client. Two transports: node:http over keep-alive connections for requests any HTTP
// client can send, and a raw TCP socket for what clients refuse to send (control characters and bare obs-text in
// headers, oversized header blocks, framing that contradicts itself), written byte for byte.
import { Agent, request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import { connect } from 'node:net';

/** A request as the suites generate it: exact path (already encoded), ordered headers, optional body. */
export interface WireRequest {
  method: string;
  /** Path and query exactly as they go on the request line. */
  target: string;
  headers: readonly (readonly [string, string])[];
  body?: Buffer;
  /** Send over a raw socket, byte for byte (latin1), with `Connection: close`. */
  raw?: boolean;
  /** keep-alive transport only: send the body chunked instead of with Content-Length. */
  chunked?: boolean;
}

export interface WireResponse {
  /** 0 when the server closed or reset the connection without an answer (raw transport only). */
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** Node's limit on a request's line and headers together (--max-http-header-size). */
export const MAX_HEAD_BYTES = 16 * 1024;
/** The gateway's body limit (MAX_BODY_BYTES, 256 KiB by default). */
export const MAX_BODY_BYTES = 256 * 1024;

/** Size of the request line and headers as sent. */
export function headBytes(request: WireRequest): number {
  return request.headers.reduce(
    (sum, [name, value]) => sum + name.length + value.length + 4,
    request.method.length + request.target.length + 64,
  );
}

const NO_ANSWER: WireResponse = { status: 0, headers: {}, body: Buffer.alloc(0) };

/** Longest response body kept (the rest is read and dropped): the suites look at error bodies and envelopes. */
const MAX_KEPT_BYTES = 2 * 1024 * 1024;

export interface HttpClient {
  send(request: WireRequest, { timeoutMs }?: { timeoutMs?: number }): Promise<WireResponse>;
  close(): void;
}

export function createHttpClient(baseUrl: string, { connections = 32 }: { connections?: number } = {}): HttpClient {
  const url = new URL(baseUrl);
  const host = url.hostname;
  const port = Number(url.port);
  const agent = new Agent({ keepAlive: true, maxSockets: connections, maxFreeSockets: connections });
  return {
    send: (request, { timeoutMs = 30_000 } = {}) =>
      request.raw ? sendRaw(host, port, request, timeoutMs) : sendKeepAlive(agent, host, port, request, timeoutMs),
    close: () => agent.destroy(),
  };
}

function keepBody(chunks: Buffer[], kept: { bytes: number }, chunk: Buffer): void {
  if (kept.bytes >= MAX_KEPT_BYTES) return;
  chunks.push(chunk);
  kept.bytes += chunk.length;
}

/** The request each keep-alive connection carried last, for the message of a failure on the next. */
const lastRequestOn = new WeakMap<object, WireRequest>();

function sendKeepAlive(agent: Agent, host: string, port: number, request: WireRequest, timeoutMs: number): Promise<WireResponse> {
  return new Promise((resolve, reject) => {
    // Header names repeat (two X-API-Key lines); node:http takes them as arrays, in order.
    const headers: OutgoingHttpHeaders = {};
    for (const [name, value] of request.headers) {
      const existing = headers[name];
      headers[name] = existing === undefined ? value : [...(Array.isArray(existing) ? existing : [String(existing)]), value];
    }
    if (request.body !== undefined && !request.chunked) headers['content-length'] = String(request.body.length);
    const req = httpRequest({
      agent,
      host,
      port,
      method: request.method,
      path: request.target,
      headers,
      setHost: !request.headers.some(([name]) => name.toLowerCase() === 'host'),
    });
    const timer = setTimeout(() => req.destroy(new Error(`no complete answer within ${timeoutMs} ms`)), timeoutMs);
    let previous: WireRequest | undefined;
    req.on('socket', (socket) => {
      previous = lastRequestOn.get(socket);
      lastRequestOn.set(socket, request);
    });
    req.on('error', (error) => {
      clearTimeout(timer);
      // A connection closed under a reused socket is about what happened on it before: say what that was.
      if (req.reusedSocket && previous !== undefined) {
        const headers = previous.headers
          .map(([name, value]) => `${name}: ${value.length > 60 ? `${value.slice(0, 60)}…` : value}`)
          .join(' | ');
        error.message += ` (on a reused connection; its previous request: ${previous.method} ${previous.target.slice(0, 200)} | ${headers} | body ${previous.body?.length ?? 0} bytes${previous.chunked ? ', chunked' : ''})`;
      }
      reject(error);
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      const kept = { bytes: 0 };
      res.on('data', (chunk: Buffer) => keepBody(chunks, kept, chunk));
      res.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
      });
    });
    if (request.body !== undefined) req.write(request.body);
    req.end();
  });
}

function sendRaw(host: string, port: number, request: WireRequest, timeoutMs: number): Promise<WireResponse> {
  return new Promise((resolve, reject) => {
    // No `Connection: close`: the client closes once it has the whole answer, as keep-alive clients do. (A server
    // closing first with part of the request unread would reset the connection and could lose its own answer.)
    const lines = [`${request.method} ${request.target} HTTP/1.1`, `Host: ${host}:${port}`];
    for (const [name, value] of request.headers) lines.push(`${name}: ${value}`);
    const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
    const socket = connect(port, host);
    const chunks: Buffer[] = [];
    const kept = { bytes: 0 };
    let settled = false;
    const finish = (outcome: WireResponse | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const timer = setTimeout(() => finish(new Error(`no complete answer within ${timeoutMs} ms`)), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      keepBody(chunks, kept, chunk);
      const parsed = parseRawResponse(Buffer.concat(chunks), false);
      if (parsed) finish(parsed);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // The server may answer and close while the request is still being written (a head over its limit): what
      // it answered counts, the reset after it does not.
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') finish(parseRawResponse(Buffer.concat(chunks), true) ?? NO_ANSWER);
      else finish(error);
    });
    socket.on('end', () => {
      const parsed = parseRawResponse(Buffer.concat(chunks), true);
      if (parsed) finish(parsed);
      else if (kept.bytes === 0) finish(NO_ANSWER);
      else finish(new Error(`the server closed the connection in the middle of a response (${kept.bytes} bytes received)`));
    });
    socket.write(request.body === undefined ? head : Buffer.concat([head, request.body]));
  });
}

/**
 * Parses one HTTP/1.1 response; undefined while incomplete. Its end is given by Content-Length, the last chunk, a
 * status without a body, or (`ended`) the end of the connection.
 */
function parseRawResponse(data: Buffer, ended: boolean): WireResponse | undefined {
  // Interim answers (100 Continue to an Expect header) come first; the response is the final one.
  while (/^HTTP\/1\.[01] 1\d\d /.test(data.subarray(0, 16).toString('latin1'))) {
    const end = data.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    data = data.subarray(end + 4);
  }
  const headEnd = data.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  const [statusLine, ...headerLines] = data.subarray(0, headEnd).toString('latin1').split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '');
  if (!status) return undefined;
  const headers: Record<string, string | string[] | undefined> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    const existing = headers[name];
    headers[name] = existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value];
  }
  let body = data.subarray(headEnd + 4);
  if (
    String(headers['transfer-encoding'] ?? '')
      .toLowerCase()
      .includes('chunked')
  ) {
    const decoded: Buffer[] = [];
    let offset = 0;
    for (;;) {
      const lineEnd = body.indexOf('\r\n', offset);
      if (lineEnd < 0) return undefined;
      const size = Number.parseInt(body.subarray(offset, lineEnd).toString('latin1'), 16);
      if (!Number.isFinite(size)) return undefined;
      if (size === 0) break;
      if (body.length < lineEnd + 2 + size + 2) return undefined;
      decoded.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
      offset = lineEnd + 2 + size + 2;
    }
    body = Buffer.concat(decoded);
  } else if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    if (body.length < length) return undefined;
    body = body.subarray(0, length);
  } else if (!['204', '304'].includes(status[1] as string) && !ended) {
    return undefined;
  }
  return { status: Number(status[1]), headers, body };
}
