// The one error translator of a service, and its 404 for unknown routes. Whatever was thrown, the client gets
// the spec's body {detail, status_code, type}; what went wrong inside is logged, never sent.
import type { Logger } from '@fin/log';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { AppError, badRequest, notFound, toAppError, unsupportedMediaType } from './errors';
import { loggerOf } from './request-context';

export const NOT_JSON_DETAIL = 'The request body is not valid JSON.';

/** The errors body-parser (express.json, express.raw) raises, as http-errors objects. */
interface BodyParserError extends Error {
  type: string;
  status: number;
  limit?: number;
}

function isBodyParserError(error: unknown): error is BodyParserError {
  if (!(error instanceof Error) || error instanceof AppError) return false;
  const candidate = error as Partial<BodyParserError>;
  return typeof candidate.type === 'string' && typeof candidate.status === 'number';
}

/**
 * A body that does not decompress as its Content-Encoding says (gzip, deflate, br, zstd): body-parser passes the
 * zlib error on with status 400 and no `type`. Recognised by zlib's error codes, so that no other error that
 * happens to carry a status is mistaken for the client's fault.
 */
function isUndecodableBody(error: unknown): boolean {
  if (!(error instanceof Error) || error instanceof AppError) return false;
  const { status, code } = error as { status?: unknown; code?: unknown };
  return status === 400 && typeof code === 'string' && /^(Z_|ZSTD_|ERR__ERROR_|ERR_BROTLI)/.test(code);
}

/** The router could not percent-decode a path parameter (e.g. `/api/customer-tools/%ff`): it throws URIError, status 400. */
function isUndecodablePathParameter(error: unknown): boolean {
  // By name, not instanceof: URIError may come from another realm (Jest's VM).
  return error instanceof Error && error.name === 'URIError' && (error as { status?: unknown }).status === 400;
}

/** 262144 → "256 KiB". */
function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

function withCause(error: AppError, cause: unknown): AppError {
  return new AppError(error.type, error.detail, { status: error.status, headers: error.headers, cause });
}

/** Whatever was thrown, as an AppError: its own, body-parser's with a readable detail, anything else a 500. */
function toHttpError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (isUndecodableBody(error)) return withCause(badRequest('The request body could not be decoded as its Content-Encoding says.'), error);
  if (isUndecodablePathParameter(error))
    return withCause(badRequest('The request path is not valid: a path segment is not valid percent-encoding.'), error);
  if (isBodyParserError(error)) {
    switch (error.type) {
      case 'entity.parse.failed':
        return withCause(badRequest(NOT_JSON_DETAIL), error);
      case 'entity.too.large':
        // A 400 like every other bad input (the spec's error table has no 413): the field is the body itself.
        return withCause(
          badRequest(
            `body: must be at most ${error.limit === undefined ? 'the size this service accepts' : formatBytes(error.limit)}; send a shorter prompt, message or data.`,
          ),
          error,
        );
      case 'encoding.unsupported':
        return withCause(unsupportedMediaType('The Content-Encoding of the request body is not supported.'), error);
      case 'charset.unsupported':
        return withCause(unsupportedMediaType('The request body must be UTF-8 encoded JSON.'), error);
      case 'request.size.invalid':
        return withCause(badRequest('The request body does not match its Content-Length.'), error);
      case 'request.aborted':
        return withCause(badRequest('The request body ended before it was complete.'), error);
    }
    // Anything else body-parser reports as the client's fault is a 400; its own failures are ours.
    if (error.status >= 400 && error.status < 500) return withCause(badRequest('The request body could not be read.'), error);
  }
  return toAppError(error);
}

/**
 * The last middleware of every service. 4xx are logged at warn with their detail; 5xx at error with the full
 * error (stack, cause). An error raised after the response started (e.g. in the middle of a stream) cannot
 * change the status any more: the connection is closed so the client sees the response as incomplete.
 */
export function errorHandler({ logger }: { logger: Logger }): ErrorRequestHandler {
  return (error: unknown, _req, res, _next) => {
    const log = loggerOf(res, logger);
    const httpError = toHttpError(error);
    const fields = { status: httpError.status, type: httpError.type, detail: httpError.detail };
    if (httpError.status >= 500) log.error({ ...fields, err: error }, 'request failed');
    else log.warn(fields, 'request rejected');

    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.status(httpError.status).set(httpError.headers).json(httpError.toBody());
  };
}

/** Mounted after every route: an unknown route is a 404 in the spec's body. */
export function notFoundHandler(): RequestHandler {
  return (req, _res, next) => {
    const path = req.path.length > 200 ? `${req.path.slice(0, 200)}…` : req.path;
    next(notFound(`No route for ${req.method} ${path}.`));
  };
}
