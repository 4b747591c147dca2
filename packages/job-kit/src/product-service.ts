// Starting a product service process (news, stock-report): the roles it runs, on the clients it is given or
// creates from its config. The API role is product-api.ts, the worker role product-worker.ts.
import { webhookTargetPolicy } from '@fin/customer-tools';
import { servicePool, sessionPoolOf, type Pool } from '@fin/db';
import { connectKafkaBus, createOutboxRelay, type EventBus, type JobType, type KafkaConfig } from '@fin/events';
import { createLifecycle, createResources, type Closer, type HandlerTable, type ServiceUnit } from '@fin/http';
import type { Logger } from '@fin/log';
import { createHotResults, DEFAULT_HOT_RESULTS_MAX_BYTES } from './hot-results';
import type { ProductHandlerDeps } from './product-api';
import type { ProductWorkerDeps } from './product-worker';
import type { JobWorker } from './worker';

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
  /** Jobs of the product one tenant may have running at once, across every worker. */
  tenantCap: number;
  /** How often a worker looks for jobs it was not woken for. */
  pollIntervalMs: number;
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
  /** Development only: callback_url may be an http://localhost receiver (customer-tools' variable). */
  WEBHOOK_ALLOW_LOCAL_HTTP?: boolean;
  /** Memory for cache hits answered without the database (hot-results.ts); 0: none. Default 32 MiB. */
  HOT_RESULTS_MAX_BYTES?: number;
};

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
  createHandlers(deps: ProductHandlerDeps): HandlerTable;
  createWorker(deps: ProductWorkerDeps<Engine>): JobWorker;
}

/**
 * The product as a unit: the roles this process runs (`settings.role`), the API (its handler), the worker, or
 * both. Every process also runs a standby-capable outbox relay, so job requests and events are published while any
 * process of the product is up. A worker-only unit has no handlers (and no server: `serves` is false).
 */
export async function createProductUnit<Engine extends Closable>(options: ProductServiceOptions<Engine>): Promise<ServiceUnit> {
  const { jobType, config, settings, logger } = options;
  const { role } = settings;
  // What the process does not share is made here, and closed after everything that uses it.
  const resources = createResources();
  const pool = await resources.ownOrShared(
    'database pool',
    options.pool,
    () => servicePool(config, { applicationName: `${jobType}-${role}`, logger }),
    (made) => made.end(),
  );
  const bus = await resources.ownOrShared(
    'event bus',
    options.bus,
    () => connectKafkaBus(config, logger),
    (made) => made.close(),
  );
  const lifecycle = createLifecycle();
  const engine =
    role === 'api'
      ? undefined
      : await resources.ownOrShared(
          'AI engine',
          options.engine,
          () => options.createEngine(pool),
          (made) => made.close(),
        );
  // The relay's leader lock and LISTEN are session state: on DATABASE_DIRECT_URL when the main URL is a pooler's
  // (a shared pool comes with its own setup, which has none).
  const session = sessionPoolOf(pool, {
    directUrl: options.pool ? undefined : config.DATABASE_DIRECT_URL,
    applicationName: `${jobType}-${role}`,
    onIdleError: (error) => logger.warn({ err: error }, 'idle direct database connection failed'),
  });
  if (session.pool !== pool) resources.own('direct database pool', session, (made) => made.close());
  const relay = createOutboxRelay({ pool: session.pool, bus, logger });
  // The API role's copies of cache hits, kept true by notifications on a LISTEN connection of their own.
  const hotResults =
    role === 'worker'
      ? undefined
      : createHotResults({ pool: session.pool, logger, maxBytes: config.HOT_RESULTS_MAX_BYTES ?? DEFAULT_HOT_RESULTS_MAX_BYTES });
  // Closed after the requests and the worker have stopped.
  const last: Closer[] = [
    { name: 'outbox relay', close: () => relay.stop() },
    ...(hotResults ? [{ name: 'hot results', close: () => hotResults.close() }] : []),
    ...resources.closers(),
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
        tenantCap: settings.tenantCap,
        pollIntervalMs: settings.pollIntervalMs,
        leaseMs: settings.leaseMs,
        drainTimeoutMs: settings.drainTimeoutMs,
      })
    : undefined;
  const closers: Closer[] = [...(worker ? [{ name: `${jobType} worker`, close: () => worker.stop() }] : []), ...last];
  const handlers =
    role === 'worker'
      ? {}
      : options.createHandlers({
          pool,
          logger,
          maxAttempts: settings.maxAttempts,
          callbackPolicy: webhookTargetPolicy(config),
          ...(hotResults ? { hotResults } : {}),
        });
  return {
    name: jobType,
    handlers,
    serves: role !== 'worker',
    readiness: async () => {
      await pool.query('SELECT 1');
    },
    lifecycle,
    // Making the unit starts nothing: the relay and the worker start here, before its port is opened.
    start: async () => {
      relay.start();
      await worker?.start();
    },
    closers,
  };
}
