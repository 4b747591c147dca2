// Request bodies at the gateway: read up to the size limit (400 naming `body` beyond, before reading when
// Content-Length says so), decompressed, checked to be declared JSON on API routes (415 for another type), and
// forwarded as the bytes that arrived. The gateway does not parse them: the service behind it does, and answers
// a malformed body with the spec's 400, which the gateway relays. Nothing product-specific is validated here.
// Always read whole before forwarding, never streamed: the identity signature covers the SHA-256 of these bytes.
import { AsyncResource } from 'node:async_hooks';
import type { IncomingMessage } from 'node:http';
import { requireJsonContentType } from '@fin/http';
import express, { type RequestHandler } from 'express';

/** An error the error translator reads as body-parser's (see toHttpError in @fin/http). */
function bodyError(type: 'request.aborted' | 'request.size.invalid', message: string): Error {
  return Object.assign(new Error(message), { type, status: 400, expose: true });
}

/**
 * The common case read without body-parser: an identity-encoded body of a declared length within the limit is
 * copied into a buffer of its own as it arrives. A body read in one piece by body-parser is a view of the
 * socket's read buffer (up to 64 KB), and the request keeps its body until it ends (the upstream request holds
 * it too): for an event stream that is the stream's whole life, so a 60-byte chat message could keep 64 KB.
 */
function readDeclared(req: IncomingMessage, length: number, done: (error?: Error) => void): void {
  const body = Buffer.allocUnsafeSlow(length);
  let received = 0;
  const cleanup = () => {
    req.removeListener('data', onData);
    req.removeListener('end', onEnd);
    req.removeListener('close', onClose);
    req.removeListener('error', onError);
  };
  function onData(chunk: Buffer): void {
    if (received + chunk.length > length) {
      cleanup();
      req.resume();
      done(bodyError('request.size.invalid', 'request body larger than its Content-Length'));
      return;
    }
    chunk.copy(body, received);
    received += chunk.length;
  }
  function onEnd(): void {
    cleanup();
    if (received !== length) {
      done(bodyError('request.size.invalid', 'request body shorter than its Content-Length'));
      return;
    }
    (req as IncomingMessage & { body?: Buffer }).body = body;
    done();
  }
  function onClose(): void {
    cleanup();
    done(bodyError('request.aborted', 'request aborted'));
  }
  function onError(error: Error): void {
    cleanup();
    done(error);
  }
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('close', onClose);
  req.on('error', onError);
}

/** A body read in one piece (from the request's buffer, or by body-parser): copied out of the socket's buffer. */
function ownCopy(body: unknown): unknown {
  if (Buffer.isBuffer(body) && body.length > 0 && (body.byteOffset !== 0 || body.buffer.byteLength > body.length)) {
    const own = Buffer.allocUnsafeSlow(body.length);
    body.copy(own);
    return own;
  }
  return body;
}

/** Reads the body into req.body, a Buffer (left undefined when there is none). */
function readWhole(limit: number): RequestHandler {
  // Chunked or compressed bodies, and declared lengths beyond the limit (its 400 before reading), go through
  // body-parser, which also inflates and enforces the limit while reading.
  const raw: express.RequestHandler = express.raw({ type: () => true, limit, inflate: true });
  return (req, res, next) => {
    const { headers } = req;
    const encoding = headers['content-encoding'];
    const declared = headers['content-length'];
    if (headers['transfer-encoding'] === undefined && (encoding === undefined || encoding === 'identity') && declared !== undefined) {
      const length = Number(declared);
      if (Number.isSafeInteger(length) && length >= 0 && length <= limit) {
        if (length === 0) next();
        else if (req.complete && req.readableLength === length) {
          // Usually the whole body came with the head and waits in the request's buffer: taken at once.
          req.body = ownCopy(req.read());
          next();
        }
        // The stream's events run outside the request's async context (its logger, its trace): `next` runs in it.
        else readDeclared(req, length, AsyncResource.bind(next));
        return;
      }
    }
    raw(req, res, (error?: unknown) => {
      if (error === undefined) req.body = ownCopy(req.body);
      next(error);
    });
  };
}

/** Leaves the body in req.body, a Buffer (undefined when there is none). */
export function readBody({ limit, json }: { limit: number; json: boolean }): RequestHandler[] {
  const read = readWhole(limit);
  return json ? [requireJsonContentType(), read] : [read];
}

/** The body read by readBody, if any. */
export function bodyOf(body: unknown): Buffer | undefined {
  return Buffer.isBuffer(body) && body.length > 0 ? body : undefined;
}
