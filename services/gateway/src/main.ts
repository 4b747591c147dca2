import { loadConfig, redactConfig } from '@fin/config';
import { createPool } from '@fin/db';
import { createLogger } from '@fin/log';
import { createApp } from './app';
import { gatewayConfigShape } from './config';

/** Wiring: config → clients → app → listen; then a fixed shutdown order on SIGINT/SIGTERM. */
function main(): void {
  const config = loadConfig(gatewayConfigShape);
  const logger = createLogger({ service: 'gateway', level: config.LOG_LEVEL });
  logger.info({ config: redactConfig(gatewayConfigShape, config) }, 'starting');
  const pool = createPool({
    connectionString: config.DATABASE_URL,
    applicationName: 'gateway',
    onIdleError: (error) => logger.warn({ err: error }, 'idle database connection failed'),
  });
  const server = createApp({ pool, logger }).listen(config.PORT, config.HOST, () => {
    logger.info({ url: `http://${config.HOST}:${config.PORT}` }, 'listening');
  });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    server.close(() => {
      pool.end().then(
        () => logger.info('stopped'),
        (error: unknown) => logger.error({ err: error }, 'closing the pool failed'),
      );
    });
    server.closeIdleConnections();
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

main();
