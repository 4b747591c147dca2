import { createAiEngine, modelBudgetFromConfig, type AiEngine } from '@fin/ai';
import { createCustomerToolsFromConfig } from '@fin/customer-tools';
import type { Queryable } from '@fin/db';
import { edgarOnline, filingsSource, type FilingsSource } from '@fin/edgar';
import type { ServiceDefinition, ServiceUnit } from '@fin/http';
import { createProductUnit, type SharedResources } from '@fin/job-kit';
import type { Logger } from '@fin/log';
import { createStockReportHandlers } from './app';
import { stockReportConfigShape, type StockReportConfig } from './config';
import { createFilingsHandlers } from './filings';
import { createStockReportWorker } from './worker';

/** What one process shares with the service: the product's resources, and SEC EDGAR for the filings routes. */
export interface StockReportShared extends SharedResources<AiEngine> {
  filings?: FilingsSource;
}

export interface StockReportServiceOptions extends StockReportShared {
  config: StockReportConfig;
  logger: Logger;
}

/** The roles this process runs (STOCK_REPORT_ROLE) as a unit; shared resources in single-process mode, else from config. */
function createStockReportUnit({ config, logger, filings, ...shared }: StockReportServiceOptions): Promise<ServiceUnit> {
  // One SEC EDGAR source per process, the shared one or made on the unit's pool: EDGAR itself online (one request
  // budget for the deployment, kept in the database), the bundled sample offline (EDGAR_OFFLINE; unset, as the AI).
  let source = filings;
  const filingsOn = (pool: Queryable): FilingsSource =>
    (source ??= filingsSource({
      online: edgarOnline(config),
      userAgent: config.EDGAR_USER_AGENT,
      baseUrl: config.EDGAR_BASE_URL,
      dataUrl: config.EDGAR_DATA_URL,
      pool,
      logger,
    }));
  return createProductUnit({
    ...shared,
    jobType: 'stock-report',
    config,
    settings: {
      role: config.STOCK_REPORT_ROLE,
      timeLimitMs: config.STOCK_REPORT_TIME_LIMIT_MS,
      workerConcurrency: config.STOCK_REPORT_WORKER_CONCURRENCY,
      tenantCap: config.STOCK_REPORT_WORKER_TENANT_CAP,
      pollIntervalMs: config.WORKER_POLL_INTERVAL_MS,
      maxAttempts: config.STOCK_REPORT_MAX_ATTEMPTS,
      leaseMs: config.STOCK_REPORT_LEASE_MS,
      drainTimeoutMs: config.WORKER_DRAIN_TIMEOUT_MS,
    },
    logger,
    // The worker's reports take their figures from the same source as the filings routes (docs/ai.md#figures-from-sec-filings).
    createEngine: (pool) =>
      createAiEngine({
        config,
        logger,
        customerTools: createCustomerToolsFromConfig(config, { pool, logger }),
        budget: modelBudgetFromConfig(config, { pool, logger }),
        filings: filingsOn(pool),
      }),
    // The API role answers the filings routes too: market data is this service's.
    createHandlers: (deps) => ({ ...createStockReportHandlers(deps), ...createFilingsHandlers(filingsOn(deps.pool)) }),
    createWorker: createStockReportWorker,
  });
}

/** The stock-report service: runService runs it as a process (STOCK_REPORT_ROLE), runSystem beside the others. */
export const stockReportService: ServiceDefinition<typeof stockReportConfigShape, StockReportShared> = {
  name: 'stock-report',
  configShape: stockReportConfigShape,
  unit: createStockReportUnit,
};
