// Starting a product service process (news, stock-report): the roles it runs, on the clients it is given or
// creates from its config. The API role is product-api.ts, the worker role product-worker.ts.
import type { Server } from 'node:http';
import { createPool, sessionPoolOf, type Pool } from '@fin/db';
import { connectKafkaBus, createOutboxRelay, type EventBus, type JobType, type KafkaConfig } from '@fin/events';
import { createLifecycle, listenOrClose, type Closer, type createServiceApp, type Lifecycle } from '@fin/http';
import type { Logger } from '@fin/log';
import type { ProductAppDeps } from './product-api';
import type { ProductWorkerDeps } from './product-worker';
import type { JobWorker } from './worker';

type ServiceApp = ReturnType<typeof createServiceApp>;

/** api: answers the product's endpoint; worker: runs its jobs; all: both in one process. */
export type ProductRole = 'api' | 'worker' | 'all';

/**
 * The product's own settings, which each service reads from its own variables (`NEWS_ROLE`,
 * `STOCK_REPORT_TIME_LIMIT_MS`, …) and hands over by name.
 */
export interface ProductSettings {
  role: ProductRole;
  /** A run that takes longer fails (`gateway_timeout`). */
  timeLimitMs: number;
  /** Jobs one worker process runs at once. */
  workerConcurrency: number;
  /** Attempts per job: a dead worker or a temporary model error uses one. */
  maxAttempts: number;
  /** How long a worker's claim on a job lasts without renewal. */
  leaseMs: number;
  /** On shutdown, how long the worker's jobs in flight may still finish before they are handed back. */
  drainTimeoutMs: number;
}

/** The variables every product service reads under the same names: where it listens and what it connects to. */
export type ProductServiceConfig = KafkaConfig & {
  PORT: number;
  HOST: string;
  DATABASE_URL: string;
  DATABASE_POOL_MAX: number;
  DATABASE_DIRECT_URL?: string | undefined;
  INTERNAL_SIGNING_SECRET: string;
  /** Tests only: callback_url may name a loopback address (customer-tools' variable, read by every product). */
  CUSTOMER_TOOLS_ALLOW_LOOPBACK?: boolean;
};

export interface ProductService {
  lifecycle: Lifecycle;
  /** The HTTP server (API role). */
  server?: Server;
  /** In shutdown order, after the HTTP server has drained. */
  closers: Closer[];
}

interface Closable {
  close(): Promise<void>;
}

/** Resources a single-process setup shares between services; each is created from config when absent. */
export interface SharedResources<Engine> {
  pool?: Pool;
  bus?: EventBus;
  engine?: Engine;
}

export interface ProductServiceOptions<Engine extends Closable> extends SharedResources<Engine> {
  jobType: JobType;
  config: ProductServiceConfig;
  settings: ProductSettings;
  logger: Logger;
  /** The AI engine, created only for the worker role (and only when none is shared), on the process's pool. */
  createEngine(pool: Pool): Promise<Engine>;
  createApp(deps: ProductAppDeps): ServiceApp;
  createWorker(deps: ProductWorkerDeps<Engine>): JobWorker;
}

/**
 * Starts the roles this process runs (`settings.role`): the API, the worker, or both. Every process also runs a
 * standby-capable outbox relay, so job requests and events are published while any process of the product is up.
 */
export async function startProductService<Engine extends Closable>(options: ProductServiceOptions<Engine>): Promise<ProductService> {
  const { jobType, config, settings, logger } = options;
  const { role } = settings;
  const pool =
    options.pool ??
    createPool({ connectionString: config.DATABASE_URL, applicationName: `${jobType}-${role}`, max: config.DATABASE_POOL_MAX });
  const bus = options.bus ?? (await connectKafkaBus(config, logger));
  const lifecycle = createLifecycle();
  const engine = role === 'api' ? undefined : (options.engine ?? (await options.createEngine(pool)));
  // The relay's leader lock and LISTEN are session state: on DATABASE_DIRECT_URL when the main URL is a pooler's
  // (a shared pool comes with its own setup, which has none).
  const session = sessionPoolOf(pool, {
    directUrl: options.pool ? undefined : config.DATABASE_DIRECT_URL,
    applicationName: `${jobType}-${role}`,
  });
  const relay = createOutboxRelay({ pool: session.pool, bus, logger });
  relay.start();
  // Closed after the HTTP server and the worker have stopped.
  const last: Closer[] = [
    ...(engine && !options.engine ? [{ name: 'AI engine', close: () => engine.close() }] : []),
    { name: 'outbox relay', close: () => relay.stop() },
    ...(options.bus ? [] : [{ name: 'event bus', close: () => bus.close() }]),
    ...(session.pool === pool ? [] : [{ name: 'direct database pool', close: () => session.close() }]),
    ...(options.pool ? [] : [{ name: 'database pool', close: () => pool.end() }]),
  ];
  // A worker that never started stops at once, so it is in the list before its start.
  const worker = engine
    ? options.createWorker({
        pool,
        bus,
        engine,
        logger,
        timeLimitMs: settings.timeLimitMs,
        concurrency: settings.workerConcurrency,
        leaseMs: settings.leaseMs,
        drainTimeoutMs: settings.drainTimeoutMs,
      })
    : undefined;
  const closers: Closer[] = [...(worker ? [{ name: `${jobType} worker`, close: () => worker.stop() }] : []), ...last];
  const app =
    role === 'worker'
      ? undefined
      : options.createApp({
          pool,
          logger,
          signingSecret: config.INTERNAL_SIGNING_SECRET,
          lifecycle,
          maxAttempts: settings.maxAttempts,
          callbackPolicy: { allowLoopback: config.CUSTOMER_TOOLS_ALLOW_LOOPBACK ?? false },
        });
  const { server } = await listenOrClose(app, {
    port: config.PORT,
    host: config.HOST,
    logger,
    started: closers,
    before: () => worker?.start() ?? Promise.resolve(),
    fields: { role },
  });
  return { lifecycle, server, closers };
}
