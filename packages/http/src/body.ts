// JSON request bodies: a body that is not JSON is refused with 415 before it is read, an oversized one with
// 400 naming `body` (before reading when Content-Length says so), a malformed one with 400 (see the error translator).
// The bytes read are the bytes the gateway signed (checkBodyDigest), or the request is refused.
import { createHash, hash } from 'node:crypto';
import express, { type Request, type RequestHandler } from 'express';
import { unsupportedMediaType, type AppError } from './errors';

const DEFAULT_BODY_LIMIT_BYTES = 256 * 1024;

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
  return [requireJsonContentType(), express.json({ limit, type: JSON_TYPES, strict: true, verify: checkBodyDigest })];
}

/** The SHA-256 of no bytes: the digest signed for a request without a body. */
export const EMPTY_BODY_DIGEST: Buffer = createHash('sha256').digest();

// The body's digest, met from either side: a parser that runs before verifyIdentity records the digest of the
// bytes it read; one that runs after checks them against the digest verifyIdentity left. Either way the check
// happens before a handler sees the body.
const RECEIVED_DIGEST = Symbol('finReceivedBodyDigest');
const EXPECTED_DIGEST = Symbol('finExpectedBodyDigest');

interface DigestSlots {
  [RECEIVED_DIGEST]?: Buffer;
  [EXPECTED_DIGEST]?: { digest: Buffer; refuse: (req: Request) => AppError };
}

/** The digest of the body a parser read before verifyIdentity ran, if one did. */
export function receivedBodyDigest(req: Request): Buffer | undefined {
  return (req as Request & DigestSlots)[RECEIVED_DIGEST];
}

/** For verifyIdentity: the parser that reads the body later checks it against `digest`, refusing with `refuse(req)`. */
export function expectBodyDigest(req: Request, digest: Buffer, refuse: (req: Request) => AppError): void {
  (req as Request & DigestSlots)[EXPECTED_DIGEST] = { digest, refuse };
}

/**
 * The `verify` option of every body parser of a service behind the gateway (express.json, express.urlencoded,
 * express.raw; jsonBody() sets it): the bytes read must be the bytes signed, or the request is refused with the
 * same 401 as any bad signature. Bytes no parser reads never reach a handler.
 */
export function checkBodyDigest(req: Request, _res: unknown, body: Buffer): void {
  const slots = req as Request & DigestSlots;
  const received = body.length === 0 ? EMPTY_BODY_DIGEST : hash('sha256', body, 'buffer');
  const expected = slots[EXPECTED_DIGEST];
  if (expected === undefined) {
    slots[RECEIVED_DIGEST] = received;
    return;
  }
  slots[EXPECTED_DIGEST] = undefined;
  if (!received.equals(expected.digest)) throw expected.refuse(req);
}
