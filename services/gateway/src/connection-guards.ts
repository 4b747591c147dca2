// What the gateway guarantees about a client's connection before any route runs, kept apart from the request path
// (routes, proxy): forwarding headers are the gateway's own unless a trusted proxy set them, a request body has a
// bounded time to arrive, and a refused request whose body was not read ends its connection.
import type { ServerResponse } from 'node:http';
import { ERROR_STATUS } from '@fin/contracts';
import { closeAfterAnswer, hasRequestBody, type LingerOptions } from '@fin/http';
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
  /** How the connection of a request answered before its body arrived ends (closeAfterAnswer's defaults). */
  linger?: LingerOptions;
}

/**
 * A request body must arrive within `timeoutMs` of its head: one sent a byte every 5 s held its connection (and the
 * gateway's buffer) for the 300 s of Node's requestTimeout. Beyond it, the spec's 400 naming `body`, and the
 * connection is closed. Event streams are unaffected: the deadline ends with the request body, not the response.
 *
 * And a response sent before the request's body was received in full (a 401 or 429 refused before reading it)
 * closes the connection: keeping it alive meant reading a body nobody wants, at the client's pace. It closes in
 * stages (closeAfterAnswer), so that the client reads the answer rather than a reset.
 */
export function bodyDeadline({ timeoutMs, logger, linger }: BodyDeadlineOptions): RequestHandler {
  return (req, res, next) => {
    if (!hasRequestBody(req)) {
      next();
      return;
    }
    // Node writes Connection: close when shouldKeepAlive is false as the head is written: decided then, by
    // whether the request's body has been received in full.
    const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
    res.writeHead = ((...args: unknown[]) => {
      if (!req.complete) closeAfterAnswer(req, res, linger);
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
