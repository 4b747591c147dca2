// The analysis service as a process: runService parses the config, starts the metrics listener and the service
// (its clients, its app, listening), and shuts down in the fixed order on SIGTERM/SIGINT. See docs/architecture.md.
import { runService } from '@fin/http';
import type { Logger } from '@fin/log';
import { analysisConfigShape, type AnalysisConfig } from './config';
import { createAnalysisUnit } from './service';

/** Streams get their grace period inside the drain: one that is not shorter cuts a stream off before its final event. */
function checkConfig(config: AnalysisConfig, logger: Logger): void {
  if (config.ANALYSIS_STREAM_SHUTDOWN_GRACE_MS >= config.SHUTDOWN_DRAIN_TIMEOUT_MS) {
    logger.warn(
      'ANALYSIS_STREAM_SHUTDOWN_GRACE_MS is not below SHUTDOWN_DRAIN_TIMEOUT_MS: a stream still open at the drain deadline is cut off without its final event',
    );
  }
}

void runService({ name: 'analysis', configShape: analysisConfigShape, checkConfig, unit: createAnalysisUnit });
