import { createAiEngine, modelBudgetFromConfig, type AiEngine } from '@fin/ai';
import { createCustomerToolsFromConfig } from '@fin/customer-tools';
import type { ServiceDefinition, ServiceUnit } from '@fin/http';
import { createProductUnit, type SharedResources } from '@fin/job-kit';
import type { Logger } from '@fin/log';
import { createNewsHandlers } from './app';
import { newsConfigShape, type NewsConfig } from './config';
import { createNewsWorker } from './worker';

export interface NewsServiceOptions extends SharedResources<AiEngine> {
  config: NewsConfig;
  logger: Logger;
}

/** The roles this process runs (NEWS_ROLE) as a unit; shared resources in single-process mode, else from config. */
function createNewsUnit({ config, logger, ...shared }: NewsServiceOptions): Promise<ServiceUnit> {
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
    createEngine: (pool) =>
      createAiEngine({
        config,
        logger,
        customerTools: createCustomerToolsFromConfig(config, { pool, logger }),
        budget: modelBudgetFromConfig(config, { pool, logger }),
      }),
    createHandlers: createNewsHandlers,
    createWorker: createNewsWorker,
  });
}

/** The news service: runService runs it as a process (NEWS_ROLE), runSystem beside the others on shared resources. */
export const newsService: ServiceDefinition<typeof newsConfigShape, SharedResources<AiEngine>> = {
  name: 'news',
  configShape: newsConfigShape,
  unit: createNewsUnit,
};
