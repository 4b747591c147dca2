// What the gateway guarantees about a client's connection before any route runs, kept apart from the request path
// (routes, proxy): forwarding headers are the gateway's own unless a trusted proxy set them, a request body has a
// bounded time to arrive, and a refused request whose body was not read ends its connection.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ERROR_STATUS } from '@fin/contracts';
import { hasRequestBody } from '@fin/http';
import type { Logger } from '@fin/log';
import type { RequestHandler } from 'express';

/**
 * The forwarding headers a client could use to pose as another host or scheme. The gateway sets X-Forwarded-Host
 * (from Host) and X-Forwarded-Proto (from the connection) itself (proxy/headers.ts); a client's own are dropped
 * here unless a trusted proxy stands in front (CLIENT_ADDRESS_HOPS above 0: an ingress that sets them). The
 * portal's same-origin check compares Origin with X-Forwarded-Host: a client's own value made any Origin pass.
 */
const CLIENT_FORWARDING_HEADERS = ['x-forwarded-host', 'x-forwarded-proto', 'forwarded'] as const;

export function untrustedForwardingHeaders(trustedProxyHops: number): RequestHandler {
  return (req, _res, next) => {
    if (trustedProxyHops === 0) for (const name of CLIENT_FORWARDING_HEADERS) Reflect.deleteProperty(req.headers, name);
    next();
  };
}

/** Marks the response as the connection's last (`Connection: close`); effective until its head is written. */
function lastOnConnection(res: ServerResponse): void {
  res.shouldKeepAlive = false;
}

export interface BodyDeadlineOptions {
  /** Time from the request's head to the end of its body (BODY_TIMEOUT_MS, 30 s). */
  timeoutMs: number;
  logger: Logger;
  /** How long a connection answered before its body arrived goes on reading that body before it is closed (2 s). */
  lingerMs?: number;
  /** How much of such a body is read (and discarded) at most before the connection is closed (256 KiB). */
  lingerBytes?: number;
}

const DEFAULT_LINGER_MS = 2_000;
const DEFAULT_LINGER_BYTES = 256 * 1024;

/**
 * Closes a connection whose response went out before the request's body was read in stages, as RFC 9112 §9.6
 * (Tear-down) asks of a server: half-close (our FIN after the response), then go on reading and discarding what the
 * client still sends, for up to `lingerMs` and `lingerBytes`, before closing. Closing at once with the client's
 * bytes unread makes the kernel answer them with a reset, which can destroy the response before the client reads
 * it: a client that sent a 200 KB body with a GET saw ECONNRESET instead of the document. Node closes such a
 * connection with `socket.destroySoon()` once the response is finished; this socket's own replaces it.
 */
function lingerOnClose(req: IncomingMessage, socket: Socket, lingerMs: number, lingerBytes: number): void {
  socket.destroySoon = () => {
    socket.end();
    if (req.complete) return;
    let read = 0;
    const close = () => {
      clearTimeout(timer);
      socket.off('data', count);
      socket.destroy();
    };
    const count = (chunk: Buffer) => {
      read += chunk.length;
      if (read > lingerBytes) close();
    };
    const timer = setTimeout(close, lingerMs);
    timer.unref();
    socket.on('data', count);
    socket.once('close', () => {
      clearTimeout(timer);
    });
  };
}

/**
 * A request body must arrive within `timeoutMs` of its head: one sent a byte every 5 s held its connection (and the
 * gateway's buffer) for the 300 s of Node's requestTimeout. Beyond it, the spec's 400 naming `body`, and the
 * connection is closed. Event streams are unaffected: the deadline ends with the request body, not the response.
 *
 * And a response sent before the request's body was received in full (a 401 or 429 refused before reading it)
 * closes the connection: keeping it alive meant reading a body nobody wants, at the client's pace. It closes in
 * stages (lingerOnClose), so that the client reads the answer rather than a reset.
 */
export function bodyDeadline({
  timeoutMs,
  logger,
  lingerMs = DEFAULT_LINGER_MS,
  lingerBytes = DEFAULT_LINGER_BYTES,
}: BodyDeadlineOptions): RequestHandler {
  return (req, res, next) => {
    if (!hasRequestBody(req)) {
      next();
      return;
    }
    // Node writes Connection: close when shouldKeepAlive is false as the head is written: decided then, by
    // whether the request's body has been received in full.
    const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
    res.writeHead = ((...args: unknown[]) => {
      if (!req.complete) {
        lastOnConnection(res);
        lingerOnClose(req, req.socket, lingerMs, lingerBytes);
      }
      return writeHead(...args);
    }) as typeof res.writeHead;

    const timer = setTimeout(() => {
      if (req.complete) return;
      logger.warn({ timeoutMs }, 'request body not received in time');
      if (res.headersSent) {
        // Answered already (before reading the body): the connection only carries the rest of an unwanted body.
        req.socket.destroy();
        return;
      }
      lastOnConnection(res);
      const status = ERROR_STATUS.validation_error;
      res
        .status(status)
        .json({ detail: `body: not received within ${Math.round(timeoutMs / 1000)} s`, status_code: status, type: 'validation_error' });
    }, timeoutMs);
    timer.unref();
    const clear = () => {
      clearTimeout(timer);
    };
    req.once('end', clear);
    res.once('close', clear);
    next();
  };
}
