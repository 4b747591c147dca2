import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import {
  type EventBus,
  type JobEventsTopic,
  type JobStateEventPayload,
  OBSERVER_BATCHING,
  type Subscription,
  jobsEventsTopic,
} from '@fin/events';
import { type Logger } from '@fin/log';

/** The Kafka consumer group of the jobs service's observer. */
const JOBS_CONSUMER = 'jobs-service';

export interface JobEventObserverOptions {
  bus: Pick<EventBus, 'subscribe'>;
  logger: Logger;
  topic?: JobEventsTopic;
  groupId?: string;
  /**
   * Called with every job.state event, in order per job (one partition per job id), at least once: what hangs off
   * the stream (an event stream to clients, webhooks) goes here. It must not write job state: the runner that
   * holds a job's lease already committed the state this event describes.
   */
  onEvent?: (event: JobStateEventPayload) => void | Promise<void>;
}

/**
 * Observes job state events. The state itself is written by the runner holding the job's lease (job-store), in
 * the same transaction as the event, so nothing here applies anything: the consumer logs each event and hands it
 * to `onEvent`, and the bus counts it (fin_events_handled_total{group="jobs-service"}). Thin on purpose. Without
 * an `onEvent` it joins no group at all: every event would cost its group a fetch and a decode for a debug line,
 * while the readers of job state (the event streams, webhooks, the status endpoint) have their own way to it.
 */
export function startJobEventObserver({
  bus,
  logger,
  topic = jobsEventsTopic,
  groupId = JOBS_CONSUMER,
  onEvent,
}: JobEventObserverOptions): Promise<Subscription> {
  if (onEvent === undefined) return Promise.resolve({ stop: () => Promise.resolve() });
  const log = logger.child({ component: 'job-events' });
  return bus.subscribe({
    topic,
    groupId,
    backoff: { initialMs: 200, maxMs: 10_000 },
    ...OBSERVER_BATCHING,
    payloadOnRead: true,
    handler: async (envelope) => {
      const event = envelope.payload;
      log.debug({ jobId: event.job_id, seq: event.seq, status: event.status, eventId: envelope.id }, 'job event');
      await onEvent(event);
    },
  });
}

export interface JobEventBroadcastOptions {
  bus: Pick<EventBus, 'subscribe'>;
  topic?: JobEventsTopic;
  /** Called with every job.state event published while the subscription runs (of a followed job); must not throw. */
  onEvent: (event: JobStateEventPayload) => void;
  /**
   * Whether anything here follows the job (an open event stream): the events of other jobs are passed over by
   * their key, without their payloads being parsed. Default: every job.
   */
  follows?: (jobId: string) => boolean;
}

/**
 * Every job.state event, to this process: a consumer group of its own (named after the host, unique per start), so
 * that each replica hears the events of every partition, whichever replica's observer (the shared group above)
 * owns them; a client's event stream may be served by any replica. The group is ephemeral: it starts at the
 * newest events and commits nothing, leaving nothing behind on the broker when the process stops. An event it
 * misses (while joining, or while the broker is away) is made up for by the streams reading their jobs again.
 */
export function startJobEventBroadcast({
  bus,
  topic = jobsEventsTopic,
  onEvent,
  follows = () => true,
}: JobEventBroadcastOptions): Promise<Subscription> {
  return bus.subscribe({
    topic,
    groupId: `jobs-streams.${hostname()}.${randomUUID().slice(0, 8)}`,
    ephemeral: true,
    batchWindowMs: OBSERVER_BATCHING.batchWindowMs,
    payloadOnRead: true,
    // The key of a job.state event is its job's id.
    handler: (envelope, { key }) => {
      if (key === null || follows(key)) onEvent(envelope.payload);
      return Promise.resolve();
    },
  });
}
