import { type Pool } from '@fin/db';
import { type EventBus, type Subscription, type TopicDefinition, jobsEventsTopic } from '@fin/events';
import { type Logger } from '@fin/log';
import { JOBS_CONSUMER, applyJobEvent } from './apply';

/** jobs.events, or a topic of the same event type (tests use their own). */
export type JobEventsTopic = TopicDefinition<string, (typeof jobsEventsTopic)['eventType'], (typeof jobsEventsTopic)['schema']>;

export interface JobEventConsumerOptions {
  bus: Pick<EventBus, 'subscribe'>;
  pool: Pool;
  logger: Logger;
  topic?: JobEventsTopic;
  groupId?: string;
}

/**
 * Handler attempts before an event is dead-lettered. Malformed events never reach the handler (the bus
 * dead-letters them at once), so a failing handler means the database is unreachable. A dead-lettered terminal
 * event would leave its job running with no lease for the reaper to notice, so the consumer keeps retrying
 * (backoff up to 10 s: several minutes) rather than give up quickly.
 */
const JOB_EVENT_MAX_ATTEMPTS = 50;

/** Subscribes to job state events and applies each one (see applyJobEvent). Thin on purpose. */
export function startJobEventConsumer({ bus, pool, logger, topic = jobsEventsTopic, groupId = JOBS_CONSUMER }: JobEventConsumerOptions): Promise<Subscription> {
  const log = logger.child({ component: 'job-events' });
  return bus.subscribe({
    topic,
    groupId,
    maxAttempts: JOB_EVENT_MAX_ATTEMPTS,
    backoff: { initialMs: 200, maxMs: 10_000 },
    handler: async (envelope) => {
      await applyJobEvent(pool, envelope, { logger: log });
    },
  });
}
