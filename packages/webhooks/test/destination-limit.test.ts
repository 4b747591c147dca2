// Issue 40, item 3: the per-minute limit of one account's attempts holds per destination, not per host name. Many
// names on one address are one destination (found from outside: 39 names on one address made 21× the limit), so
// are many names under one registrable domain whatever they resolve to, and the minute slides (a fixed window let
// 391 attempts through in a sliding minute). The names resolve through the executor's injected resolver, as
// wildcard DNS would resolve them; every attempt is counted where it is recorded, in webhook_attempts.
import { randomBytes } from 'node:crypto';
import { WebhookCreateRequest } from '@fin/contracts';
import { createKeyring, createToolExecutor, type ToolExecutor } from '@fin/customer-tools';
import { testCertificate } from '@fin/customer-tools/testing';
import { createPool, type Pool } from '@fin/db';
import { createLogger } from '@fin/log';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { createWebhookDispatcher, createWebhookStore, type WebhookDispatcher, type WebhookStore } from '../src';
import { startFakeReceiver, type FakeReceiver } from './support';

const logger = createLogger({ service: 'webhooks-destination-test', level: 'silent' });
const keyring = createKeyring({ id: 'k1', key: randomBytes(32) });
const ALL_PRODUCTS = ['news', 'stock-report', 'analysis'] as const;
const LIMIT = 3;

/** Wildcard DNS as an attacker runs it: `<anything>.hooks.localhost` gives a new address per name, the rest one address. */
const ADDRESSES: Record<string, string> = {
  'a.hooks.localhost': '127.0.0.2',
  'b.hooks.localhost': '127.0.0.3',
  'c.hooks.localhost': '127.0.0.4',
  'd.hooks.localhost': '127.0.0.5',
};
const resolve = (hostname: string) => Promise.resolve([ADDRESSES[hostname] ?? '127.0.0.1']);
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

describe('the per-minute limit of one account to one destination', () => {
  let db: TestDatabase;
  let pool: Pool;
  let store: WebhookStore;
  let executor: ToolExecutor;
  let receiver: FakeReceiver;
  let tenantId: string;
  const dispatchers: WebhookDispatcher[] = [];

  const dispatcher = (options: Partial<Parameters<typeof createWebhookDispatcher>[0]> = {}) => {
    const made = createWebhookDispatcher({ pool, keyring, executor, logger, hostAttemptsPerMinute: LIMIT, ...options });
    dispatchers.push(made);
    return made;
  };
  /** Endpoints on these hosts (the receiver's port), each with `tests` test events queued. */
  const queueTo = async (hosts: readonly string[], tests: number) => {
    const port = new URL(receiver.url).port;
    for (const host of hosts) {
      const hook = await store.create(tenantId, WebhookCreateRequest.parse({ url: `https://${host}:${port}/hooks` }), ALL_PRODUCTS);
      for (let i = 0; i < tests; i++) await store.queueTest(tenantId, hook.id, ALL_PRODUCTS);
    }
  };
  const attempts = async () => (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_attempts')).rows[0]?.n;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'webhooks-destination-test' });
    store = createWebhookStore({ pool, keyring, addressPolicy: { allowLoopback: true } });
    executor = createToolExecutor({ allowLoopback: true, ca: (await testCertificate()).cert, resolve, resolutionTtlMs: 30_000 });
    receiver = await startFakeReceiver();
    const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('acme') RETURNING id");
    tenantId = rows[0]?.id ?? '';
  });

  afterEach(async () => {
    await Promise.all(dispatchers.splice(0).map((made) => made.stop()));
    await pool.query('DELETE FROM webhook_endpoints; DELETE FROM webhook_deliveries; DELETE FROM rate_limit_counters');
    receiver.reset();
  });

  afterAll(async () => {
    await receiver?.close();
    await executor?.close();
    await pool?.end();
    await db?.drop();
  });

  it('counts every name that resolves to one address as that one address', async () => {
    // Five host names, five registrable domains (or none), one address: the receiver's.
    await queueTo(['localhost', '127.0.0.1', 'alpha.localhost', 'beta.localhost', 'gamma.localhost'], 2);
    const limited = dispatcher();
    expect(await limited.runOnce()).toBe(LIMIT);
    expect(await limited.runOnce()).toBe(0);
    expect(await attempts()).toBe(LIMIT);
    // The rest wait, unattempted, for the minute to have room.
    const { rows } = await pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'pending' AND attempt_count = 0 AND next_attempt_at > now() + interval '30 seconds'",
    );
    expect(rows[0]?.n).toBe(10 - LIMIT);
  });

  it('counts every name under one registrable domain as that domain, whatever addresses it gives', async () => {
    // Four names of hooks.localhost on four addresses (nothing listens there: each attempt is a refused connection).
    await queueTo(Object.keys(ADDRESSES), 2);
    const limited = dispatcher();
    expect(await limited.runOnce()).toBe(LIMIT);
    expect(await limited.runOnce()).toBe(0);
    expect(await attempts()).toBe(LIMIT);
  });

  it('counts over a sliding minute: attempts late in one minute still count early in the next', async () => {
    const windowMs = 3_000;
    const limited = dispatcher({ hostWindowMs: windowMs });
    const started = Date.now();
    await queueTo(['localhost'], 1);
    expect(await limited.runOnce()).toBe(1);
    await sleep(2_000);
    await queueTo(['localhost'], 2);
    expect(await limited.runOnce()).toBe(2);
    // A fixed window that began with the first attempt has ended; the last window still holds the later two.
    await sleep(started + windowMs + 300 - Date.now());
    await queueTo(['localhost'], 3);
    expect(await limited.runOnce()).toBe(1);
    expect(receiver.received).toHaveLength(4);
    // The other two wait until the two attempts of second 2 have left the window.
    const { rows } = await pool.query<{ waits_ms: number }>(
      `SELECT (extract(epoch FROM next_attempt_at - now()) * 1000)::float8 AS waits_ms
         FROM webhook_deliveries WHERE status = 'pending' AND attempt_count = 0`,
    );
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row.waits_ms).toBeGreaterThan(1_000);
  });
});
