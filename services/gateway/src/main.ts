import { loadConfig, redactConfig } from '@fin/config';
import { createShutdown, onShutdownSignals } from '@fin/http';
import { createLogger, logOptionsOf } from '@fin/log';
import { startMetricsServer } from '@fin/metrics';
import { gatewayConfigShape } from './config';
import { startGateway } from './service';

/** Wiring: config → the gateway; then a fixed shutdown order on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  const config = loadConfig(gatewayConfigShape);
  const logger = createLogger({ service: 'gateway', ...logOptionsOf(config) });
  logger.info({ config: redactConfig(gatewayConfigShape, config) }, 'starting');
  try {
    const gateway = await startGateway({ config, logger });
    const metrics = await startMetricsServer({ port: config.METRICS_PORT, host: config.METRICS_HOST, logger });
    onShutdownSignals(
      createShutdown({
        logger,
        lifecycle: gateway.lifecycle,
        servers: [gateway.server],
        unreadyDelayMs: config.SHUTDOWN_UNREADY_DELAY_MS,
        drainTimeoutMs: config.SHUTDOWN_DRAIN_TIMEOUT_MS,
        closers: [...gateway.closers, { name: 'metrics listener', close: () => metrics.close() }],
        exit: (code) => process.exit(code),
      }),
    );
  } catch (error) {
    logger.fatal({ err: error }, 'the gateway could not start');
    process.exit(1);
  }
}

void main();
