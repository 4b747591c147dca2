import { createPool, type Pool } from '@fin/db';
import { AppError } from '@fin/http';
import { createLogger } from '@fin/log';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { createAuthenticator, type AuthenticatorOptions, type PostgresAuthenticator } from '../src/auth/authenticator';
import { requireScope } from '../src/auth/scope';
import type { Principal } from '../src/auth/types';
import { createKey, createTenant, disableTenant, generateApiKey, revokeKey, setLimitOverride } from '@fin/api-keys';

const logger = createLogger({ service: 'auth-test', level: 'silent' });

/** The same pool, counting the queries the authenticator sends through pool.query (lookups, last_used_at). */
function counted(pool: Pool): { pool: Pool; queries: string[] } {
  const queries: string[] = [];
  const proxy = new Proxy(pool, {
    get(target, property) {
      if (property === 'query') {
        return (...args: unknown[]) => {
          const first = args[0] as string | { text: string };
          queries.push(typeof first === 'string' ? first : first.text);
          return (target.query as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { pool: proxy, queries };
}

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('expected the promise to reject');
}

describe('API-key authentication', () => {
  let db: TestDatabase;
  let pool: Pool;
  let poolB: Pool;
  const authenticators: PostgresAuthenticator[] = [];

  /**
   * A "replica": its own authenticator (own cache, own LISTEN connection), once it listens for changes
   * (until then it trusts cached keys for only a second, and it empties its cache when the listener is up).
   */
  async function replica(options: Partial<AuthenticatorOptions> = {}, on: Pool = pool): Promise<PostgresAuthenticator> {
    const authenticator = createAuthenticator({ pool: on, logger, cacheTtlMs: 60_000, ...options });
    authenticators.push(authenticator);
    await waitFor(() => authenticator.listening, { what: 'the change listener' });
    return authenticator;
  }

  let tenantCount = 0;
  async function newTenant(): Promise<string> {
    const name = `tenant-${++tenantCount}`;
    await createTenant(pool, name);
    return name;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'auth-test', max: 6 });
    poolB = createPool({ connectionString: db.url, applicationName: 'auth-test-b', max: 6 });
  });
  afterEach(async () => {
    await Promise.all(authenticators.splice(0).map((authenticator) => authenticator.close()));
  });
  afterAll(async () => {
    await pool.end();
    await poolB.end();
    await db.drop();
  });

  it('resolves a valid key to its principal', async () => {
    const tenant = await newTenant();
    await setLimitOverride(pool, tenant, 'news', 500);
    const { apiKey, key } = await createKey(pool, { tenant, scopes: ['news', 'chat'] });
    const principal = await (await replica()).authenticate(apiKey);
    expect(principal).toEqual({
      tenantId: expect.any(String),
      tenantName: tenant,
      keyId: key.id,
      scopes: ['news', 'chat'],
      limitOverrides: { news: 500 },
    });
  });

  it('answers 401 for a missing key, with a message naming the header', async () => {
    const auth = await replica();
    for (const missing of [undefined, '']) {
      const error = await rejection(auth.authenticate(missing));
      expect(error.status).toBe(401);
      expect(error.toBody()).toEqual({
        detail: 'Missing API key: send it in the X-API-Key header.',
        status_code: 401,
        type: 'unauthorized',
      });
    }
  });

  it('rejects malformed keys without any database query', async () => {
    const { pool: countingPool, queries } = counted(pool);
    const auth = await replica({}, countingPool);
    const { key } = generateApiKey();
    const mistyped = key.slice(0, 20) + (key[20] === 'a' ? 'b' : 'a') + key.slice(21);
    for (const bad of [mistyped, key.slice(0, -1), `sk_${key.slice(4)}`, 'hello', `${key} `]) {
      const error = await rejection(auth.authenticate(bad));
      expect(error.toBody()).toEqual({ detail: 'Invalid API key.', status_code: 401, type: 'unauthorized' });
    }
    expect(queries).toEqual([]);
    // A well-formed (checksum-valid) unknown key does reach the database: the count above is meaningful.
    await rejection(auth.authenticate(key));
    expect(queries).toHaveLength(1);
  });

  it('rejects malformed keys even when the database is unreachable, and reports 503 for lookups then', async () => {
    const dead = createPool({ connectionString: 'postgresql://postgres@127.0.0.1:1/none', applicationName: 'auth-test-dead', max: 1 });
    try {
      const auth = createAuthenticator({ pool: dead, logger });
      authenticators.push(auth);
      const malformed = await rejection(auth.authenticate('fin_not-a-real-key'));
      expect(malformed.status).toBe(401);
      const unreachable = await rejection(auth.authenticate(generateApiKey().key));
      expect(unreachable.toBody()).toEqual({
        detail: 'Authentication is temporarily unavailable; retry shortly.',
        status_code: 503,
        type: 'service_unavailable',
      });
      await authenticators.pop()?.close();
    } finally {
      await dead.end();
    }
  });

  it('throttles an address that keeps failing before any lookup, while verified keys still pass', async () => {
    const tenant = await newTenant();
    const { apiKey } = await createKey(pool, { tenant });
    const { pool: countingPool, queries } = counted(pool);
    const auth = await replica({ failuresPerClient: 5 }, countingPool);
    const attacker = '203.0.113.9';
    await auth.authenticate(apiKey, attacker); // verified (and cached) before the flood
    const lookups = () => queries.filter((text) => text.includes('key_hash')).length;
    const before = lookups();

    // Five failures (unknown keys and a malformed one) are each answered 401; then the address gets 429 for
    // every key that is not already verified, without a lookup.
    for (let attempt = 0; attempt < 4; attempt++)
      expect((await rejection(auth.authenticate(generateApiKey().key, attacker))).status).toBe(401);
    expect((await rejection(auth.authenticate('fin_not-a-real-key', attacker))).status).toBe(401);
    expect(lookups() - before).toBe(4);
    for (const key of [generateApiKey().key, 'fin_not-a-real-key']) {
      const throttled = await rejection(auth.authenticate(key, attacker));
      expect(throttled.toBody()).toEqual({
        detail: expect.stringMatching(/^Too many failed authentication attempts from this address\. Retry in \d+ s\.$/),
        status_code: 429,
        type: 'rate_limit_exceeded',
      });
      expect(Number(throttled.headers['Retry-After'])).toBeGreaterThanOrEqual(1);
    }
    expect(lookups() - before).toBe(4);
    // A key already verified costs nothing and still passes; other addresses are not affected.
    await expect(auth.authenticate(apiKey, attacker)).resolves.toMatchObject({ tenantName: tenant });
    expect((await rejection(auth.authenticate(generateApiKey().key, '198.51.100.7'))).status).toBe(401);

    // A burst sent at once is bounded too: lookups in flight count until they succeed.
    const burstFrom = '198.51.100.99';
    const start = lookups();
    const outcomes = await Promise.all(Array.from({ length: 40 }, () => rejection(auth.authenticate(generateApiKey().key, burstFrom))));
    expect(lookups() - start).toBe(5);
    expect(outcomes.filter((error) => error.status === 401)).toHaveLength(5);
    expect(outcomes.filter((error) => error.status === 429)).toHaveLength(35);
  });

  it('does not count a successful lookup as a failure, nor a burst of one valid key not yet verified', async () => {
    const tenant = await newTenant();
    const auth = await replica({ failuresPerClient: 2 });
    for (let key = 0; key < 5; key++) {
      const { apiKey } = await createKey(pool, { tenant });
      await expect(auth.authenticate(apiKey, '203.0.113.20')).resolves.toMatchObject({ tenantName: tenant });
    }
    // Many requests of one key at once, before it is verified, share one lookup: none is throttled.
    const { apiKey } = await createKey(pool, { tenant });
    const principals = await Promise.all(Array.from({ length: 50 }, () => auth.authenticate(apiKey, '203.0.113.21')));
    expect(principals.every((principal) => principal.tenantName === tenant)).toBe(true);
  });

  it('tells the watchers of a key when it is revoked or its tenant disabled, on every replica, within seconds', async () => {
    const tenant = await newTenant();
    const first = await createKey(pool, { tenant });
    const second = await createKey(pool, { tenant });
    const a = await replica();
    const b = await replica({}, poolB);
    const firstPrincipal = await a.authenticate(first.apiKey);
    const secondPrincipal = await b.authenticate(second.apiKey);
    const ended: string[] = [];
    a.watch(firstPrincipal, () => ended.push('first on a'));
    b.watch(firstPrincipal, () => ended.push('first on b'));
    b.watch(secondPrincipal, () => ended.push('second on b'));
    const stopped = a.watch(secondPrincipal, () => ended.push('second on a, unwatched'));
    stopped();

    // Other changes to a key or its tenant end nothing.
    await setLimitOverride(pool, tenant, 'news', 250);
    await revokeKey(pool, first.key.id);
    await waitFor(() => ended.length === 2, { timeoutMs: 5_000, what: 'the revocation to reach both replicas' });
    expect(ended.sort()).toEqual(['first on a', 'first on b']);

    await disableTenant(pool, tenant);
    await waitFor(() => ended.length === 3, { timeoutMs: 5_000, what: 'the tenant change to reach the watcher' });
    expect(ended[2]).toBe('second on b');
  });

  it('tells a watcher when its key expires, and one that starts watching just after a revocation at once', async () => {
    const tenant = await newTenant();
    const auth = await replica();
    const expiring = await createKey(pool, { tenant, expiresAt: new Date(Date.now() + 1_500) });
    let expired = false;
    auth.watch(await auth.authenticate(expiring.apiKey), () => (expired = true));
    await waitFor(() => expired, { timeoutMs: 5_000, what: 'the watcher to be told of the expiry' });

    // A stream authenticated before a revocation whose watch begins after the notification arrived.
    const revoked = await createKey(pool, { tenant });
    const principal = await auth.authenticate(revoked.apiKey);
    await revokeKey(pool, revoked.key.id);
    await waitFor(
      async () =>
        await auth.authenticate(revoked.apiKey).then(
          () => false,
          () => true,
        ),
      { timeoutMs: 5_000, what: 'the revocation to arrive' },
    );
    let ended = false;
    auth.watch(principal, () => (ended = true));
    await waitFor(() => ended, { timeoutMs: 5_000, what: 'the late watcher to be told' });
  });

  it('gives unknown, revoked and expired keys and disabled tenants the same 401', async () => {
    const tenant = await newTenant();
    const revoked = await createKey(pool, { tenant });
    await revokeKey(pool, revoked.key.id);
    const expired = await createKey(pool, { tenant });
    await pool.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [expired.key.id]);
    const disabledTenant = await newTenant();
    const ofDisabled = await createKey(pool, { tenant: disabledTenant });
    await disableTenant(pool, disabledTenant);

    const auth = await replica();
    const bodies = await Promise.all(
      [generateApiKey().key, revoked.apiKey, expired.apiKey, ofDisabled.apiKey].map(async (apiKey) =>
        (await rejection(auth.authenticate(apiKey))).toBody(),
      ),
    );
    for (const body of bodies) expect(body).toEqual({ detail: 'Invalid API key.', status_code: 401, type: 'unauthorized' });
  });

  it('refuses a cached key once it expires', async () => {
    const tenant = await newTenant();
    const { apiKey } = await createKey(pool, { tenant, expiresAt: new Date(Date.now() + 1_500) });
    const { pool: countingPool, queries } = counted(pool);
    const auth = await replica({}, countingPool);
    await auth.authenticate(apiKey);
    await auth.authenticate(apiKey);
    expect(queries).toHaveLength(1); // the second came from the cache
    await waitFor(
      async () =>
        await auth.authenticate(apiKey).then(
          () => false,
          (error: unknown) => (error as AppError).status === 401,
        ),
      {
        timeoutMs: 5_000,
        what: 'the expired key to be refused',
      },
    );
  });

  it('answers 403 for a key without the product scope', async () => {
    const tenant = await newTenant();
    const { apiKey } = await createKey(pool, { tenant, scopes: ['news'] });
    const principal = await (await replica()).authenticate(apiKey);
    expect(() => requireScope(principal, 'news')).not.toThrow();
    let error: unknown;
    try {
      requireScope(principal, 'stock-report');
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).toBody()).toEqual({
      detail: 'This API key does not have the stock-report scope.',
      status_code: 403,
      type: 'forbidden',
    });
  });

  it('serves repeated requests from the cache, and coalesces concurrent lookups of one key', async () => {
    const tenant = await newTenant();
    const { apiKey } = await createKey(pool, { tenant });
    const { pool: countingPool, queries } = counted(pool);
    const auth = await replica({}, countingPool);
    const principals = await Promise.all(Array.from({ length: 20 }, () => auth.authenticate(apiKey)));
    expect(new Set(principals.map((p) => p.keyId)).size).toBe(1);
    expect(queries).toHaveLength(1);
    for (let index = 0; index < 50; index++) await auth.authenticate(apiKey);
    expect(queries).toHaveLength(1);
    expect(auth.cacheSize).toBe(1);
  });

  it('renews a busy key before its TTL runs out, in the background: no request waits for the lookup', async () => {
    const tenant = await newTenant();
    const { apiKey } = await createKey(pool, { tenant });
    // Lookups wait at a gate while it is closed, so a request that waited for one could not finish.
    let gate: Promise<void> = Promise.resolve();
    let open = () => {};
    const lookups: string[] = [];
    const gated = new Proxy(pool, {
      get(target, property) {
        if (property === 'query') {
          return async (...args: unknown[]) => {
            const first = args[0] as string | { text: string };
            lookups.push(typeof first === 'string' ? first : first.text);
            await gate;
            return (target.query as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const ttl = 3_000;
    const auth = await replica({ cacheTtlMs: ttl }, gated);
    const first = await auth.authenticate(apiKey);
    expect(lookups).toHaveLength(1);
    const verifiedAt = Date.now();

    gate = new Promise((resolve) => (open = resolve));
    // Before three quarters of the TTL: served from the cache, nothing looked up.
    await auth.authenticate(apiKey);
    expect(lookups).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, ttl * 0.8 - (Date.now() - verifiedAt)));
    // Past it: still answered from the cache while the renewing lookup is held at the gate.
    expect((await auth.authenticate(apiKey)).keyId).toBe(first.keyId);
    expect(lookups).toHaveLength(2);
    expect((await auth.authenticate(apiKey)).keyId).toBe(first.keyId);
    expect(lookups).toHaveLength(2);

    open();
    await new Promise((resolve) => setTimeout(resolve, ttl * 1.2 - (Date.now() - verifiedAt)));
    // Past the first verification's TTL: the renewed entry answers, with no lookup of its own.
    expect((await auth.authenticate(apiKey)).keyId).toBe(first.keyId);
    expect(lookups).toHaveLength(2);
  });

  it('keeps the cache bounded, dropping the least recently used key', async () => {
    const tenant = await newTenant();
    const keys = await Promise.all([1, 2, 3].map(() => createKey(pool, { tenant })));
    const [first, second, third] = keys.map((created) => created.apiKey) as [string, string, string];
    const { pool: countingPool, queries } = counted(pool);
    const auth = await replica({ maxCacheEntries: 2 }, countingPool);
    await auth.authenticate(first);
    await auth.authenticate(second);
    await auth.authenticate(first); // first is now the most recently used
    await auth.authenticate(third); // evicts second
    expect(auth.cacheSize).toBe(2);
    expect(queries).toHaveLength(3);
    await auth.authenticate(first);
    await auth.authenticate(third);
    expect(queries).toHaveLength(3);
    await auth.authenticate(second);
    expect(queries).toHaveLength(4);
    expect(auth.cacheSize).toBe(2);
  });

  describe('two replicas', () => {
    async function warm(apiKey: string, ...replicas: PostgresAuthenticator[]) {
      for (const auth of replicas) {
        await auth.authenticate(apiKey);
        await auth.authenticate(apiKey); // now cached for a minute
      }
    }
    const refused = (auth: PostgresAuthenticator, apiKey: string) =>
      auth.authenticate(apiKey).then(
        () => false,
        (error: unknown) => (error as AppError).status === 401,
      );

    it('refuse a revoked key within seconds although it is cached for a minute', async () => {
      const tenant = await newTenant();
      const { apiKey, key } = await createKey(pool, { tenant });
      const a = await replica();
      const b = await replica({}, poolB);
      await warm(apiKey, a, b);
      const revokedAt = Date.now();
      await revokeKey(pool, key.displayPrefix);
      await waitFor(async () => (await refused(a, apiKey)) && (await refused(b, apiKey)), {
        timeoutMs: 5_000,
        what: 'both replicas to refuse',
      });
      expect(Date.now() - revokedAt).toBeLessThan(2_000);
      expect(a.cacheSize).toBe(0);
      expect(b.cacheSize).toBe(0);
    });

    it('refuse every key of a disabled tenant, and other tenants keep their cache', async () => {
      const tenant = await newTenant();
      const other = await newTenant();
      const { apiKey } = await createKey(pool, { tenant });
      const { apiKey: otherKey } = await createKey(pool, { tenant: other });
      const a = await replica();
      const b = await replica({}, poolB);
      await warm(apiKey, a, b);
      await warm(otherKey, a, b);
      await disableTenant(pool, tenant);
      await waitFor(async () => (await refused(a, apiKey)) && (await refused(b, apiKey)), {
        timeoutMs: 5_000,
        what: 'both replicas to refuse',
      });
      expect(a.cacheSize).toBe(1);
      await expect(a.authenticate(otherKey)).resolves.toMatchObject({ tenantName: other });
    });

    it('see scope and limit changes within seconds', async () => {
      const tenant = await newTenant();
      const { apiKey, key } = await createKey(pool, { tenant, scopes: ['news'] });
      const a = await replica();
      const b = await replica({}, poolB);
      await warm(apiKey, a, b);
      await pool.query("UPDATE api_keys SET scopes = '{news,stock-report}' WHERE id = $1", [key.id]);
      await setLimitOverride(pool, tenant, 'stock-report', 40);
      const updated = (p: Principal) => p.scopes.includes('stock-report') && p.limitOverrides['stock-report'] === 40;
      await waitFor(async () => updated(await a.authenticate(apiKey)) && updated(await b.authenticate(apiKey)), {
        timeoutMs: 5_000,
        what: 'both replicas to see the new scope and limit',
      });
    });
  });

  it('still refuses a revoked key within seconds while its change listener is down, and reconnects', async () => {
    const tenant = await newTenant();
    const { apiKey, key } = await createKey(pool, { tenant });
    // Slow to reconnect (≥ 4 s), so the revocation below happens while no notification can arrive.
    const auth = await replica({ reconnectDelayMs: 5_000, disconnectedCacheTtlMs: 1_000 });
    await auth.authenticate(apiKey);
    const { rows } = await pool.query<{ killed: boolean }>(
      `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
        WHERE datname = current_database() AND query = 'LISTEN api_key_changed'`,
    );
    expect(rows).toEqual([{ killed: true }]);
    await waitFor(() => !auth.listening, { what: 'the listener to notice' });
    await revokeKey(pool, key.id);
    const started = Date.now();
    await waitFor(
      async () =>
        await auth.authenticate(apiKey).then(
          () => false,
          (error: unknown) => (error as AppError).status === 401,
        ),
      {
        timeoutMs: 5_000,
        what: 'the revoked key to be refused without notifications',
      },
    );
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(auth.listening).toBe(false);
    await waitFor(() => auth.listening, { timeoutMs: 10_000, what: 'the listener to reconnect' });
  });

  it('records last use at most once per flush, not per request, without evicting the cache', async () => {
    const tenant = await newTenant();
    const { apiKey, key } = await createKey(pool, { tenant });
    const { pool: countingPool, queries } = counted(pool);
    const auth = await replica({ lastUsedFlushMs: 3_600_000 }, countingPool);
    for (let index = 0; index < 25; index++) await auth.authenticate(apiKey);
    const lastUsed = async () =>
      (await pool.query<{ last_used_at: Date | null }>('SELECT last_used_at FROM api_keys WHERE id = $1', [key.id])).rows[0]?.last_used_at;
    expect(await lastUsed()).toBeNull();
    await auth.flushLastUsed();
    expect(await lastUsed()).toBeInstanceOf(Date);
    expect(queries.filter((text) => text.startsWith('UPDATE api_keys SET last_used_at'))).toHaveLength(1);
    // The update does not notify (the trigger leaves last_used_at out), so the key is still cached.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const before = queries.length;
    await auth.authenticate(apiKey);
    expect(queries.length).toBe(before);
  });
});
