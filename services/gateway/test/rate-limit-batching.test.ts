import { createPool, type Pool } from '@fin/db';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { CREDIT_SHARE, FailOpenBreaker, MAX_CREDITS, PostgresRateLimitStore } from '../src/rate-limit/postgres-store';

describe('rate-limit store batching', () => {
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
    const results = await Promise.all(Array.from({ length: 50 }, () => store.increment('key-1')));
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

  it('reserves hits ahead for a busy key with a large limit: the same counts from far fewer statements', async () => {
    const store = new PostgresRateLimitStore(pool, 'news:', 60_000, new FailOpenBreaker(5_000), 2_000);
    statements = 0;
    const totals = await sequential(store, 'busy', 1_000_000, 500);
    expect(totals).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
    // 1 + 2 + 3 + 5 + 9 + 17 + 33 + 65 + 65 … : the reservation doubles up to MAX_CREDITS.
    expect(statements).toBeLessThanOrEqual(15);
    const hits = (await hitsIn('news:busy')) ?? 0;
    expect(hits).toBeGreaterThanOrEqual(500);
    expect(hits).toBeLessThanOrEqual(500 + MAX_CREDITS);
  });

  it('counts a key with a small limit hit by hit, and one without a known limit too', async () => {
    const store = new PostgresRateLimitStore(pool, 'news:', 60_000, new FailOpenBreaker(5_000), 2_000);
    statements = 0;
    expect(await sequential(store, 'small', 100, 120)).toEqual(Array.from({ length: 120 }, (_, i) => i + 1));
    expect(statements).toBe(120);
    expect(await hitsIn('news:small')).toBe(120);
    statements = 0;
    for (let hit = 1; hit <= 30; hit++) expect((await store.increment('unknown')).totalHits).toBe(hit);
    expect(statements).toBe(30);
  });

  it('reserves no more than 1/256 of what is left of the limit', async () => {
    const store = new PostgresRateLimitStore(pool, 'jobs:', 60_000, new FailOpenBreaker(5_000), 2_000);
    const limit = 10 * CREDIT_SHARE;
    const totals = await sequential(store, 'capped', limit, 400);
    expect(totals).toEqual(Array.from({ length: 400 }, (_, i) => i + 1));
    // After the 400th count, what the database holds beyond it is the unused reservation.
    expect(((await hitsIn('jobs:capped')) ?? 0) - 400).toBeLessThanOrEqual(Math.floor((limit - 400) / CREDIT_SHARE) + 1);
  });

  it('ends the credits with their window', async () => {
    const store = new PostgresRateLimitStore(pool, 'tools:', 300, new FailOpenBreaker(5_000), 2_000);
    const first = await sequential(store, 'windowed', 1_000_000, 40);
    expect(first).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect((await hitsIn('tools:windowed')) ?? 0).toBeGreaterThan(40);
    await new Promise((resolve) => setTimeout(resolve, 350));
    statements = 0;
    store.limitFor('windowed', 1_000_000);
    expect((await store.increment('windowed')).totalHits).toBe(1);
    expect(statements).toBe(1);
  });

  it('never admits beyond the limit across two processes sharing a busy key, and refuses under 1 % early', async () => {
    const other = createPool({ connectionString: db.url, applicationName: 'batching-test-b', max: 4 });
    try {
      const limit = 20_000;
      const stores = [pool, other].map((on) => new PostgresRateLimitStore(on, 'analysis:', 60_000, new FailOpenBreaker(5_000), 2_000));
      const admitted: number[] = [];
      // Five clients per process, each sending its next request when the last is answered, until refused.
      await Promise.all(
        stores.flatMap((store) =>
          Array.from({ length: 5 }, async () => {
            for (;;) {
              store.limitFor('shared', limit);
              const { totalHits } = await store.increment('shared');
              if (totalHits > limit) return;
              admitted.push(totalHits);
            }
          }),
        ),
      );
      expect(admitted.length).toBeLessThanOrEqual(limit);
      expect(admitted.length).toBeGreaterThanOrEqual(limit * 0.99);
      // Each count was given to one request only.
      expect(new Set(admitted).size).toBe(admitted.length);
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
    const { rows } = await pool.query<{ counter_key: string; hits: number }>("SELECT counter_key, hits FROM rate_limit_counters WHERE counter_key LIKE 'stock-report:many-%'");
    expect(rows).toHaveLength(200);
    for (const row of rows) expect(row.hits).toBe(1 + (Number(row.counter_key.split('-').at(-1)) % 3));
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
                const index = which === 0 ? (client * 7 + hit) % keys.length : (keys.length - 1 - ((client * 11 + hit) % keys.length));
                const key = keys[index] as string;
                // A limit too small for hits reserved ahead: the database then holds exactly the hits made.
                store.limitFor(key, 100);
                await store.increment(key);
              }
            }),
          ),
        ),
      );
      expect(perStore).toHaveLength(2);
      const { rows } = await pool.query<{ total: string }>("SELECT sum(hits)::text AS total FROM rate_limit_counters WHERE counter_key LIKE 'tools:overlap-%'");
      expect(Number(rows[0]?.total)).toBe(2 * 20 * 30);
    } finally {
      await other.end();
    }
  });
});
