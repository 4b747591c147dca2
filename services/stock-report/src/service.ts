import { createAiEngine, type AiEngine } from '@fin/ai';
import { createCustomerToolsFromConfig } from '@fin/customer-tools';
import { startProductService, type ProductService, type SharedResources } from '@fin/job-kit';
import type { Logger } from '@fin/log';
import { createApp } from './app';
import type { StockReportConfig } from './config';
import { createStockReportWorker } from './worker';

export interface StockReportServiceOptions extends SharedResources<AiEngine> {
  config: StockReportConfig;
  logger: Logger;
}

/** Starts the roles this process runs (STOCK_REPORT_ROLE); shared resources in single-process mode, else from config. */
export function startStockReportService({ config, logger, ...shared }: StockReportServiceOptions): Promise<ProductService> {
  return startProductService({
    ...shared,
    jobType: 'stock-report',
    config,
    settings: {
      role: config.STOCK_REPORT_ROLE,
      timeLimitMs: config.STOCK_REPORT_TIME_LIMIT_MS,
      workerConcurrency: config.STOCK_REPORT_WORKER_CONCURRENCY,
      maxAttempts: config.STOCK_REPORT_MAX_ATTEMPTS,
      leaseMs: config.STOCK_REPORT_LEASE_MS,
      drainTimeoutMs: config.WORKER_DRAIN_TIMEOUT_MS,
    },
    logger,
    createEngine: (pool) => createAiEngine({ config, logger, customerTools: createCustomerToolsFromConfig(config, { pool, logger }) }),
    createApp,
    createWorker: createStockReportWorker,
  });
}
