// Turns job state events into queued deliveries. A consumer group of its own (`webhooks`), beside the jobs
// service's observer: its offsets move only once the delivery rows are committed, and nothing it does (it never
// calls a receiver) can hold up another reader of jobs.events. Sending is the dispatcher's job.
import type { Pool } from '@fin/db';
import { jobsEventsTopic, OBSERVER_BATCHING, type EventBus, type JobEventsTopic, type Subscription } from '@fin/events';
import type { Logger } from '@fin/log';
import { queueJobEvent } from './queue';

const WEBHOOKS_CONSUMER_GROUP = 'webhooks';

export interface WebhookConsumerOptions {
  bus: Pick<EventBus, 'subscribe'>;
  pool: Pool;
  logger: Logger;
  topic?: JobEventsTopic;
  groupId?: string;
  retryWindowMs?: number;
  /** Called after deliveries were queued (the dispatcher's wake). */
  onQueued?: () => void;
}

export function startWebhookConsumer({
  bus,
  pool,
  logger,
  topic = jobsEventsTopic,
  groupId = WEBHOOKS_CONSUMER_GROUP,
  retryWindowMs,
  onQueued,
}: WebhookConsumerOptions): Promise<Subscription> {
  const log = logger.child({ component: 'webhook-consumer' });
  return bus.subscribe({
    topic,
    groupId,
    backoff: { initialMs: 200, maxMs: 10_000 },
    // Deliveries are unique per target and event, so an event delivered again queues nothing twice.
    ...OBSERVER_BATCHING,
    payloadOnRead: true,
    handler: async (envelope) => {
      const event = envelope.payload;
      if (event.status !== 'completed' && event.status !== 'failed') return;
      const queued = await queueJobEvent(
        pool,
        {
          jobId: event.job_id,
          jobType: event.job_type,
          status: event.status,
          at: new Date(envelope.occurredAt),
          result: event.result ?? null,
          error: event.error ?? null,
          usage: event.usage,
        },
        retryWindowMs === undefined ? {} : { retryWindowMs },
      );
      if (queued > 0) {
        log.debug({ jobId: event.job_id, status: event.status, queued }, 'webhook deliveries queued');
        onQueued?.();
      }
    },
  });
}
