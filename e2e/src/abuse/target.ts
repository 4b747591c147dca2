// The system the fuzz and access suites attack: the whole API as `npm start` runs it (services/standalone: the
// gateway and every service in one process, real HTTP between them on loopback, the in-process event bus, offline
// AI), as a child process on a database of the test's own. Two tenants, and API keys of every kind a request can
// carry: valid, revoked, and for each scope one key that lacks it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createKey, createTenant, revokeKey, setLimitOverride } from '@fin/api-keys';
import { API_SCOPES, type ApiScope } from '@fin/contracts';
import { createTestDatabase, testCustomerToolsKey, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { freePort, startService, waitUntilReady, type ServiceProcess } from '../system';

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
  process: ServiceProcess;
  /** A pool on the system's database, for the key store's operator functions (@fin/api-keys). */
  pool: pg.Pool;
  keys: Record<TenantName, TenantKeys>;
  /** Whether the process is still running (it must never crash). */
  alive(): boolean;
  /** SIGTERM (the system's shutdown sequence), then drops the database; resolves to the exit code. */
  stop(): Promise<number | null>;
}

/** Per-minute limits high enough that a suite measures validation, not the limiter (which has its own suite). */
const RAISED_PER_MINUTE = 1_000_000;
const RAISED_CHAT_STREAMS = 1_000;

export async function startAbuseTarget(): Promise<AbuseTarget> {
  const database: TestDatabase = await createTestDatabase();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'fin-abuse-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = startService('standalone', 'standalone', {
    DATABASE_URL: database.url,
    DATA_DIR: dataDir,
    PORT: String(port),
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
  });
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  const stop = async () => {
    await child.stop('SIGTERM');
    const code = await child.exited;
    await pool.end();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
    return code;
  };
  try {
    await waitUntilReady(`${url}/readyz`, child, 60_000);
    const keys = {} as Record<TenantName, TenantKeys>;
    for (const tenant of TENANTS) {
      await createTenant(pool, tenant);
      for (const product of ['news', 'stock-report', 'analysis', 'jobs', 'tools', 'webhooks', 'chat-turns'])
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
    return { url, process: child, pool, keys, alive: () => child.child.exitCode === null && child.child.signalCode === null, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
