import { registry } from '@fin/metrics';
import { createEmptyDatabase, type TestDatabase } from '@fin/testing';
import { createPool, type Pool } from '../src';

/** The value of a pool metric's series for one pool, as a scrape reads it (undefined: no such series). */
async function poolValue(metric: string, pool: string, series = metric): Promise<number | undefined> {
  const found = registry.getSingleMetric(metric);
  if (found === undefined) throw new Error(`${metric} is not in the registry`);
  // A histogram's values carry the series they belong to (_bucket, _sum, _count) as metricName.
  const values = (await found.get()).values as { labels: Record<string, unknown>; value: number; metricName?: string }[];
  return values.find((value) => value.labels.pool === pool && (value.metricName ?? metric) === series)?.value;
}

describe('pool metrics', () => {
  let db: TestDatabase;
  let pool: Pool;

  beforeAll(async () => {
    db = await createEmptyDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });
  afterEach(async () => {
    if (!pool.ended) await pool.end();
  });

  it('reports open, idle and queued connections and the configured size of each pool by its name', async () => {
    pool = createPool({ connectionString: db.url, applicationName: 'metered-usage', max: 2 });
    expect(await poolValue('fin_db_pool_max_connections', 'metered-usage')).toBe(2);
    expect(await poolValue('fin_db_pool_connections', 'metered-usage')).toBe(0);
    const first = await pool.connect();
    const second = await pool.connect();
    const third = pool.connect();
    expect(await poolValue('fin_db_pool_connections', 'metered-usage')).toBe(2);
    expect(await poolValue('fin_db_pool_idle_connections', 'metered-usage')).toBe(0);
    expect(await poolValue('fin_db_pool_waiting_checkouts', 'metered-usage')).toBe(1);
    first.release();
    (await third).release();
    second.release();
    expect(await poolValue('fin_db_pool_idle_connections', 'metered-usage')).toBe(2);
    expect(await poolValue('fin_db_pool_waiting_checkouts', 'metered-usage')).toBe(0);
    // An ended pool is no longer reported.
    await pool.end();
    expect(await poolValue('fin_db_pool_connections', 'metered-usage')).toBeUndefined();
  });

  it('times the checkouts that waited for a busy pool, through connect() and through query()', async () => {
    pool = createPool({ connectionString: db.url, applicationName: 'metered-waits', max: 1 });
    const waits = () => poolValue('fin_db_pool_checkout_wait_seconds', 'metered-waits', 'fin_db_pool_checkout_wait_seconds_count');
    // A free pool: no wait is observed.
    await pool.query('SELECT 1');
    (await pool.connect()).release();
    expect((await waits()) ?? 0).toBe(0);

    const held = await pool.connect();
    const queuedQuery = pool.query<{ one: number }>('SELECT 1 AS one');
    const queuedCheckout = pool.connect();
    await new Promise((resolve) => setTimeout(resolve, 50));
    held.release();
    expect((await queuedQuery).rows).toEqual([{ one: 1 }]);
    (await queuedCheckout).release();
    expect(await waits()).toBe(2);
    const sum = await poolValue('fin_db_pool_checkout_wait_seconds', 'metered-waits', 'fin_db_pool_checkout_wait_seconds_sum');
    // The query waited at least the 50 ms the connection was held.
    expect(sum).toBeGreaterThanOrEqual(0.045);
  });
});
