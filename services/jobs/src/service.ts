// The job-status service as a unit: HTTP endpoints (status and result, read from job-store), the observer of job
// state events, the lease reaper and an outbox relay.
// main.ts runs it on Kafka with a pool of its own; a single-process setup or a test can hand it a bus (the
// in-process one) and a shared pool.
import { servicePool, sessionPoolOf, type Pool } from '@fin/db';
import {
  connectKafkaBus,
  createConsumerLagMonitor,
  createKafka,
  createOutboxRelay,
  kafkaClientConfig,
  type EventBus,
  type JobEventsTopic,
  type OutboxRelayOptions,
} from '@fin/events';
import { createLifecycle, createResources, type Closer, type Lifecycle, type ServiceDefinition, type ServiceUnit } from '@fin/http';
import type { Logger } from '@fin/log';
import { createJobsHandlers } from './app';
import { jobsConfigShape, type JobsConfig } from './config';
import { startJobEventBroadcast, startJobEventObserver, type JobEventObserverOptions } from './consumer';
import { createJobGauges } from './job-gauges';
import { createJobQueries } from './job-queries';
import { createJobStreams } from './job-streams';
import { createLeaseReaper } from './reaper';
import { startWebhooks } from './webhooks';

/**
 * What the job-status service is given besides its config: the pool and the bus a process (runSystem, a test)
 * shares, each made from the config when absent, and how its observer is wired.
 */
interface JobsShared {
  pool: Pool;
  bus: EventBus;
  /**
   * Run an outbox relay, which publishes the reaper's job requests (default true). A process that already runs
   * a relay on the same database may pass false; relays elect one leader anyway.
   */
  outboxRelay: boolean | Omit<OutboxRelayOptions, 'pool' | 'bus' | 'logger'>;
  /** Where job events are read (default jobs.events). */
  eventsTopic: JobEventsTopic;
  /** Consumer group of the event observer (default jobs-service). */
  groupId: string;
  /** Handed every job.state event the observer receives (see startJobEventObserver). */
  onJobEvent: JobEventObserverOptions['onEvent'];
}

type JobsServiceOptions = Partial<JobsShared> & { config: JobsConfig; logger: Logger };

/**
 * The job-status service as a unit. Its closers, in shutdown order after the requests stopped: the job event
 * streams' subscription, event observer, consumer lag monitor, lease reaper, job gauges, outbox relay, then the
 * bus and the pool when the service created them. Its lifecycle's beginShutdown also ends the open job event
 * streams (clients reconnect to another replica).
 */
