// Typed errors. Every error the API answers with has the body {detail, status_code, type}; the SDK throws it as
// the subclass of APIError for its status, carrying the body, the request id (quote it when reporting a problem)
// and the response headers. A stream that fails after it started ends with an `error` event carrying the same
// body, thrown the same way. A job that failed is a JobFailedError; a request that never got an answer is an
// APIConnectionError (APITimeoutError when it ran out of time).
import type { ErrorBody, ErrorType, JobType } from './types';

/** The base class of every error the SDK throws. */
export class FinancialIntelligenceError extends Error {
  override readonly name: string = 'FinancialIntelligenceError';
}

/** The error status of each error type (the table of docs/api-decisions.md). */
const STATUS_OF_TYPE: Readonly<Record<ErrorType, number>> = {
  validation_error: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable_entity: 422,
  rate_limit_exceeded: 429,
  model_refused: 422,
  internal_error: 500,
  bad_gateway: 502,
  model_request_rejected: 502,
  service_unavailable: 503,
  gateway_timeout: 504,
};

/** The general type of each status (the first listed: unprocessable_entity for 422, bad_gateway for 502). */
const TYPE_OF_STATUS = new Map(
  Object.entries(STATUS_OF_TYPE)
    .reverse()
    .map(([type, status]) => [status, type as ErrorType]),
);

/** An error answer of the API (or an `error` event of a stream). */
export class APIError extends FinancialIntelligenceError {
  override readonly name: string = 'APIError';
  /** The HTTP status (for a stream's error event: the body's status_code). */
  readonly status: number;
  /** The error body as the API sent it. */
  readonly body: ErrorBody;
  /** The error category, e.g. `validation_error`. */
  readonly type: ErrorType;
  /** What went wrong, e.g. `n: must be at most 20`. */
  readonly detail: string;
  /** X-Request-Id of the response: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** The response headers (of the stream's response, for an error event). */
  readonly headers: Headers;

  constructor(status: number, body: ErrorBody, headers: Headers) {
    super(`${status} ${body.type}: ${body.detail}`);
    this.status = status;
    this.body = body;
    this.type = body.type;
    this.detail = body.detail;
    this.headers = headers;
    this.requestId = headers.get('x-request-id') ?? undefined;
  }
}

/** 400 `validation_error`: `detail` names each bad field and why. */
export class ValidationError extends APIError {
  override readonly name: string = 'ValidationError';
}
/** 401: the API key is missing, malformed, unknown, revoked or expired. */
export class AuthenticationError extends APIError {
  override readonly name: string = 'AuthenticationError';
}
/** 403: the API key lacks the scope the route needs (`detail` names it). */
export class PermissionDeniedError extends APIError {
  override readonly name: string = 'PermissionDeniedError';
}
/** 404: no such resource (another tenant's resources are reported the same way). */
export class NotFoundError extends APIError {
  override readonly name: string = 'NotFoundError';
}
/** 409: the request conflicts with the resource's state (a job not finished yet, a chat reply still being written, a tool name taken). */
export class ConflictError extends APIError {
  override readonly name: string = 'ConflictError';
}
/** 422: the Idempotency-Key was used before with a different body. */
export class UnprocessableEntityError extends APIError {
  override readonly name: string = 'UnprocessableEntityError';
}

/** The rate-limit headers of a response. */
export interface RateLimitInfo {
  /** X-RateLimit-Limit: requests allowed in the account's window (or concurrent chat requests). */
  limit: number | undefined;
  /** X-RateLimit-Remaining. */
  remaining: number | undefined;
  /** X-RateLimit-Reset: when the account's window ends. */
  reset: Date | undefined;
  /** Retry-After, in seconds. */
  retryAfterSeconds: number | undefined;
}

/** 429 `rate_limit_exceeded`, after the SDK's retries (if any) were used up. */
export class RateLimitError extends APIError {
  override readonly name: string = 'RateLimitError';
  readonly rateLimit: RateLimitInfo;

