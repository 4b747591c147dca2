// What the client is told when a service cannot be reached or answers badly.
import { ERROR_STATUS, ErrorBody, type ErrorType } from '@fin/contracts';
import { badGateway, gatewayTimeout, serviceUnavailable, type AppError } from '@fin/http';
import type { ServicePool } from './service-pools';

/** Network errors meaning nobody is there to answer: the service is down or not deployed. */
const UNAVAILABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code } = error as { code?: unknown };
  if (typeof code === 'string') return code;
  // Several addresses tried (IPv6 and IPv4 for localhost): the first one's reason.
  if (error instanceof AggregateError) return errorCode(error.errors[0]);
  return undefined;
}

const seconds = (ms: number) => `${Number((ms / 1000).toFixed(3))} s`;

/** An error raised before the service sent its response headers. */
export function upstreamFailure(upstream: ServicePool, error: unknown, responseTimeoutMs: number): AppError {
  const code = errorCode(error);
  if (code === 'UND_ERR_HEADERS_TIMEOUT')
    return gatewayTimeout(`The ${upstream.label} service did not answer within ${seconds(responseTimeoutMs)}.`, error);
  if (code !== undefined && UNAVAILABLE.has(code)) return serviceUnavailable(`The ${upstream.label} service is unavailable.`, error);
  return badGateway(`The ${upstream.label} service failed to answer.`, error);
}

/** The data of the `error` event that ends an event stream whose service failed mid-stream. */
export function midStreamFailure(upstream: ServicePool): ErrorBody {
  return { detail: `The ${upstream.label} service failed while streaming the response.`, status_code: 502, type: 'bad_gateway' };
}

/** The general type of each status (the first listed: unprocessable_entity for 422, bad_gateway for 502). */
const TYPE_OF_STATUS = new Map<number, ErrorType>(
  Object.entries(ERROR_STATUS)
    .reverse()
    .map(([type, status]) => [status, type as ErrorType]),
);

/**
 * Whether an upstream error body is already the spec's body for this status (then it passes unchanged).
 * A 401 never is: the services do not authenticate callers, so a 401 means they refused the gateway's own
 * signature — a misconfiguration (INTERNAL_SIGNING_SECRET differs), reported as 502 and logged.
 */
export function isPassableErrorBody(status: number, bytes: Buffer | undefined, contentType: string | undefined): boolean {
  if (status === 401 || bytes === undefined || !/^application\/(?:[\w.+-]+\+)?json\b/i.test(contentType ?? '')) return false;
  try {
    const parsed = ErrorBody.safeParse(JSON.parse(bytes.toString('utf8')));
    return parsed.success && parsed.data.status_code === status && ERROR_STATUS[parsed.data.type] === status;
  } catch {
    return false;
  }
}

const GENERIC_DETAIL: Record<ErrorType, (label: string) => string> = {
  validation_error: (label) => `The ${label} service rejected the request as invalid.`,
  unauthorized: (label) => `The ${label} service failed.`,
  forbidden: () => 'Access denied.',
  not_found: () => 'Not found.',
  method_not_allowed: () => 'This method is not allowed on this route.',
  conflict: () => 'The request conflicts with the current state of the resource.',
  payload_too_large: () => 'The request body is too large.',
  unsupported_media_type: () => 'The request body must be JSON, sent with Content-Type: application/json.',
  unprocessable_entity: () => 'The request cannot be processed.',
  rate_limit_exceeded: () => 'Too many requests.',
  model_refused: () => 'The AI model declined to answer this request.',
  internal_error: () => 'An internal error occurred.',
  bad_gateway: (label) => `The ${label} service failed.`,
  model_request_rejected: () => 'The AI model provider refused the request this service built.',
  service_unavailable: (label) => `The ${label} service is unavailable.`,
  gateway_timeout: (label) => `The ${label} service did not answer in time.`,
};

/**
 * The spec's body for an upstream error answer that is not one (a framework's HTML page, a stack trace, an
 * empty body): a status the spec body has keeps its status; another 4xx becomes 400, another 5xx 502.
 */
export function normalisedError(upstream: ServicePool, status: number): ErrorBody {
  let type = status === 401 ? 'bad_gateway' : TYPE_OF_STATUS.get(status);
  if (type === undefined) type = status < 500 ? 'validation_error' : 'bad_gateway';
  return { detail: GENERIC_DETAIL[type](upstream.label), status_code: ERROR_STATUS[type], type };
}
