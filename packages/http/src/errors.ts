import { ERROR_STATUS, type ErrorBody, type ErrorType } from '@fin/contracts';

export interface AppErrorOptions {
  /** The HTTP status, when it differs from the type's default (e.g. 503 vs 502 for upstream failures). */
  status?: number;
  cause?: unknown;
  /** Response headers that belong to this error, e.g. Retry-After. */
  headers?: Record<string, string>;
}

/**
 * The one error type services throw. It carries a closed `type`, an HTTP status and a `detail` that is safe to
 * show to the client; the cause (which may hold internals) is logged, never sent. The translator turns it
 * into the spec's body `{detail, status_code, type}`.
 */
export class AppError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(
    readonly type: ErrorType,
    readonly detail: string,
    { status, cause, headers = {} }: AppErrorOptions = {},
  ) {
    super(detail, { cause });
    this.name = 'AppError';
    this.status = status ?? ERROR_STATUS[type];
    this.headers = headers;
  }

  toBody(): ErrorBody {
    return { detail: this.detail, status_code: this.status, type: this.type };
  }
}

export const badRequest = (detail: string, options?: AppErrorOptions) => new AppError('validation_error', detail, options);
export const unauthorized = (detail = 'Missing or invalid API key.') => new AppError('unauthorized', detail);
export const forbidden = (detail: string) => new AppError('forbidden', detail);
export const notFound = (detail = 'Not found.') => new AppError('not_found', detail);
export const conflict = (detail: string) => new AppError('conflict', detail);
export const unsupportedMediaType = (detail: string) => new AppError('unsupported_media_type', detail);
export const badGateway = (detail: string, cause?: unknown) => new AppError('bad_gateway', detail, { cause });
export const serviceUnavailable = (detail: string, cause?: unknown) => new AppError('service_unavailable', detail, { cause });
export const gatewayTimeout = (detail: string, cause?: unknown) => new AppError('gateway_timeout', detail, { cause });

/** 429 with Retry-After (seconds, rounded up, at least 1). */
export function tooManyRequests(detail: string, retryAfterSeconds: number, headers: Record<string, string> = {}): AppError {
  return new AppError('rate_limit_exceeded', detail, {
    headers: { ...headers, 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
  });
}

/** Any non-AppError is an internal error; its message never reaches the client. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  return new AppError('internal_error', 'An internal error occurred.', { cause: error });
}
