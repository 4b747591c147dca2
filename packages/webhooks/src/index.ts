// @fin/webhooks: webhooks on job completion. Endpoints and the account's callback secret (store), the queue of
// deliveries fed by job events (consumer, queue), Standard Webhooks signing, and the dispatcher that sends them
// through the customer-tools executor with retries. See docs/products.md#webhooks.
export { DEFAULT_RETRY_SCHEDULE, retryDelayMs, type RetrySchedule } from './backoff';
export { WEBHOOK_DEFAULTS, webhookSenderFromConfig, webhooksConfigShape, type WebhooksConfig } from './config';
export { WEBHOOKS_CONSUMER_GROUP, startWebhookConsumer, type WebhookConsumerOptions } from './consumer';
export {
  DEFAULT_HOST_ATTEMPTS_PER_MINUTE,
  DEFAULT_MAX_IN_FLIGHT,
  DEFAULT_PER_TARGET_CONCURRENCY,
  DEFAULT_PER_TENANT_CONCURRENCY,
  createWebhookDispatcher,
  type DispatcherOptions,
  type WebhookDispatcher,
} from './dispatcher';
export { MAX_INLINE_RESULT_BYTES, jobEventBody, type TerminalJob } from './event-body';
export { hasCallbackSecret, queueJobEvent, registerCallback } from './queue';
export { newSigningSecret, signedHeaders } from './signing';
export {
  DEFAULT_RETRY_WINDOW_MS,
  SECRET_ROTATION_OVERLAP_MS,
  WebhookError,
  createWebhookStore,
  productsReadableWith,
  reencryptWebhookSecrets,
  type Reach,
  type RotatedSecret,
  type WebhookStore,
  type WebhookStoreOptions,
} from './store';
export { unreachableTargetReason } from './target';
