// What both fake servers share: listening on an ephemeral loopback port, closing without leaving a socket behind,
// reading a request body, and sleeping in a way that stops when the client goes away or the server closes.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { setTimeout as sleepFor } from 'node:timers/promises';

export interface ListenOptions {
  /** Interface to bind; loopback by default so a fake is never reachable from outside the machine. */
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
}

/** Per request: aborted when the client disconnects or the fake closes, so pending sleeps and writes stop. */
export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  signal: AbortSignal;
}

export interface RunningServer {
  /** `http://host:port`, no trailing slash. */
  url: string;
  close(): Promise<void>;
}

/**
 * Starts an HTTP server whose handler gets an abort signal per exchange. close() aborts every exchange in flight
 * (hanging replies included) and destroys every connection, so a test file that awaits it leaves nothing open.
 */
export async function startServer(
  handler: (exchange: Exchange) => Promise<void>,
  onHandlerError: (exchange: Exchange, error: unknown) => void,
  options: ListenOptions = {},
): Promise<RunningServer> {
  const inFlight = new Set<AbortController>();
  const server: Server = createServer((req, res) => {
    const controller = new AbortController();
    inFlight.add(controller);
    // 'close' on the response fires when it finished or when the connection died first.
    res.on('close', () => {
      controller.abort();
      inFlight.delete(controller);
    });
    const exchange = { req, res, signal: controller.signal };
    handler(exchange).catch((error: unknown) => {
      if (!controller.signal.aborted) onHandlerError(exchange, error);
    });
  });
  // Longer than Node fetch's own idle timeout (4 s), so clients reuse connections as they do with the real APIs;
  // close() ends idle ones at once.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}`,
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        for (const controller of inFlight) controller.abort();
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/** Reads the whole request body as UTF-8 (the fakes only take small JSON bodies). */
export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Waits `ms`; resolves false instead of waiting on when the exchange is aborted. */
export async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false;
  if (ms <= 0) return true;
  try {
    await sleepFor(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

/** Never resolves on its own: ends when the client disconnects or the server closes. */
export function waitForAbort(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** Lower-cased header names to their (first) value. */
export function headerRecord(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
  });
  res.end(text);
}