async function createJobsUnit(options: JobsServiceOptions): Promise<ServiceUnit> {
  const { config, logger, outboxRelay = true, eventsTopic, groupId, onJobEvent } = options;
  // What the process does not share is made here, and closed after everything that uses it.
  const resources = createResources();
  const pool = await resources.ownOrShared(
    'database pool',
    options.pool,
    () => servicePool(config, { applicationName: 'jobs', logger }),
    (made) => made.end(),
  );
  // The relay's leader lock and LISTEN are session state: on DATABASE_DIRECT_URL when the main URL is a pooler's
  // (a shared pool comes with its own setup, which has none).
  const session = sessionPoolOf(pool, {
    directUrl: options.pool || outboxRelay === false ? undefined : config.DATABASE_DIRECT_URL,
    applicationName: 'jobs',
    onIdleError: (error) => logger.warn({ err: error }, 'idle direct database connection failed'),
  });
  if (session.pool !== pool) resources.own('direct database pool', session, (made) => made.close());
  const bus = await resources.ownOrShared(
    'event bus',
    options.bus,
    () => connectKafkaBus(config, logger),
    (made) => made.close(),
  );
  const closers: Closer[] = [];
  /** What runs on a timer of its own (sweeps, gauges, the relay): started by the unit's start, not as it is made. */
  const periodic: { start(): void }[] = [];
  const streams = createJobStreams({
    db: pool,
    logger,
    keepAliveMs: config.JOB_EVENTS_KEEP_ALIVE_MS,
    maxStreams: config.JOB_EVENTS_MAX_STREAMS,
    maxStreamsPerTenant: config.JOB_EVENTS_MAX_STREAMS_PER_ACCOUNT,
  });
  // Beginning the shutdown ends the streams, which would otherwise hold the HTTP drain until their jobs finish.
  const base = createLifecycle();
  const lifecycle: Lifecycle = {
    get shuttingDown() {
      return base.shuttingDown;
    },
    beginShutdown() {
      base.beginShutdown();
      streams.close();
    },
  };
  const broadcast = await startJobEventBroadcast({
    bus,
    ...(eventsTopic === undefined ? {} : { topic: eventsTopic }),
    onEvent: (event) => streams.onEvent(event),
    follows: (jobId) => streams.follows(jobId),
  });
  closers.push({ name: 'job event streams subscription', close: () => broadcast.stop() });
  const consumer = await startJobEventObserver({
    bus,
    logger,
    ...(eventsTopic === undefined ? {} : { topic: eventsTopic }),
    ...(groupId === undefined ? {} : { groupId }),
    ...(onJobEvent === undefined ? {} : { onEvent: onJobEvent }),
  });
  closers.push({ name: 'job event observer', close: () => consumer.stop() });
  closers.push(...(await startWebhooks({ config, bus, pool, logger, ...(eventsTopic === undefined ? {} : { topic: eventsTopic }) })));

  // Every consumer group's lag, read from the broker: reported here, by a service that is always up, rather than
  // by the consumers, which cannot report their own stall (docs/observability.md#consumer-lag).
  if (!options.bus && config.KAFKA_LAG_INTERVAL_MS > 0) {
    const lag = createConsumerLagMonitor({
      kafka: createKafka({ logger, ...kafkaClientConfig(config) }),
      logger,
      topicPrefix: config.KAFKA_TOPIC_PREFIX,
      intervalMs: config.KAFKA_LAG_INTERVAL_MS,
    });
    periodic.push(lag);
    closers.push({ name: 'consumer lag monitor', close: () => lag.stop() });
  }

  const reaper = createLeaseReaper({
    pool,
    logger,
    intervalMs: config.JOB_REAPER_INTERVAL_MS,
    unclaimedTimeoutMs: config.JOB_UNCLAIMED_TIMEOUT_MS,
  });
  periodic.push(reaper);
  closers.push({ name: 'lease reaper', close: () => reaper.stop() });

  const gauges = createJobGauges({ pool, logger });
  periodic.push(gauges);
  closers.push({ name: 'job gauges', close: () => gauges.stop() });

  if (outboxRelay !== false) {
    const relay = createOutboxRelay({ pool: session.pool, bus, logger, ...(outboxRelay === true ? {} : outboxRelay) });
    periodic.push(relay);
    closers.push({ name: 'outbox relay', close: () => relay.stop() });
  }
  closers.push(...resources.closers());

  return {
    name: 'jobs',
    handlers: createJobsHandlers({
      queries: createJobQueries(pool, { finishedStatusMaxBytes: config.JOBS_FINISHED_STATUS_MAX_BYTES }),
      streams,
    }),
    readiness: async () => {
      await pool.query('SELECT 1');
    },
    lifecycle,
    // Its consumers subscribed above, as the unit was made (their events wait in Kafka until then); the sweeps, the
    // gauges and the relay start here, before its port is opened.
    start: () => {
      for (const part of periodic) part.start();
      return Promise.resolve();
    },
    closers,
  };
}

/** The job-status service: runService runs it as a process, runSystem beside the others on shared resources. */
export const jobsService: ServiceDefinition<typeof jobsConfigShape, JobsShared> = {
  name: 'jobs',
  configShape: jobsConfigShape,
  unit: createJobsUnit,
};
