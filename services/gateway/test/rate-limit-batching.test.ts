import { createPool, type Pool } from '@fin/db';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { FailOpenBreaker, PostgresRateLimitStore } from '../src/rate-limit/postgres-store';

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
});
