// The job-status service as a unit: HTTP endpoints (status and result, read from job-store), the observer of job
// state events, the lease reaper and an outbox relay.
// main.ts runs it on Kafka; a single-process setup can run it on the in-process bus with a shared pool.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Pool } from '@fin/db';
import { type EventBus, type OutboxRelayOptions, createOutboxRelay } from '@fin/events';
import { type Closer, type Lifecycle, closeStarted, createLifecycle, listen } from '@fin/http';
import { type Logger } from '@fin/log';
import { createApp } from './app';
import { type JobsConfig } from './config';
import { type JobEventObserverOptions, type JobEventsTopic, startJobEventObserver } from './consumer';
import { createJobQueries } from './job-queries';
import { createLeaseReaper } from './reaper';

export interface JobsServiceOptions {
  config: Pick<JobsConfig, 'PORT' | 'HOST' | 'INTERNAL_SIGNING_SECRET' | 'JOB_REAPER_INTERVAL_MS' | 'JOB_UNCLAIMED_TIMEOUT_MS'>;
  logger: Logger;
  bus: EventBus;
  pool: Pool;
  lifecycle?: Lifecycle;
  /**
   * Run an outbox relay, which publishes the reaper's job requests (default true). A process that already runs
   * a relay on the same database may pass false; relays elect one leader anyway.
   */
  outboxRelay?: boolean | Omit<OutboxRelayOptions, 'pool' | 'bus' | 'logger'>;
  /** Where job events are read (default jobs.events). */
  eventsTopic?: JobEventsTopic;
  /** Consumer group of the event observer (default jobs-service). */
  groupId?: string;
  /** Handed every job.state event the observer receives (see startJobEventObserver). */
  onJobEvent?: JobEventObserverOptions['onEvent'];
}

export interface JobsService {
  server: Server;
  /** Where the server listens, e.g. http://127.0.0.1:8085 (PORT 0 picks a free port). */
  url: string;
  lifecycle: Lifecycle;
  /**
   * In shutdown order, after the HTTP server stopped: event observer, lease reaper, outbox relay. The caller
   * then closes the bus and the pool it passed in (createShutdown in main.ts).
   */
  closers: Closer[];
}

export async function startJobsService({
  config,
  logger,
  bus,
  pool,
  lifecycle = createLifecycle(),
  outboxRelay = true,
  eventsTopic,
  groupId,
  onJobEvent,
}: JobsServiceOptions): Promise<JobsService> {
  const closers: Closer[] = [];
  try {
    const consumer = await startJobEventObserver({
      bus,
      logger,
      ...(eventsTopic === undefined ? {} : { topic: eventsTopic }),
      ...(groupId === undefined ? {} : { groupId }),
      ...(onJobEvent === undefined ? {} : { onEvent: onJobEvent }),
    });
    closers.push({ name: 'job event observer', close: () => consumer.stop() });

    const reaper = createLeaseReaper({
      pool,
      logger,
      intervalMs: config.JOB_REAPER_INTERVAL_MS,
      unclaimedTimeoutMs: config.JOB_UNCLAIMED_TIMEOUT_MS,
    });
    reaper.start();
    closers.push({ name: 'lease reaper', close: () => reaper.stop() });

    if (outboxRelay !== false) {
      const relay = createOutboxRelay({ pool, bus, logger, ...(outboxRelay === true ? {} : outboxRelay) });
      relay.start();
      closers.push({ name: 'outbox relay', close: () => relay.stop() });
    }

    const app = createApp({
      logger,
      queries: createJobQueries(pool),
      signingSecret: config.INTERNAL_SIGNING_SECRET,
      readiness: async () => {
        await pool.query('SELECT 1');
      },
      lifecycle,
    });
    const server = await listen(app, config.PORT, config.HOST);
    const { port } = server.address() as AddressInfo;
    const url = `http://${config.HOST}:${port}`;
    logger.info({ url }, 'listening');
    return { server, url, lifecycle, closers };
  } catch (error) {
    await closeStarted([...closers].reverse());
    throw error;
  }
}
