import { loadConfig, redactConfig } from '@fin/config';
import { runProductProcess } from '@fin/job-kit';
import { createLogger, logOptionsOf } from '@fin/log';
import { newsConfigShape } from './config';
import { startNewsService } from './service';

runProductProcess('news', async () => {
  const config = loadConfig(newsConfigShape);
  const logger = createLogger({ service: 'news', ...logOptionsOf(config) });
  logger.info({ config: redactConfig(newsConfigShape, config) }, 'starting');
  return {
    logger,
    service: await startNewsService({ config, logger }),
    drainTimeoutMs: config.SHUTDOWN_DRAIN_TIMEOUT_MS,
    metrics: { port: config.METRICS_PORT, host: config.METRICS_HOST },
  };
});
