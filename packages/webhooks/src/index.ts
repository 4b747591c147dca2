// @fin/webhooks: webhooks on job completion. Endpoints and the account's callback secret (store), the queue of
// deliveries fed by job events (consumer, queue), Standard Webhooks signing, and the dispatcher that sends them
// through the customer-tools executor with retries. See docs/products.md#webhooks.
export { DEFAULT_RETRY_SCHEDULE, retryDelayMs } from './backoff';
export { WEBHOOK_DEFAULTS, webhookSenderFromConfig, webhooksConfigShape, type WebhooksConfig } from './config';
export { startWebhookConsumer } from './consumer';
export { DEFAULT_PER_TARGET_CONCURRENCY, createWebhookDispatcher, type WebhookDispatcher } from './dispatcher';
export { hasCallbackSecret, queueJobEvent, registerCallback } from './queue';
export { newSigningSecret, signedHeaders } from './signing';
export { WebhookError, createWebhookStore, productsReadableWith, reencryptWebhookSecrets, type WebhookStore } from './store';
export { unreachableTargetReason } from './target';
