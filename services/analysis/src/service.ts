import { createAiEngine, modelBudgetFromConfig, type AiEngine } from '@fin/ai';
import { createCustomerToolsFromConfig, webhookTargetPolicy } from '@fin/customer-tools';
import { servicePool, sessionPoolOf, type Pool } from '@fin/db';
import { edgarOnline, filingsSource, type FilingsSource } from '@fin/edgar';
import { connectKafkaBus, createOutboxRelay, type EventBus } from '@fin/events';
import { createResources, type Closer, type HandlerTable, type ServiceDefinition, type ServiceUnit } from '@fin/http';
import type { Logger } from '@fin/log';
import { createAnalysisHandlers } from './app';
import { analysisConfigShape, type AnalysisConfig } from './config';
import { createJobWatcher } from '@fin/job-store';
import { createOpenRequests, lifecycleStopping } from './open-requests';
import { createAnalysisWorker } from './worker';

/** What the analysis service runs on: each shared by the process (runSystem, tests) or made from its config. */
interface AnalysisShared {
  pool: Pool;
  bus: EventBus;
  engine: AiEngine;
  /** SEC EDGAR, for the engine's sec_filings tool (analyses read 10-K/10-Q sections and 8-K items). */
  filings: FilingsSource;
}

interface AnalysisServiceOptions extends Partial<AnalysisShared> {
  config: AnalysisConfig;
  logger: Logger;
}

/**
 * The roles this process runs (ANALYSIS_ROLE) as a unit: the API (which also runs streamed analyses, so it has an
 * AI engine too), the worker, or both. Every process also runs a standby-capable outbox relay, so job requests
 * and events are published while any analysis process is up.
 */
async function createAnalysisUnit({ config, logger, ...shared }: AnalysisServiceOptions): Promise<ServiceUnit> {
  const role = config.ANALYSIS_ROLE;
  // What the process does not share is made here, and closed after everything that uses it.
  const resources = createResources();
  const pool = await resources.ownOrShared(
    'database pool',
    shared.pool,
    () => servicePool(config, { applicationName: `analysis-${role}`, logger }),
    (made) => made.end(),
  );
  const bus = await resources.ownOrShared(
    'event bus',
    shared.bus,
    () => connectKafkaBus(config, logger),
    (made) => made.close(),
  );
  // Both roles run analyses, so both read filings (the sec_filings tool): the shared SEC EDGAR source, or one made on
  // the unit's pool, EDGAR itself online (one request budget for the deployment, kept in the database), the bundled
  // sample offline (EDGAR_OFFLINE; unset, as the AI).
  const engine = await resources.ownOrShared(
    'AI engine',
    shared.engine,
    () =>
      createAiEngine({
        config,
        logger,
        customerTools: createCustomerToolsFromConfig(config, { pool, logger }),
        budget: modelBudgetFromConfig(config, { pool, logger }),
        filings:
          shared.filings ??
          filingsSource({
            online: edgarOnline(config),
            userAgent: config.EDGAR_USER_AGENT,
            baseUrl: config.EDGAR_BASE_URL,
            dataUrl: config.EDGAR_DATA_URL,
            pool,
            logger,
          }),
      }),
    (made) => made.close(),
  );
  const closers: Closer[] = [];
  const openRequests = createOpenRequests({ streamGraceMs: config.ANALYSIS_STREAM_SHUTDOWN_GRACE_MS });
  const lifecycle = lifecycleStopping(openRequests);
  // The relay's leader lock and the watcher's LISTEN are session state: on DATABASE_DIRECT_URL when the main URL is a
  // pooler's (a shared pool comes with its own setup, which has none).
  const session = sessionPoolOf(pool, {
    directUrl: shared.pool ? undefined : config.DATABASE_DIRECT_URL,
    applicationName: `analysis-${role}`,
    onIdleError: (error) => logger.warn({ err: error }, 'idle direct database connection failed'),
  });
  if (session.pool !== pool) resources.own('direct database pool', session, (made) => made.close());
  const relay = createOutboxRelay({ pool: session.pool, bus, logger });
  // Closed after the worker and the streams have stopped (their last events are in the outbox by then).
  const last: Closer[] = [{ name: 'outbox relay', close: () => relay.stop() }, ...resources.closers()];

  // A worker that never started stops at once, so it is in the list before its start.
  const worker =
    role === 'api'
      ? undefined
      : createAnalysisWorker({
          pool,
          bus,
          engine,
          logger,
          timeLimitMs: config.ANALYSIS_TIME_LIMIT_MS,
          concurrency: config.ANALYSIS_WORKER_CONCURRENCY,
          tenantCap: config.ANALYSIS_WORKER_TENANT_CAP,
          pollIntervalMs: config.WORKER_POLL_INTERVAL_MS,
          leaseMs: config.ANALYSIS_LEASE_MS,
          drainTimeoutMs: config.WORKER_DRAIN_TIMEOUT_MS,
        });
  if (worker) closers.push({ name: 'analysis worker', close: () => worker.stop() });

  let handlers: HandlerTable = {};
  if (role !== 'worker') {
    const watcher = createJobWatcher({ pool: session.pool, logger, pollIntervalMs: config.ANALYSIS_JOB_POLL_MS });
    closers.push({ name: 'job watcher', close: () => watcher.close() });
    handlers = createAnalysisHandlers({
      pool,
      logger,
      engine,
      watcher,
      openRequests,
      lifecycle,
      callbackPolicy: webhookTargetPolicy(config),
      settings: {
        inlineWaitMs: config.ANALYSIS_INLINE_WAIT_MS,
        timeLimitMs: config.ANALYSIS_TIME_LIMIT_MS,
        leaseMs: config.ANALYSIS_LEASE_MS,
        maxAttempts: config.ANALYSIS_MAX_ATTEMPTS,
        heartbeatMs: config.ANALYSIS_STREAM_HEARTBEAT_MS,
        doneWaitMs: config.ANALYSIS_STREAM_DONE_WAIT_MS,
      },
    });
  }
  closers.push(...last);
  return {
    name: 'analysis',
    handlers,
    serves: role !== 'worker',
    readiness: async () => {
      await pool.query('SELECT 1');
    },
    // Its beginShutdown also ends the requests held open (inline waits at once, streams after their grace period).
    lifecycle,
    // Making the unit starts nothing: the relay and the worker start here, before its port is opened.
    start: async () => {
      relay.start();
      await worker?.start();
    },
    closers,
  };
}

/** Streams get their grace period inside the drain: one that is not shorter cuts a stream off before its final event. */
function checkConfig(config: AnalysisConfig, logger: Logger): void {
  if (config.ANALYSIS_STREAM_SHUTDOWN_GRACE_MS >= config.SHUTDOWN_DRAIN_TIMEOUT_MS) {
    logger.warn(
      'ANALYSIS_STREAM_SHUTDOWN_GRACE_MS is not below SHUTDOWN_DRAIN_TIMEOUT_MS: a stream still open at the drain deadline is cut off without its final event',
    );
  }
}

/** The analysis service: runService runs it as a process (ANALYSIS_ROLE), runSystem beside the others. */
export const analysisService: ServiceDefinition<typeof analysisConfigShape, AnalysisShared> = {
  name: 'analysis',
  configShape: analysisConfigShape,
  checkConfig,
  unit: createAnalysisUnit,
};
