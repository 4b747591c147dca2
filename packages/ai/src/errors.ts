// The one place that knows the Anthropic SDK's error classes: everything else sees AiError.
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
  AuthenticationError,
  BadRequestError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
} from '@anthropic-ai/sdk';
import { addUsage, type Usage } from './usage';

export type AiErrorKind =
  /** 429 from the API after the SDK's retries. */
  | 'rate_limited'
  /** 529 / overloaded_error, including one that arrives in the middle of a stream. */
  | 'overloaded'
  /** 5xx other than overloaded. */
  | 'upstream'
  | 'timeout'
  | 'connection'
  /** Our credentials were refused (401/403): an operator must fix the configuration. */
  | 'auth'
  /** The API rejected our request (400/404/413/422): a bug on our side, never worth retrying. */
  | 'bad_request'
  /** The model's output did not satisfy the schema even after the repair round. */
  | 'invalid_output'
  /** A cap of the tool loop (rounds, tool calls, tokens) was hit. */
  | 'limit_exceeded'
  /** The model declined to answer (stop_reason refusal). */
  | 'refused'
  | 'aborted';

const RETRYABLE: ReadonlySet<AiErrorKind> = new Set(['rate_limited', 'overloaded', 'upstream', 'timeout', 'connection']);

/** A failure of the AI engine, with whether trying the same work again later may succeed. */
export class AiError extends Error {
  readonly retryable: boolean;

  constructor(
    readonly kind: AiErrorKind,
    message: string,
    options: { cause?: unknown; retryAfterSeconds?: number } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'AiError';
    this.retryable = RETRYABLE.has(kind);
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  readonly retryAfterSeconds: number | undefined;

  /** The model API's `request-id` of the failed call, when it answered: what Anthropic support asks for. */
  requestId: string | undefined;

  /** The model API's own words for an error answer (never shown to clients: it may describe our request). */
  apiMessage: string | undefined;

  /** What the failed work had spent before it failed (its completed model calls), when known. */
  usage: Usage | undefined;
}

/**
 * `error` as an AiError that also carries `spent`: each layer that completed model calls before a failure adds
 * them, so the error of a failed run reports every token the run was billed for.
 */
export function withSpentUsage(error: unknown, spent: Usage): AiError {
  const failure = toAiError(error);
  failure.usage = failure.usage ? addUsage(failure.usage, spent) : spent;
  return failure;
}

function retryAfter(headers: Headers | undefined): number | undefined {
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

/** Error types the API puts in the body, whatever the transport status (mid-stream errors arrive after a 200). */
function kindFromApiType(type: string | undefined): AiErrorKind | undefined {
  switch (type) {
    case 'overloaded_error':
      return 'overloaded';
    case 'rate_limit_error':
      return 'rate_limited';
    case 'api_error':
      return 'upstream';
    case 'authentication_error':
    case 'permission_error':
      return 'auth';
    case 'invalid_request_error':
    case 'not_found_error':
    case 'request_too_large':
      return 'bad_request';
    default:
      return undefined;
  }
}

/** `value[key]` when value is an object, else undefined: a JSON body is read without trusting its shape. */
function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

/** The error type of an error body: `{ error: { type } }` as the API sends it, or a bare `{ type }`. */
function apiErrorType(body: unknown): string | undefined {
  const type = field(field(body, 'error'), 'type') ?? field(body, 'type');
  return typeof type === 'string' ? type : undefined;
}

/** `instanceof` on the generic class narrows to APIError<any, any, any>; this keeps its declared field types. */
function isApiError(error: unknown): error is APIError {
  return error instanceof APIError;
}

/** Maps anything thrown by the SDK (or by our own code around it) to an AiError. */
export function toAiError(error: unknown): AiError {
  if (error instanceof AiError) return error;
  if (error instanceof APIUserAbortError) return new AiError('aborted', 'The request to the model was aborted.', { cause: error });
  if (error instanceof APIConnectionTimeoutError) return new AiError('timeout', 'The model did not answer in time.', { cause: error });
  if (error instanceof APIConnectionError) return new AiError('connection', 'Could not reach the model API.', { cause: error });
  if (isApiError(error)) {
    const status = error.status;
    const fromBody = kindFromApiType(apiErrorType(error.error));
    let kind: AiErrorKind;
    if (error instanceof RateLimitError) kind = 'rate_limited';
    else if (status === 529) kind = 'overloaded';
    else if (error instanceof AuthenticationError || error instanceof PermissionDeniedError) kind = 'auth';
    else if (error instanceof BadRequestError || error instanceof NotFoundError) kind = 'bad_request';
    else if (fromBody) kind = fromBody;
    else if (status === undefined || status >= 500) kind = 'upstream';
    else kind = 'bad_request';
    const described = status === undefined ? 'during the response stream' : `with status ${status}`;
    const requestId = error.requestID ?? error.headers?.get('request-id') ?? undefined;
    const apiMessage = field(field(error.error, 'error'), 'message');
    const said = typeof apiMessage === 'string' ? `: ${apiMessage}` : '';
    const failure = new AiError(kind, `The model API failed ${described} (${kind}${requestId ? `, request-id ${requestId}` : ''})${said}`, {
      cause: error,
      retryAfterSeconds: retryAfter(error.headers),
    });
    failure.requestId = requestId;
    failure.apiMessage = typeof apiMessage === 'string' ? apiMessage : undefined;
    return failure;
  }
  if (error instanceof Error && error.name === 'AbortError') {
    return new AiError('aborted', 'The request to the model was aborted.', { cause: error });
  }
  return new AiError('upstream', 'The model API call failed unexpectedly.', { cause: error });
}
