import type { Server } from 'node:http';
import { createAiEngine, type AiEngine } from '@fin/ai';
import { createPool, type Pool } from '@fin/db';
import { connectKafkaBus, createOutboxRelay, type EventBus, type OutboxRelay } from '@fin/events';
import { createLifecycle, type Closer, type Lifecycle } from '@fin/http';
import type { JobWorker } from '@fin/job-kit';
import type { Logger } from '@fin/log';
import { createApp } from './app';
import type { NewsConfig } from './config';
import { createNewsWorker } from './worker';

export interface NewsService {
  lifecycle: Lifecycle;
  /** The HTTP server (API role). */
  server?: Server;
  /** In shutdown order, after the HTTP server has drained. */
  closers: Closer[];
}

export interface NewsServiceOptions {
  config: NewsConfig;
  logger: Logger;
  /** Shared resources in single-process mode; created from config otherwise. */
  pool?: Pool;
  bus?: EventBus;
  engine?: AiEngine;
}

/**
 * Starts the roles this process runs (NEWS_ROLE): the API, the worker, or both. Every process also runs a
 * standby-capable outbox relay, so job requests and events are published while any news process is up.
 */
export async function startNewsService({ config, logger, ...shared }: NewsServiceOptions): Promise<NewsService> {
  const ownPool = !shared.pool;
  const pool = shared.pool ?? createPool({ connectionString: config.DATABASE_URL, applicationName: `news-${config.NEWS_ROLE}`, max: 10 });
  const bus = shared.bus ?? (await connectKafkaBus(config, logger));
  const ownBus = !shared.bus;
  const lifecycle = createLifecycle();
  const closers: Closer[] = [];

  let worker: JobWorker | undefined;
  let engine = shared.engine;
  if (config.NEWS_ROLE !== 'api') {
    engine ??= await createAiEngine({ config, logger });
    worker = createNewsWorker({
      pool,
      bus,
      engine,
      logger,
      timeLimitMs: config.NEWS_TIME_LIMIT_MS,
      concurrency: config.NEWS_WORKER_CONCURRENCY,
      leaseMs: config.NEWS_LEASE_MS,
    });
    await worker.start();
    closers.push({ name: 'news worker', close: () => worker!.stop() });
    if (!shared.engine) closers.push({ name: 'AI engine', close: () => engine!.close() });
  }

  const relay: OutboxRelay = createOutboxRelay({ pool, bus, logger });
  relay.start();
  closers.push({ name: 'outbox relay', close: () => relay.stop() });
  if (ownBus) closers.push({ name: 'event bus', close: () => bus.close() });
  if (ownPool) closers.push({ name: 'database pool', close: () => pool.end() });

  let server: Server | undefined;
  if (config.NEWS_ROLE !== 'worker') {
    const app = createApp({ pool, logger, signingSecret: config.INTERNAL_SIGNING_SECRET, lifecycle, maxAttempts: config.NEWS_MAX_ATTEMPTS });
    server = await new Promise<Server>((resolve) => {
      const listening = app.listen(config.PORT, config.HOST, () => resolve(listening));
    });
    logger.info({ url: `http://${config.HOST}:${config.PORT}`, role: config.NEWS_ROLE }, 'news service listening');
  }
  return { lifecycle, server, closers };
}
