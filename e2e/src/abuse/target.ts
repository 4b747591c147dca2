// The system the fuzz and access suites attack, on a database of the test's own, with offline AI: by default the
// whole API as `npm start` runs it (services/standalone: the gateway calling every service in its one process, the
// in-process event bus); or, with the `http` upstream, as deployed: the gateway and each service a process of its
// own, over HTTP with the signed identity, and the test broker. Two tenants, and API keys of every kind a request
// can carry: valid, revoked, and for each scope one key that lacks it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createKey, createTenant, revokeKey, setLimitOverride } from '@fin/api-keys';
import { API_SCOPES, type ApiScope } from '@fin/contracts';
import { createTestDatabase, testCustomerToolsKey, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { freePort, sharedEnv, startService, startSystem, waitUntilReady, type ServiceProcess, type UpstreamMode } from '../system';

export const TENANTS = ['acme', 'globex'] as const;
export type TenantName = (typeof TENANTS)[number];

interface TenantKeys {
  /** Every scope. */
  valid: string;
  /** Every scope, revoked before the suite starts. */
  revoked: string;
  /** For each scope, a key with every other scope. */
  without: Record<ApiScope, string>;
}

export interface AbuseTarget {
  /** The gateway's base URL, e.g. http://127.0.0.1:40123 */
  url: string;
  /** The process that answers (npm start's one process, or the gateway), for its output in a failure message. */
  process: ServiceProcess;
  /** A pool on the system's database, for the key store's operator functions (@fin/api-keys). */
  pool: pg.Pool;
  keys: Record<TenantName, TenantKeys>;
  /** Whether every process is still running (none may ever crash). */
  alive(): boolean;
  /** SIGTERM (the system's shutdown sequence), then drops the database; resolves to the worst exit code. */
  stop(): Promise<number | null>;
}

/** Per-minute limits high enough that a suite measures validation, not the limiter (which has its own suite). */
const RAISED_PER_MINUTE = 1_000_000;
const RAISED_CHAT_STREAMS = 1_000;

/** Every product service, for the `http` upstream: the routes the suites call are all answered. */
const ALL_PRODUCTS = ['news', 'stock-report', 'analysis', 'chat', 'portal', 'mcp'] as const;

export async function startAbuseTarget(upstream: UpstreamMode = 'in-process'): Promise<AbuseTarget> {
  const database: TestDatabase = await createTestDatabase();
  const env = {
    DATABASE_URL: database.url,
    METRICS_PORT: '0',
    // Errors only: a 5xx is logged at error with its cause, which a failing test then shows.
    LOG_LEVEL: 'error',
    CUSTOMER_TOOLS_ENCRYPTION_KEY: testCustomerToolsKey(),
    AI_OFFLINE: 'true',
    // The SSRF suite waits for each webhook's first attempt: the dispatcher looks for due deliveries often.
    WEBHOOK_DISPATCH_INTERVAL_MS: '100',
    // The portal's throttles are raised too: the SSRF suite presses Test hundreds of times a minute from one address.
    PORTAL_TEST_CALL_LIMIT_PER_CLIENT: '1000000',
    PORTAL_TEST_CALL_LIMIT_PER_TENANT: '1000000',
    PORTAL_SIGN_IN_LIMIT_PER_CLIENT: '1000000',
    PORTAL_SIGN_IN_LIMIT_PER_TENANT: '1000000',
    // The suites send invalid keys on purpose, thousands of them from one address: they check the answers to
    // each, not the throttling of failed authentications (which has its own tests).
    AUTH_FAILURES_PER_MINUTE: '1000000',
  };
  let url: string;
  let child: ServiceProcess;
  let processes: ServiceProcess[];
  let cleanUp = () => {};
  if (upstream === 'in-process') {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'fin-abuse-'));
    cleanUp = () => rmSync(dataDir, { recursive: true, force: true });
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    child = startService('standalone', 'standalone', { ...env, DATA_DIR: dataDir, PORT: String(port) });
    processes = [child];
  } else {
    // Offline: no model and no market-data provider (sharedEnv's fakes are for the suites that script them).
    const {
      ANTHROPIC_API_KEY: _model,
      ANTHROPIC_BASE_URL: _modelUrl,
      FINNHUB_API_KEY: _provider,
      FINNHUB_BASE_URL: _providerUrl,
      ...deployed
    } = sharedEnv({ databaseUrl: database.url, anthropicUrl: '', finnhubUrl: '', finnhubToken: '' });
    const system = await startSystem({ ...deployed, ...env }, {}, { upstream: 'http', products: ALL_PRODUCTS }).catch(
      async (error: unknown) => {
        await database.drop();
        throw error;
      },
    );
    url = system.gatewayUrl;
    child = system.services.find((service) => service.name === 'gateway') as ServiceProcess;
    processes = system.services;
  }
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  const stop = async () => {
    await Promise.all(processes.map((service) => service.stop('SIGTERM')));
    const codes = await Promise.all(processes.map((service) => service.exited));
    await pool.end();
    await database.drop();
    cleanUp();
    return codes.find((code) => code !== 0) ?? 0;
  };
  try {
    await waitUntilReady(`${url}/readyz`, child, 60_000);
    const keys = {} as Record<TenantName, TenantKeys>;
    for (const tenant of TENANTS) {
      await createTenant(pool, tenant);
      for (const product of ['news', 'stock-report', 'analysis', 'jobs', 'tools', 'webhooks', 'chat-turns', 'filings'])
        await setLimitOverride(pool, tenant, product, RAISED_PER_MINUTE);
      await setLimitOverride(pool, tenant, 'chat', RAISED_CHAT_STREAMS);
      const valid = (await createKey(pool, { tenant, name: 'valid' })).apiKey;
      const revoked = await createKey(pool, { tenant, name: 'revoked' });
      await revokeKey(pool, revoked.key.id);
      const without = {} as Record<ApiScope, string>;
      for (const scope of API_SCOPES) {
        without[scope] = (
          await createKey(pool, { tenant, name: `without-${scope}`, scopes: API_SCOPES.filter((other) => other !== scope) })
        ).apiKey;
      }
      keys[tenant] = { valid, revoked: revoked.apiKey, without };
    }
    const alive = () => processes.every((service) => service.child.exitCode === null && service.child.signalCode === null);
    return { url, process: child, pool, keys, alive, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
