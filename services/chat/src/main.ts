import { loadConfig, redactConfig } from '@fin/config';
import { createShutdown, onShutdownSignals } from '@fin/http';
import { createLogger, logOptionsOf } from '@fin/log';
import { startMetricsServer } from '@fin/metrics';
import { chatConfigShape } from './config';
import { startChatService } from './service';

async function main(): Promise<void> {
  const config = loadConfig(chatConfigShape);
  const logger = createLogger({ service: 'chat', ...logOptionsOf(config) });
  logger.info({ config: redactConfig(chatConfigShape, config) }, 'starting');
  const service = await startChatService({ config, logger });
  const metrics = await startMetricsServer({ port: config.METRICS_PORT, host: config.METRICS_HOST, logger });
  onShutdownSignals(
    createShutdown({
      logger,
      lifecycle: service.lifecycle,
      servers: [service.server],
      drainTimeoutMs: config.SHUTDOWN_DRAIN_TIMEOUT_MS,
      closers: [...service.closers, { name: 'metrics listener', close: () => metrics.close() }],
      exit: (code) => process.exit(code),
    }),
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`chat service failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
