import { createPool, type Pool } from '@fin/db';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { FailOpenBreaker, LEASE_SHARE, LOCAL_SHARE, PostgresRateLimitStore } from '../src/rate-limit/postgres-store';

describe('rate-limit store: batched statements and local counting', () => {
  let db: TestDatabase;
  let pool: Pool;
  let statements = 0;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'batching-test', max: 4 });
    // Counts the statements sent (the database itself is real).
    const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
    (pool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args: unknown[]) => {
      statements += 1;
      return query(...args);
    };
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('gives concurrent hits on one counter consecutive counts from fewer statements', async () => {
    const store = new PostgresRateLimitStore(pool, 'news:', 60_000, new FailOpenBreaker(5_000), 2_000);
    statements = 0;
    const results = await Promise.all(Array.from({ length: 50 }, async () => store.increment('key-1')));
    expect(results.map((result) => result.totalHits).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(new Set(results.map((result) => result.resetTime?.getTime())).size).toBe(1);
    expect(statements).toBeLessThan(50);
    expect(statements).toBeGreaterThanOrEqual(2);
    const { rows } = await pool.query<{ hits: number }>("SELECT hits FROM rate_limit_counters WHERE counter_key = 'news:key-1'");
    expect(rows[0]?.hits).toBe(50);
  });

  it('sends a lone hit at once, and keeps counters apart', async () => {
    const store = new PostgresRateLimitStore(pool, 'jobs:', 60_000, new FailOpenBreaker(5_000), 2_000);
    statements = 0;
    expect((await store.increment('a')).totalHits).toBe(1);
    expect(statements).toBe(1);
    const [a, b] = await Promise.all([store.increment('a'), store.increment('b')]);
    expect([a.totalHits, b.totalHits]).toEqual([2, 1]);
  });

  async function hitsIn(counterKey: string): Promise<number | undefined> {
    const { rows } = await pool.query<{ hits: number }>('SELECT hits FROM rate_limit_counters WHERE counter_key = $1', [counterKey]);
    return rows[0]?.hits;
  }

  /** `count` hits one after another (each awaited), as one busy client makes them. */
  async function sequential(store: PostgresRateLimitStore, key: string, limit: number, count: number): Promise<number[]> {
    const totals: number[] = [];
    for (let hit = 0; hit < count; hit++) {
      store.limitFor(key, limit);
      totals.push((await store.increment(key)).totalHits);
    }
    return totals;
  }

  it('counts a busy key with a large limit locally: the same counts, and the database gets them in one sync', async () => {
    const store = new PostgresRateLimitStore(pool, 'news:', 60_000, new FailOpenBreaker(5_000), 2_000);
    statements = 0;
    const totals = await sequential(store, 'busy', 1_000_000, 500);
    expect(totals).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
    // The first hit reads the counter; the next 499 are counted here, within the local budget.
    expect(statements).toBeLessThanOrEqual(2);
    await store.sync();
    expect(await hitsIn('news:busy')).toBe(500);
    await store.close();
  });

  it('counts a key with a small limit from leased counts, hit by hit near the limit, and one without a known limit hit by hit', async () => {
    const store = new PostgresRateLimitStore(pool, 'news:', 60_000, new FailOpenBreaker(5_000), 2_000);
    statements = 0;
    expect(await sequential(store, 'small', 100, 120)).toEqual(Array.from({ length: 120 }, (_, i) => i + 1));
    // Leases of 1/16 of the headroom: 1 + 6, then 5, 5, 4 … until the headroom leaves none (about 30 statements
    // for 100 hits), then one statement per hit past the limit.
    expect(statements).toBeLessThan(60);
    expect(statements).toBeGreaterThan(20);
    expect(await hitsIn('news:small')).toBe(120);
    statements = 0;
    for (let hit = 1; hit <= 30; hit++) expect((await store.increment('unknown')).totalHits).toBe(hit);
    expect(statements).toBe(30);
  });

  it('hands each leased count out once across two processes: exactly the limit admitted, every count once', async () => {
    const stores = [0, 1].map(() => new PostgresRateLimitStore(pool, 'leased:', 60_000, new FailOpenBreaker(5_000), 2_000));
    const limit = 100;
    statements = 0;
    // Ten times the limit at once, alternating the two processes, as the e2e accuracy suite sends it.
    const totals = (
      await Promise.all(
        Array.from({ length: 10 * limit }, async (_, n) => {
          const store = stores[n % 2] as PostgresRateLimitStore;
          store.limitFor('burst', limit);
          return (await store.increment('burst')).totalHits;
        }),
      )
    ).sort((a, b) => a - b);
    const admitted = totals.filter((total) => total <= limit);
    expect(admitted).toEqual(Array.from({ length: limit }, (_, i) => i + 1));
    expect(new Set(totals).size).toBe(totals.length);
    // Every hit is in the database (refused ones too), and at most a lease per process reserved beyond them.
    const total = (await hitsIn('leased:burst')) ?? 0;
    expect(total).toBeGreaterThanOrEqual(10 * limit);
    expect(total).toBeLessThanOrEqual(10 * limit + 2 * Math.floor(limit / LEASE_SHARE));
    for (const store of stores) await store.close();
  });

  it('keeps a lease to its window', async () => {
    const store = new PostgresRateLimitStore(pool, 'leased:', 1_000, new FailOpenBreaker(5_000), 2_000);
    expect(await sequential(store, 'short', 100, 3)).toEqual([1, 2, 3]);
    // The first statement reserved 6 counts (1/16 of 99); the window then ends with 4 of them unused.
    expect(await hitsIn('leased:short')).toBe(7);
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    statements = 0;
    expect(await sequential(store, 'short', 100, 1)).toEqual([1]);
    expect(statements).toBe(1);
    await store.close();
  });

  it('admits locally no more than 1/256 of the headroom it last saw; beyond, hits wait for the database', async () => {
    const store = new PostgresRateLimitStore(pool, 'jobs:', 60_000, new FailOpenBreaker(5_000), 2_000);
    const limit = 10 * LOCAL_SHARE;
    store.limitFor('capped', limit);
    expect(await store.increment('capped')).toMatchObject({ totalHits: 1 });
    // Another session holds the counter's row: every statement on it waits, so what is admitted meanwhile is
    // exactly what this process may admit on its own.
    const blocker = await pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query("SELECT hits FROM rate_limit_counters WHERE counter_key = 'jobs:capped' FOR UPDATE");
      const results = Array.from({ length: 20 }, () => {
        store.limitFor('capped', limit);
        return store.increment('capped');
      });
      const local = results.filter((result) => !(result instanceof Promise));
      expect(local).toHaveLength(Math.floor((limit - 1) / LOCAL_SHARE));
      await blocker.query('COMMIT');
      const totals = (await Promise.all(results.map(async (result) => result))).map((result) => result.totalHits);
      // Counted locally or waiting, each hit got its own count, in order.
      expect(totals).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
    } finally {
      blocker.release();
    }
    await store.sync();
    expect(await hitsIn('jobs:capped')).toBe(21);
    await store.close();
  });

  it("ends a counter's local view with its window", async () => {
    const store = new PostgresRateLimitStore(pool, 'tools:', 1_000, new FailOpenBreaker(5_000), 2_000);
    const first = await sequential(store, 'windowed', 1_000_000, 40);
    expect(first).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    await store.sync();
    expect(await hitsIn('tools:windowed')).toBe(40);
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    statements = 0;
    store.limitFor('windowed', 1_000_000);
    // The window has ended: the view is not used, the hit reads the restarted counter.
    expect((await store.increment('windowed')).totalHits).toBe(1);
    expect(statements).toBe(1);
    await store.close();
  });

  it('admits at most 1 % over the limit across two processes counting one busy key locally, and not fewer than it', async () => {
    const other = createPool({ connectionString: db.url, applicationName: 'batching-test-b', max: 4 });
    try {
      const limit = 20_000;
      const stores = [pool, other].map((on) => new PostgresRateLimitStore(on, 'analysis:', 60_000, new FailOpenBreaker(5_000), 2_000));
      let admitted = 0;
      let hits = 0;
      statements = 0;
      // Five clients per process, each sending its next request when the last is answered, until refused.
      await Promise.all(
        stores.flatMap((store) =>
          Array.from({ length: 5 }, async () => {
            for (;;) {
              store.limitFor('shared', limit);
              hits++;
              const { totalHits } = await store.increment('shared');
              if (totalHits > limit) return;
              admitted++;
            }
          }),
        ),
      );
      await Promise.all(stores.map((store) => store.close()));
      expect(admitted).toBeLessThanOrEqual(limit * 1.01);
      // Each refusal means the shared count had passed the limit; at most the ten clients' last hits were refused.
      expect(admitted).toBeGreaterThanOrEqual(limit - 10);
      // Every hit is in the shared counter once the processes have synchronised.
      expect(await hitsIn('analysis:shared')).toBe(hits);
      // Counting locally: far fewer statements than hits (the pool above counts those of the first process only).
      expect(statements).toBeLessThan(hits / 10);
    } finally {
      await other.end();
    }
  });

  it('bounds what a replica with a stale view admits beyond the limit by its local budget (under 1 %)', async () => {
    const other = createPool({ connectionString: db.url, applicationName: 'batching-test-d', max: 4 });
    try {
      const limit = 20_000;
      const [idle, busy] = [pool, other].map(
        (on) => new PostgresRateLimitStore(on, 'chat-turns:', 60_000, new FailOpenBreaker(5_000), 2_000),
      ) as [PostgresRateLimitStore, PostgresRateLimitStore];
      let admitted = 0;
      const until = (store: PostgresRateLimitStore) =>
        Promise.all(
          Array.from({ length: 5 }, async () => {
            for (;;) {
              store.limitFor('stale', limit);
              if ((await store.increment('stale')).totalHits > limit) return;
              admitted++;
            }
          }),
        );
      // The idle replica reads the counter once (its view: 1 hit), then the busy one uses up the limit...
      idle.limitFor('stale', limit);
      await idle.increment('stale');
      admitted++;
      await until(busy);
      // ...and the idle replica's clients arrive while its view still says 1 hit.
      await until(idle);
      await Promise.all([idle.close(), busy.close()]);
      expect(admitted - limit).toBeLessThanOrEqual(Math.floor(limit / LOCAL_SHARE));
      expect(admitted).toBeLessThanOrEqual(limit * 1.01);
      expect(admitted).toBeGreaterThanOrEqual(limit);
    } finally {
      await other.end();
    }
  });

  it('counts hits on many keys arriving together in one statement, each key exactly', async () => {
    const store = new PostgresRateLimitStore(pool, 'stock-report:', 60_000, new FailOpenBreaker(5_000), 2_000);
    const keys = Array.from({ length: 200 }, (_, i) => `many-${i}`);
    statements = 0;
    // Key i gets 1 + i % 3 hits, all at once.
    const results = await Promise.all(
      keys.flatMap((key, i) =>
        Array.from({ length: 1 + (i % 3) }, async () => {
          store.limitFor(key, 20);
          return { key, totalHits: (await store.increment(key)).totalHits };
        }),
      ),
    );
    expect(statements).toBeLessThanOrEqual(3);
    keys.forEach((key, i) => {
      const counts = results.filter((result) => result.key === key).map((result) => result.totalHits);
      expect(counts.sort((a, b) => a - b)).toEqual(Array.from({ length: 1 + (i % 3) }, (_, n) => n + 1));
    });
    const { rows } = await pool.query<{ counter_key: string; hits: number }>(
      "SELECT counter_key, hits FROM rate_limit_counters WHERE counter_key LIKE 'stock-report:many-%'",
    );
    expect(rows).toHaveLength(200);
    // Each key's hits and the one count its first statement reserved (a lease: 1/16 of the headroom under 20).
    for (const row of rows) expect(row.hits).toBe(1 + (Number(row.counter_key.split('-').at(-1)) % 3) + 1);
  });

  it('does not deadlock when two processes batch overlapping keys, and loses no hit', async () => {
    const other = createPool({ connectionString: db.url, applicationName: 'batching-test-c', max: 4 });
    try {
      const stores = [pool, other].map((on) => new PostgresRateLimitStore(on, 'tools:', 60_000, new FailOpenBreaker(5_000), 5_000));
      const keys = Array.from({ length: 60 }, (_, i) => `overlap-${i}`);
      // Each process walks the keys in its own order, 20 clients each, 30 hits per client.
      const perStore = await Promise.all(
        stores.map((store, which) =>
          Promise.all(
            Array.from({ length: 20 }, async (_, client) => {
              for (let hit = 0; hit < 30; hit++) {
                const index = which === 0 ? (client * 7 + hit) % keys.length : keys.length - 1 - ((client * 11 + hit) % keys.length);
                const key = keys[index] as string;
                // A limit too small for counts reserved ahead (a local budget, a lease): the database then holds
                // exactly the hits made.
                store.limitFor(key, 10);
                await store.increment(key);
              }
            }),
          ),
        ),
      );
      expect(perStore).toHaveLength(2);
      const { rows } = await pool.query<{ total: string }>(
        "SELECT sum(hits)::text AS total FROM rate_limit_counters WHERE counter_key LIKE 'tools:overlap-%'",
      );
      expect(Number(rows[0]?.total)).toBe(2 * 20 * 30);
    } finally {
      await other.end();
    }
  });
});
