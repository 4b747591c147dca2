import { createAiEngine, type AiEngine } from '@fin/ai';
import { createCustomerToolsFromConfig } from '@fin/customer-tools';
import { startProductService, type ProductService, type SharedResources } from '@fin/job-kit';
import type { Logger } from '@fin/log';
import { createApp } from './app';
import type { NewsConfig } from './config';
import { createNewsWorker } from './worker';

export type NewsService = ProductService;

export interface NewsServiceOptions extends SharedResources<AiEngine> {
  config: NewsConfig;
  logger: Logger;
}

/** Starts the roles this process runs (NEWS_ROLE); shared resources in single-process mode, else from config. */
export function startNewsService({ config, logger, ...shared }: NewsServiceOptions): Promise<NewsService> {
  return startProductService({
    ...shared,
    jobType: 'news',
    config,
    settings: {
      role: config.NEWS_ROLE,
      timeLimitMs: config.NEWS_TIME_LIMIT_MS,
      workerConcurrency: config.NEWS_WORKER_CONCURRENCY,
      maxAttempts: config.NEWS_MAX_ATTEMPTS,
      leaseMs: config.NEWS_LEASE_MS,
      drainTimeoutMs: config.WORKER_DRAIN_TIMEOUT_MS,
    },
    logger,
    createEngine: (pool) => createAiEngine({ config, logger, customerTools: createCustomerToolsFromConfig(config, { pool, logger }) }),
    createApp,
    createWorker: createNewsWorker,
  });
}
