// JSON request bodies: a body that is not JSON is refused with 415 before it is read, an oversized one with
// 400 naming `body` (before reading when Content-Length says so), a malformed one with 400 (see the error translator).
import express, { type Request, type RequestHandler } from 'express';
import { unsupportedMediaType } from './errors';

export const DEFAULT_BODY_LIMIT_BYTES = 256 * 1024;

/** The media types read as JSON. */
export const JSON_TYPES = ['application/json', 'application/*+json'];

/** Whether the request announces a body: chunked, or a Content-Length above zero. */
export function hasRequestBody(req: Request): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = Number(req.headers['content-length'] ?? '0');
  return Number.isNaN(length) || length > 0;
}

/** 415 for a request with a body that is not declared as JSON. */
export function requireJsonContentType(): RequestHandler {
  return (req, _res, next) => {
    if (hasRequestBody(req) && req.is(JSON_TYPES) === false) {
      next(unsupportedMediaType('The request body must be JSON, sent with Content-Type: application/json.'));
      return;
    }
    next();
  };
}

/** The JSON body parser of a service: content type checked, at most `limit` bytes, objects and arrays only. */
export function jsonBody({ limit = DEFAULT_BODY_LIMIT_BYTES }: { limit?: number } = {}): RequestHandler[] {
  return [requireJsonContentType(), express.json({ limit, type: JSON_TYPES, strict: true })];
}

