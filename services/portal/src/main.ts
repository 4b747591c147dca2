import { loadConfig, redactConfig } from '@fin/config';
import { createShutdown, onShutdownSignals } from '@fin/http';
import { createLogger, logOptionsOf } from '@fin/log';
import { startMetricsServer } from '@fin/metrics';
import { portalConfigShape } from './config';
import { startPortalService } from './service';

/** Wiring: config → the portal; then a fixed shutdown order on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  const config = loadConfig(portalConfigShape);
  const logger = createLogger({ service: 'portal', ...logOptionsOf(config) });
  logger.info({ config: redactConfig(portalConfigShape, config) }, 'starting');
  try {
    const portal = await startPortalService({ config, logger });
    const metrics = await startMetricsServer({ port: config.METRICS_PORT, host: config.METRICS_HOST, logger });
    onShutdownSignals(
      createShutdown({
        logger,
        lifecycle: portal.lifecycle,
        servers: [portal.server],
        drainTimeoutMs: config.SHUTDOWN_DRAIN_TIMEOUT_MS,
        closers: [...portal.closers, { name: 'metrics listener', close: () => metrics.close() }],
        exit: (code) => process.exit(code),
      }),
    );
  } catch (error) {
    logger.fatal({ err: error }, 'the portal could not start');
    process.exit(1);
  }
}

void main();
