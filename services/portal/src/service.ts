// The portal as a unit: database pool, tool store, the customer-tools runtime (for the test button) and the HTTP
// server. main.ts runs it alone; the single-process setup can run it beside the others with a shared pool.
import type { Server } from 'node:http';
import { createCustomerToolsFromConfig, createToolStore, keyringFromConfig } from '@fin/customer-tools';
import { createPool, type Pool } from '@fin/db';
import { createLifecycle, listenOrClose, type Closer, type Lifecycle } from '@fin/http';
import type { Logger } from '@fin/log';
import { createWebhookStore } from '@fin/webhooks';
import { createApp } from './app';
import type { PortalConfig } from './config';
import { createSessions } from './session';
import { createPortalThrottle } from './throttle';

export interface PortalOptions {
  config: PortalConfig;
  logger: Logger;
  /** A shared pool (single-process mode); created from DATABASE_URL otherwise, and then closed last. */
  pool?: Pool;
}

export interface PortalService {
  server: Server;
  /** Where the server listens, e.g. http://127.0.0.1:8086 (PORT 0 picks a free port). */
  url: string;
  lifecycle: Lifecycle;
  /** In shutdown order, after the HTTP server has drained. */
  closers: Closer[];
}

export async function startPortalService({ config, logger, pool: sharedPool }: PortalOptions): Promise<PortalService> {
  const pool =
    sharedPool ??
    createPool({
      connectionString: config.DATABASE_URL,
      applicationName: 'portal',
      max: config.DATABASE_POOL_MAX,
      onIdleError: (error) => logger.warn({ err: error }, 'idle database connection failed'),
    });
  const store = createToolStore({ pool, keyring: keyringFromConfig(config), maxToolsPerTenant: config.CUSTOMER_TOOLS_MAX_PER_TENANT });
  const runtime = createCustomerToolsFromConfig(config, { pool, logger });
  const webhooks = createWebhookStore({
    pool,
    keyring: keyringFromConfig(config),
    addressPolicy: { allowLoopback: config.CUSTOMER_TOOLS_ALLOW_LOOPBACK },
  });
  const sessions = createSessions({
    secret: config.PORTAL_SESSION_SECRET,
    secureCookies: config.PORTAL_COOKIE_SECURE,
    ttlMs: config.PORTAL_SESSION_TTL_MS,
  });
  const lifecycle = createLifecycle();
  const closers: Closer[] = [{ name: 'customer tool connections', close: () => runtime.close() }];
  if (!sharedPool) closers.push({ name: 'database pool', close: () => pool.end() });

  const throttle = createPortalThrottle({
    pool,
    limits: {
      sign_in: { perClient: config.PORTAL_SIGN_IN_LIMIT_PER_CLIENT, perTenant: config.PORTAL_SIGN_IN_LIMIT_PER_TENANT },
      test_call: { perClient: config.PORTAL_TEST_CALL_LIMIT_PER_CLIENT, perTenant: config.PORTAL_TEST_CALL_LIMIT_PER_TENANT },
    },
  });
  const app = createApp({
    pool,
    store,
    webhooks,
    runtime,
    sessions,
    signingSecret: config.INTERNAL_SIGNING_SECRET,
    logger,
    lifecycle,
    throttle,
    clientAddressHops: config.PORTAL_CLIENT_ADDRESS_HOPS,
    keyTtlDays: config.PORTAL_KEY_TTL_DAYS,
  });
  const { server, url } = await listenOrClose(app, { port: config.PORT, host: config.HOST, logger, started: closers });
  return { server, url, lifecycle, closers };
}
