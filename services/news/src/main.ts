import { loadConfig, redactConfig } from '@fin/config';
import { createShutdown, onShutdownSignals } from '@fin/http';
import { createLogger } from '@fin/log';
import { newsConfigShape } from './config';
import { startNewsService } from './service';

async function main(): Promise<void> {
  const config = loadConfig(newsConfigShape);
  const logger = createLogger({ service: 'news', level: config.LOG_LEVEL });
  logger.info({ config: redactConfig(newsConfigShape, config) }, 'starting');
  const service = await startNewsService({ config, logger });
  onShutdownSignals(
    createShutdown({
      logger,
      lifecycle: service.lifecycle,
      servers: service.server ? [service.server] : [],
      drainTimeoutMs: config.SHUTDOWN_DRAIN_TIMEOUT_MS,
      closers: service.closers,
      exit: (code) => process.exit(code),
    }),
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`news service failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
