import { loadConfig, redactConfig } from '@fin/config';
import { runProductProcess } from '@fin/job-kit';
import { createLogger, logOptionsOf } from '@fin/log';
import { stockReportConfigShape } from './config';
import { startStockReportService } from './service';

runProductProcess('stock-report', async () => {
  const config = loadConfig(stockReportConfigShape);
  const logger = createLogger({ service: 'stock-report', ...logOptionsOf(config) });
  logger.info({ config: redactConfig(stockReportConfigShape, config) }, 'starting');
  return {
    logger,
    service: await startStockReportService({ config, logger }),
    drainTimeoutMs: config.SHUTDOWN_DRAIN_TIMEOUT_MS,
    metrics: { port: config.METRICS_PORT, host: config.METRICS_HOST },
  };
});
