// A portal app on a test database, with requests signed as the gateway signs them (a caller, or anonymous for
// the web pages), and helpers to make tenants and keys.
import { randomBytes } from 'node:crypto';
import { generateApiKey } from '@fin/api-keys';
import { createCustomerToolRuntime, createKeyring, createToolExecutor, createToolStore } from '@fin/customer-tools';
import { testCertificate } from '@fin/customer-tools/testing';
import { createPool, type Pool } from '@fin/db';
import { createHandlerApp, createLifecycle, identityKey, signIdentity, type ServiceApp } from '@fin/http';
import { createLogger } from '@fin/log';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { createWebhookStore } from '@fin/webhooks';
import { createPortalHandlers } from '../../src/app';
import { createSessions } from '../../src/session';
import { createPortalThrottle, type ThrottleLimits, type ThrottledAction } from '../../src/throttle';
import { portalRoutes } from '../../src/web/routes';

const SECRET = randomBytes(32).toString('hex');
/** PORTAL_SESSION_SECRET: the portal's own, never the internal signing secret. */
const SESSION_SECRET = randomBytes(32).toString('hex');
const KEY = identityKey(SECRET, 'portal');
const logger = createLogger({ service: 'portal-test', level: 'silent' });

export interface Harness {
  app: ServiceApp;
  pool: Pool;
  close(): Promise<void>;
  tenant(name: string): Promise<string>;
  key(tenantId: string, scopes?: string[]): Promise<{ apiKey: string; keyId: string }>;
  /** Identity headers as the gateway sends them for this method, path and body (sent as JSON, or the string given). */
  signed(
    method: string,
    path: string,
    caller: { tenantId: string; keyId: string; scopes?: string[] } | null,
    body?: unknown,
  ): Record<string, string>;
}

/** Generous enough that no test but the throttle's own meets them. */
const ROOMY: Record<ThrottledAction, ThrottleLimits> = {
  sign_in: { perClient: 1_000, perTenant: 1_000 },
  test_call: { perClient: 1_000, perTenant: 1_000 },
};

export async function startHarness({
  maxTools = 50,
  limits = ROOMY,
}: { maxTools?: number; limits?: Record<ThrottledAction, ThrottleLimits> } = {}): Promise<Harness> {
  const db: TestDatabase = await createTestDatabase();
  const pool = createPool({ connectionString: db.url, applicationName: 'portal-test' });
  const keyring = createKeyring({ id: 'k1', key: randomBytes(32) });
  const runtime = createCustomerToolRuntime({
    pool,
    keyring,
    logger,
    executor: createToolExecutor({ allowLoopback: true, ca: (await testCertificate()).cert }),
  });
  const store = createToolStore({ pool, keyring, maxToolsPerTenant: maxTools });
  const sessions = createSessions({ secret: SESSION_SECRET, secureCookies: true, ttlMs: 3_600_000 });
  const throttle = createPortalThrottle({ pool, limits });
  const webhooks = createWebhookStore({ pool, keyring, addressPolicy: { allowLoopback: true } });
  const lifecycle = createLifecycle();
  const deps = {
    pool,
    store,
    webhooks,
    runtime,
    sessions,
    signingSecret: SECRET,
    logger,
    lifecycle,
    throttle,
    clientAddressHops: 1,
    keyTtlDays: 90,
  };
  // The portal's unit made from its parts here rather than by its definition (portalService), on purpose: its
  // customer-tools runtime trusts the certificate authority of the tests' HTTPS tool servers, and the definition
  // makes its runtime from the config, which names no CA.
  const app = createHandlerApp(
    {
      name: 'portal',
      handlers: createPortalHandlers(deps),
      pages: { prefix: '/portal', router: portalRoutes(deps) },
      readiness: async () => {
        await pool.query('SELECT 1');
      },
      lifecycle,
      start: async () => {},
      closers: [],
    },
    { logger, signingSecret: SECRET },
  );
  return {
    app,
    pool,
    async close() {
      await runtime.close();
      await pool.end();
      await db.drop();
    },
    async tenant(name) {
      const { rows } = await pool.query<{ id: string }>('INSERT INTO tenants (name) VALUES ($1) RETURNING id', [name]);
      return (rows[0] as { id: string }).id;
    },
    async key(tenantId, scopes = ['news', 'stock-report', 'analysis', 'chat', 'tools', 'webhooks']) {
      const generated = generateApiKey();
      const { rows } = await pool.query<{ id: string }>(
        'INSERT INTO api_keys (tenant_id, display_prefix, key_hash, scopes) VALUES ($1, $2, $3, $4) RETURNING id',
        [tenantId, generated.displayPrefix, generated.hash, scopes],
      );
      return { apiKey: generated.key, keyId: (rows[0] as { id: string }).id };
    },
    signed(method, path, caller, body) {
      return signIdentity(
        {
          requestId: randomBytes(8).toString('hex'),
          caller: caller === null ? null : { tenantId: caller.tenantId, keyId: caller.keyId, scopes: caller.scopes ?? ['tools'] },
        },
        KEY,
        { method, path, body: body === undefined || typeof body === 'string' ? body : JSON.stringify(body) },
      );
    },
  };
}
