import { loadConfig, redactConfig } from '@fin/config';
import { createPool } from '@fin/db';
import { createLifecycle, createShutdown, onShutdownSignals } from '@fin/http';
import { createLogger } from '@fin/log';
import { createApp } from './app';
import { createAuthenticator } from './auth';
import { gatewayConfigShape } from './config';
import { closeUpstreams, createUpstreams } from './proxy/upstreams';
import { createRateLimits } from './rate-limit';

/** Wiring: config → clients → services → app → listen; then a fixed shutdown order on SIGTERM/SIGINT. */
function main(): void {
  const config = loadConfig(gatewayConfigShape);
  const logger = createLogger({ service: 'gateway', level: config.LOG_LEVEL });
  logger.info({ config: redactConfig(gatewayConfigShape, config) }, 'starting');

  const pool = createPool({
    connectionString: config.DATABASE_URL,
    applicationName: 'gateway',
    onIdleError: (error) => logger.warn({ err: error }, 'idle database connection failed'),
  });
  const authenticator = createAuthenticator({ pool, logger });
  const rateLimits = createRateLimits({ pool, logger });
  const upstreams = createUpstreams(
    {
      news: config.NEWS_URL,
      'stock-report': config.STOCK_REPORT_URL,
      analysis: config.ANALYSIS_URL,
      chat: config.CHAT_URL,
      jobs: config.JOBS_URL,
      portal: config.PORTAL_URL,
    },
    { connectTimeoutMs: config.UPSTREAM_CONNECT_TIMEOUT_MS },
  );
  const lifecycle = createLifecycle();

  const app = createApp({
    logger,
    authenticator,
    rateLimits,
    upstreams,
    signingSecret: config.INTERNAL_SIGNING_SECRET,
    readiness: async () => {
      await pool.query('SELECT 1');
    },
    lifecycle,
    limits: {
      maxBodyBytes: config.MAX_BODY_BYTES,
      responseTimeoutMs: config.UPSTREAM_RESPONSE_TIMEOUT_MS,
      idleTimeoutMs: config.UPSTREAM_IDLE_TIMEOUT_MS,
    },
  });
  const server = app.listen(config.PORT, config.HOST, () => {
    logger.info({ url: `http://${config.HOST}:${config.PORT}` }, 'listening');
  });
  // Idle keep-alive connections outlive the clients' and load balancers' own idle timeouts (60 s on most), so it
  // is never the gateway that closes a connection a client is about to reuse.
  server.keepAliveTimeout = config.KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = config.KEEP_ALIVE_TIMEOUT_MS + 1_000;

  const shutdown = createShutdown({
    logger,
    lifecycle,
    servers: [server],
    unreadyDelayMs: config.SHUTDOWN_UNREADY_DELAY_MS,
    drainTimeoutMs: config.SHUTDOWN_DRAIN_TIMEOUT_MS,
    // Streams have drained (or been cut) by now: their chat slots are released before the limiter closes.
    closers: [
      { name: 'authenticator', close: () => authenticator.close() },
      { name: 'rate limits', close: () => rateLimits.close() },
      { name: 'service connection pools', close: () => closeUpstreams(upstreams) },
      { name: 'database pool', close: () => pool.end() },
    ],
    exit: (code) => process.exit(code),
  });
  onShutdownSignals(shutdown);
}

main();
