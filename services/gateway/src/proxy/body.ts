// Request bodies at the gateway: read up to the size limit (400 naming `body` beyond, before reading when Content-Length
// says so), decompressed, checked to be JSON on API routes (415 for another type, 400 when malformed), and
// forwarded as the bytes that arrived. Nothing product-specific is validated here: the services own that.
// Always read whole before forwarding, never streamed: the identity signature covers the SHA-256 of these bytes.
import { NOT_JSON_DETAIL, badRequest, requireJsonContentType } from '@fin/http';
import express, { type RequestHandler } from 'express';

const checkJsonSyntax: RequestHandler = (req, _res, next) => {
  const body: unknown = req.body;
  if (Buffer.isBuffer(body) && body.length > 0) {
    try {
      JSON.parse(body.toString('utf8'));
    } catch {
      next(badRequest(NOT_JSON_DETAIL));
      return;
    }
  }
  next();
};

/**
 * The body in a buffer of its own. A body read in one piece is a view of the socket's read buffer (up to 64 KB),
 * and the request keeps its body until it ends (the upstream request holds it too): for an event stream that is
 * the stream's whole life, so a 60-byte chat message could keep 64 KB.
 */
const ownBuffer: RequestHandler = (req, _res, next) => {
  const body: unknown = req.body;
  if (Buffer.isBuffer(body) && body.length > 0 && body.buffer.byteLength > body.length) {
    const own = Buffer.allocUnsafeSlow(body.length);
    body.copy(own);
    req.body = own;
  }
  next();
};

/** Leaves the body in req.body as a Buffer (undefined when there is none). */
export function readBody({ limit, json }: { limit: number; json: boolean }): RequestHandler[] {
  const raw = express.raw({ type: () => true, limit, inflate: true });
  return json ? [requireJsonContentType(), raw, ownBuffer, checkJsonSyntax] : [raw, ownBuffer];
}

/** The body read by readBody, if any. */
export function bodyOf(body: unknown): Buffer | undefined {
  return Buffer.isBuffer(body) && body.length > 0 ? body : undefined;
}