  constructor(status: number, body: ErrorBody, headers: Headers) {
    super(status, body, headers);
    this.rateLimit = rateLimitInfo(headers);
  }
}

/** 5xx: the API or a service behind it failed, was unavailable or did not answer in time. */
export class InternalServerError extends APIError {
  override readonly name: string = 'InternalServerError';
}

/** The request got no answer: the connection failed or was cut. */
export class APIConnectionError extends FinancialIntelligenceError {
  override readonly name: string = 'APIConnectionError';
}

/** The API answered with a redirect to another origin (or one the SDK cannot inspect): not followed, never retried. */
export class RedirectRefusedError extends APIConnectionError {
  override readonly name: string = 'RedirectRefusedError';
}

/** The request got no answer within timeoutMs. */
export class APITimeoutError extends APIConnectionError {
  override readonly name: string = 'APITimeoutError';
}

/** A job ended `failed`: its reason from the job status (`type`, e.g. `gateway_timeout`, and `detail`). */
export class JobFailedError extends FinancialIntelligenceError {
  override readonly name: string = 'JobFailedError';
  readonly jobType: JobType;
  readonly jobId: string;
  readonly type: ErrorType;
  readonly detail: string;
  /** The status an API error of this type has (e.g. 504 for gateway_timeout). */
  readonly status: number;

  constructor(jobType: JobType, jobId: string, error: { type: ErrorType; detail: string }) {
    super(`${jobType} job ${jobId} failed: ${error.type}: ${error.detail}`);
    this.jobType = jobType;
    this.jobId = jobId;
    this.type = error.type;
    this.detail = error.detail;
    this.status = STATUS_OF_TYPE[error.type];
  }
}

function headerNumber(headers: Headers, name: string): number | undefined {
  const value = headers.get(name);
  if (value === null || value.trim() === '') return undefined;
  const number = Number(value);
  return Number.isFinite(number) ? number : undefined;
}

/** Reads the X-RateLimit-* and Retry-After headers. */
function rateLimitInfo(headers: Headers): RateLimitInfo {
  const reset = headerNumber(headers, 'x-ratelimit-reset');
  return {
    limit: headerNumber(headers, 'x-ratelimit-limit'),
    remaining: headerNumber(headers, 'x-ratelimit-remaining'),
    reset: reset === undefined ? undefined : new Date(reset * 1000),
    retryAfterSeconds: headerNumber(headers, 'retry-after'),
  };
}

function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null) return false;
  const body = value as Record<string, unknown>;
  return typeof body.detail === 'string' && typeof body.status_code === 'number' && typeof body.type === 'string';
}

/**
 * The error body of an answer: the API's own when the text is one, otherwise (a proxy's HTML page, say) one made
 * from the status and the start of the text.
 */
export function errorBody(status: number, text: string): ErrorBody {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isErrorBody(parsed)) return parsed;
  } catch {
    // Not JSON: described below.
  }
  const type = TYPE_OF_STATUS.get(status) ?? (status >= 500 ? 'internal_error' : 'validation_error');
  const detail = text.trim().slice(0, 500) || `HTTP ${status}`;
  return { detail, status_code: status, type };
}

/** The APIError subclass for an error answer (or a stream's error event, with the body's status_code). */
export function apiError(status: number, body: ErrorBody, headers: Headers): APIError {
  switch (status) {
    case 400:
      return new ValidationError(status, body, headers);
    case 401:
      return new AuthenticationError(status, body, headers);
    case 403:
      return new PermissionDeniedError(status, body, headers);
    case 404:
      return new NotFoundError(status, body, headers);
    case 409:
      return new ConflictError(status, body, headers);
    case 422:
      return new UnprocessableEntityError(status, body, headers);
    case 429:
      return new RateLimitError(status, body, headers);
    default:
      return status >= 500 ? new InternalServerError(status, body, headers) : new APIError(status, body, headers);
  }
}
