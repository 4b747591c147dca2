import { loadConfig, redactConfig } from '@fin/config';
import { runProductProcess } from '@fin/job-kit';
import { createLogger, logOptionsOf } from '@fin/log';
import { analysisConfigShape } from './config';
import { startAnalysisService } from './service';

runProductProcess('analysis', async () => {
  const config = loadConfig(analysisConfigShape);
  const logger = createLogger({ service: 'analysis', ...logOptionsOf(config) });
  logger.info({ config: redactConfig(analysisConfigShape, config) }, 'starting');
  if (config.ANALYSIS_STREAM_SHUTDOWN_GRACE_MS >= config.SHUTDOWN_DRAIN_TIMEOUT_MS) {
    logger.warn('ANALYSIS_STREAM_SHUTDOWN_GRACE_MS is not below SHUTDOWN_DRAIN_TIMEOUT_MS: a stream still open at the drain deadline is cut off without its final event');
  }
  return {
    logger,
    service: await startAnalysisService({ config, logger }),
    drainTimeoutMs: config.SHUTDOWN_DRAIN_TIMEOUT_MS,
    metrics: { port: config.METRICS_PORT, host: config.METRICS_HOST },
  };
});
