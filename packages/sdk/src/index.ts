// @financial-intelligence/sdk: the typed client of the Financial Intelligence API.
export { FinancialIntelligence, JobHandle, OPERATION_METHODS } from './client';
export type { CachedProductRequestOptions, ChatStreamOptions, ProductRequestOptions, ProductResponse } from './client';
export type { APIResponse, ClientOptions, Fetch, RequestOptions } from './core';
export {
  APIConnectionError,
  APIError,
  APITimeoutError,
  AuthenticationError,
  ConflictError,
  FinancialIntelligenceError,
  InternalServerError,
  JobFailedError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  RedirectRefusedError,
  UnprocessableEntityError,
  ValidationError,
} from './errors';
export type { RateLimitInfo } from './errors';
export type { WaitOptions } from './jobs';
export { SseParser } from './sse';
export type { SseMessage } from './sse';
export { AnalysisStream, ChatStream, JobEventStream, McpStream } from './streams';
export type { AnalysisEvent, ChatEvent, JobEvent, McpEvent, StreamEvent, StreamResponse } from './streams';
export type * from './types';
export { WebhookVerificationError, verifyWebhook } from './webhooks';
export type { VerifyWebhookOptions, WebhookHeaders } from './webhooks';
