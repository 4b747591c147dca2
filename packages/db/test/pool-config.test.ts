import { ConfigError, parseConfig, redactConfig } from '@fin/config';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { createPool, databasePoolConfigShape, sessionPoolOf, type Pool } from '../src';

describe('database pool settings', () => {
  it('read DATABASE_POOL_MAX (default 10) and refuse a value out of range, naming the variable', () => {
    expect(parseConfig(databasePoolConfigShape, {})).toEqual({ DATABASE_POOL_MAX: 10 });
    expect(parseConfig(databasePoolConfigShape, { DATABASE_POOL_MAX: '25' })).toMatchObject({ DATABASE_POOL_MAX: 25 });
    for (const bad of ['0', '501', 'ten']) {
      expect(() => parseConfig(databasePoolConfigShape, { DATABASE_POOL_MAX: bad })).toThrow(ConfigError);
      expect(() => parseConfig(databasePoolConfigShape, { DATABASE_POOL_MAX: bad })).toThrow(/DATABASE_POOL_MAX/);
    }
  });

  it('log DATABASE_DIRECT_URL without its password', () => {
    const config = parseConfig(databasePoolConfigShape, { DATABASE_DIRECT_URL: 'postgresql://app:s3cret@db:5432/app' });
    expect(JSON.stringify(redactConfig(databasePoolConfigShape, config))).not.toContain('s3cret');
    expect(() => parseConfig(databasePoolConfigShape, { DATABASE_DIRECT_URL: 'mysql://db/app' })).toThrow(/DATABASE_DIRECT_URL/);
  });
});

describe('sessionPoolOf', () => {
  let db: TestDatabase;
  let pool: Pool;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'pool-config-test', max: 2 });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('is the pool itself without a direct URL', async () => {
    const session = sessionPoolOf(pool, { directUrl: undefined, applicationName: 'news-api' });
    expect(session.pool).toBe(pool);
    await session.close();
    // Closing it leaves the caller's pool open.
    expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('is a small pool of its own on the direct URL, named after the process', async () => {
    const session = sessionPoolOf(pool, { directUrl: db.url, applicationName: 'news-api' });
    try {
      expect(session.pool).not.toBe(pool);
      expect(session.pool.options.max).toBe(2);
      const { rows } = await session.pool.query<{ name: string }>("SELECT current_setting('application_name') AS name");
      expect(rows).toEqual([{ name: 'news-api-direct' }]);
    } finally {
      await session.close();
    }
    expect(session.pool.ended).toBe(true);
  });
});
