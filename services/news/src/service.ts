import { createAiEngine, modelBudgetFromConfig, type AiEngine } from '@fin/ai';
import { createCustomerToolsFromConfig } from '@fin/customer-tools';
import { edgarOnline, filingsSource, type FilingsSource } from '@fin/edgar';
import type { ServiceDefinition, ServiceUnit } from '@fin/http';
import { createProductUnit, type SharedResources } from '@fin/job-kit';
import type { Logger } from '@fin/log';
import { createNewsHandlers } from './app';
import { newsConfigShape, type NewsConfig } from './config';
import { createNewsWorker } from './worker';

/** What one process shares with the service: the product's resources, and SEC EDGAR for the engine's sec_filings tool. */
export interface NewsShared extends SharedResources<AiEngine> {
  filings?: FilingsSource;
}

export interface NewsServiceOptions extends NewsShared {
  config: NewsConfig;
  logger: Logger;
}

/** The roles this process runs (NEWS_ROLE) as a unit; shared resources in single-process mode, else from config. */
function createNewsUnit({ config, logger, filings, ...shared }: NewsServiceOptions): Promise<ServiceUnit> {
  return createProductUnit({
    ...shared,
    jobType: 'news',
    config,
    settings: {
      role: config.NEWS_ROLE,
      timeLimitMs: config.NEWS_TIME_LIMIT_MS,
      workerConcurrency: config.NEWS_WORKER_CONCURRENCY,
      tenantCap: config.NEWS_WORKER_TENANT_CAP,
      pollIntervalMs: config.WORKER_POLL_INTERVAL_MS,
      maxAttempts: config.NEWS_MAX_ATTEMPTS,
      leaseMs: config.NEWS_LEASE_MS,
      drainTimeoutMs: config.WORKER_DRAIN_TIMEOUT_MS,
    },
    logger,
    // News runs may cite companies' 8-K items (the sec_filings tool): the shared SEC EDGAR source, or one made on the
    // unit's pool, EDGAR itself online (one request budget for the deployment, kept in the database), the bundled
    // sample offline (EDGAR_OFFLINE; unset, as the AI). Made with the engine, so only the worker role reads EDGAR.
    createEngine: (pool) =>
      createAiEngine({
        config,
        logger,
        customerTools: createCustomerToolsFromConfig(config, { pool, logger }),
        budget: modelBudgetFromConfig(config, { pool, logger }),
        filings:
          filings ??
          filingsSource({
            online: edgarOnline(config),
            userAgent: config.EDGAR_USER_AGENT,
            baseUrl: config.EDGAR_BASE_URL,
            dataUrl: config.EDGAR_DATA_URL,
            pool,
            logger,
          }),
      }),
    createHandlers: createNewsHandlers,
    createWorker: createNewsWorker,
  });
}

/** The news service: runService runs it as a process (NEWS_ROLE), runSystem beside the others on shared resources. */
export const newsService: ServiceDefinition<typeof newsConfigShape, NewsShared> = {
  name: 'news',
  configShape: newsConfigShape,
  unit: createNewsUnit,
};
