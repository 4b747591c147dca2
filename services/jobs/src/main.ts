import { loadConfig, redactConfig } from '@fin/config';
import { createPool } from '@fin/db';
import { connectKafkaBus } from '@fin/events';
import { createShutdown, onShutdownSignals } from '@fin/http';
import { createLogger, logOptionsOf } from '@fin/log';
import { startMetricsServer } from '@fin/metrics';
import { jobsConfigShape } from './config';
import { startJobsService } from './service';

/** Wiring: config → pool and Kafka → the service; then a fixed shutdown order on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  const config = loadConfig(jobsConfigShape);
  const logger = createLogger({ service: 'jobs', ...logOptionsOf(config) });
  logger.info({ config: redactConfig(jobsConfigShape, config) }, 'starting');

  try {
    const pool = createPool({
      connectionString: config.DATABASE_URL,
      applicationName: 'jobs',
      max: config.DATABASE_POOL_MAX,
      onIdleError: (error) => logger.warn({ err: error }, 'idle database connection failed'),
    });
    const bus = await connectKafkaBus(config, logger);
    const service = await startJobsService({ config, logger, bus, pool });
    const metrics = await startMetricsServer({ port: config.METRICS_PORT, host: config.METRICS_HOST, logger });

    const shutdown = createShutdown({
      logger,
      lifecycle: service.lifecycle,
      servers: [service.server],
      unreadyDelayMs: config.SHUTDOWN_UNREADY_DELAY_MS,
      drainTimeoutMs: config.SHUTDOWN_DRAIN_TIMEOUT_MS,
      closers: [
        ...service.closers,
        { name: 'event bus', close: () => bus.close() },
        { name: 'database pool', close: () => pool.end() },
        { name: 'metrics listener', close: () => metrics.close() },
      ],
      exit: (code) => process.exit(code),
    });
    onShutdownSignals(shutdown);
  } catch (error) {
    logger.fatal({ err: error }, 'the jobs service could not start');
    process.exit(1);
  }
}

void main();
