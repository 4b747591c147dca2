import { type Pool, createPool } from '@fin/db';
import { jobsInFlight } from '@fin/metrics';
import { type TestDatabase, createTestDatabase } from '@fin/testing';
import { createJobGauges } from '../src/job-gauges';
import { createTenant, insertJob, testLogger } from './support';

/** fin_jobs_in_flight as `type/status: count`, as a scrape reads it. */
async function inFlight(): Promise<Record<string, number>> {
  const { values } = await jobsInFlight.get();
  return Object.fromEntries(values.map(({ labels, value }) => [`${String(labels.type)}/${String(labels.status)}`, value]));
}

describe('jobs in flight', () => {
  let db: TestDatabase;
  let pool: Pool;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'jobs-gauges-test' });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('counts pending and running jobs by type, leaves finished ones out, and reads 0 once they finish', async () => {
    const tenantId = await createTenant(pool);
    const gauges = createJobGauges({ pool, logger: testLogger(), intervalMs: 60_000 });
    for (let i = 0; i < 3; i += 1) await insertJob(pool, { tenantId, type: 'news' });
    await insertJob(pool, { tenantId, type: 'news', status: 'running', attempts: 1 });
    await insertJob(pool, { tenantId, type: 'stock-report', status: 'running', attempts: 1 });
    await insertJob(pool, { tenantId, type: 'analysis', status: 'completed', result: { text: 'done' } });

    await gauges.count();
    expect(await inFlight()).toMatchObject({ 'news/pending': 3, 'news/running': 1, 'stock-report/pending': 0, 'stock-report/running': 1 });
    expect(Object.keys(await inFlight())).not.toContain('analysis/pending');

    await pool.query(
      'UPDATE jobs SET status = \'failed\', error = \'{"type":"internal_error","detail":"x"}\' WHERE status <> \'completed\'',
    );
    // The timer's first count runs at start; stop waits for it.
    gauges.start();
    await gauges.stop();
    expect(await inFlight()).toMatchObject({ 'news/pending': 0, 'news/running': 0, 'stock-report/running': 0 });
  });
});
