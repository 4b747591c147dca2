// The portal as a unit: database pool, tool store, the customer-tools runtime (for the test button) and the HTTP
// server. main.ts runs it alone; the single-process setup can run it beside the others with a shared pool.
import { createCustomerToolsFromConfig, createToolStore, keyringFromConfig, webhookTargetPolicy } from '@fin/customer-tools';
import { servicePool, type Pool } from '@fin/db';
import { createLifecycle, createResources, type Closer, type ServiceDefinition, type ServiceUnit } from '@fin/http';
import type { Logger } from '@fin/log';
import { createWebhookStore } from '@fin/webhooks';
import { createPortalHandlers } from './app';
import { portalRoutes } from './web/routes';
import { portalConfigShape, type PortalConfig } from './config';
import { createSessions } from './session';
import { createPortalThrottle } from './throttle';

interface PortalOptions {
  config: PortalConfig;
  logger: Logger;
  /** A shared pool (single-process mode); created from DATABASE_URL otherwise, and then closed last. */
  pool?: Pool;
}

/** The portal as a unit: its API handlers and its pages. */
async function createPortalUnit({ config, logger, pool: sharedPool }: PortalOptions): Promise<ServiceUnit> {
  // A pool the process does not share is made here, and closed last.
  const resources = createResources();
  const pool = await resources.ownOrShared(
    'database pool',
    sharedPool,
    () => servicePool(config, { applicationName: 'portal', logger }),
    (made) => made.end(),
  );
  const store = createToolStore({ pool, keyring: keyringFromConfig(config), maxToolsPerTenant: config.CUSTOMER_TOOLS_MAX_PER_TENANT });
  const runtime = createCustomerToolsFromConfig(config, { pool, logger });
  const webhooks = createWebhookStore({
    pool,
    keyring: keyringFromConfig(config),
    addressPolicy: webhookTargetPolicy(config),
  });
  const sessions = createSessions({
    secret: config.PORTAL_SESSION_SECRET,
    secureCookies: config.PORTAL_COOKIE_SECURE,
    ttlMs: config.PORTAL_SESSION_TTL_MS,
  });
  const lifecycle = createLifecycle();
  const closers: Closer[] = [{ name: 'customer tool connections', close: () => runtime.close() }, ...resources.closers()];

  const throttle = createPortalThrottle({
    pool,
    limits: {
      sign_in: { perClient: config.PORTAL_SIGN_IN_LIMIT_PER_CLIENT, perTenant: config.PORTAL_SIGN_IN_LIMIT_PER_TENANT },
      test_call: { perClient: config.PORTAL_TEST_CALL_LIMIT_PER_CLIENT, perTenant: config.PORTAL_TEST_CALL_LIMIT_PER_TENANT },
    },
  });
  const deps = {
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
  };
  return {
    name: 'portal',
    handlers: createPortalHandlers(deps),
    pages: { prefix: '/portal', router: portalRoutes(deps) },
    readiness: async () => {
      await pool.query('SELECT 1');
    },
    lifecycle,
    start: async () => {},
    closers,
  };
}

/** The portal: runService runs it as a process, runSystem beside the others on the shared pool. */
export const portalService: ServiceDefinition<typeof portalConfigShape, { pool: Pool }> = {
  name: 'portal',
  configShape: portalConfigShape,
  unit: createPortalUnit,
};
