// Webhooks run in the jobs service: a process that is always up and already reads jobs.events. The consumer
// (group `webhooks`, its own offsets) queues deliveries in Postgres; the dispatcher sends them. Both are shared by
// every replica: the deliveries are unique per target and event, and claimed with SKIP LOCKED under a lease.
import type { Pool } from '@fin/db';
import type { EventBus, JobEventsTopic } from '@fin/events';
import type { Closer } from '@fin/http';
import type { Logger } from '@fin/log';
import {
  WEBHOOK_DEFAULTS,
  createWebhookDispatcher,
  startWebhookConsumer,
  webhookSenderFromConfig,
  type WebhooksConfig,
} from '@fin/webhooks';

/** Starts the webhook consumer and, when the key that opens signing secrets is configured, the dispatcher. */
export async function startWebhooks({
  config,
  bus,
  pool,
  logger,
  topic,
}: {
  config: Partial<WebhooksConfig>;
  bus: Pick<EventBus, 'subscribe'>;
  pool: Pool;
  logger: Logger;
  topic?: JobEventsTopic;
}): Promise<Closer[]> {
  // A config without the webhook variables (a test handing in its settings) takes their defaults.
  const settings = { ...WEBHOOK_DEFAULTS, ...definedOnly(config) };
  const closers: Closer[] = [];
  const sender = webhookSenderFromConfig(settings, logger);
  const dispatcher =
    sender === null
      ? undefined
      : createWebhookDispatcher({
          pool,
          logger,
          ...sender,
          intervalMs: settings.WEBHOOK_DISPATCH_INTERVAL_MS,
          timeoutMs: settings.WEBHOOK_TIMEOUT_MS,
          maxInFlight: settings.WEBHOOK_MAX_IN_FLIGHT,
          perTargetConcurrency: settings.WEBHOOK_ENDPOINT_CONCURRENCY,
          perTenantConcurrency: settings.WEBHOOK_ACCOUNT_CONCURRENCY,
          hostAttemptsPerMinute: settings.WEBHOOK_HOST_ATTEMPTS_PER_MINUTE,
          retry: { baseMs: settings.WEBHOOK_RETRY_BASE_MS, maxMs: settings.WEBHOOK_RETRY_MAX_DELAY_MS },
        });
  const consumer = await startWebhookConsumer({
    bus,
    pool,
    logger,
    retryWindowMs: settings.WEBHOOK_RETRY_WINDOW_MS,
    ...(topic === undefined ? {} : { topic }),
    ...(dispatcher === undefined ? {} : { onQueued: () => dispatcher.wake() }),
  });
  closers.push({ name: 'webhook consumer', close: () => consumer.stop() });
  if (dispatcher !== undefined && sender !== null) {
    dispatcher.start();
    closers.push({ name: 'webhook dispatcher', close: () => dispatcher.stop() });
    closers.push({ name: 'webhook connections', close: () => sender.executor.close() });
  }
  return closers;
}

function definedOnly<T extends object>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as Partial<T>;
}
