import { type Pool, createPool } from '@fin/db';
import { reaperActions } from '@fin/metrics';
import { type TestDatabase, createTestDatabase } from '@fin/testing';
import { createLeaseReaper } from '../src/reaper';
import { createTenant, insertJob, testLogger } from './support';

/** fin_reaper_actions_total by action, as a scrape reads it. */
async function actions(): Promise<Record<string, number>> {
  const { values } = await reaperActions.get();
  return Object.fromEntries(values.map(({ labels, value }) => [String(labels.action), value]));
}

describe('lease reaper metrics', () => {
  let db: TestDatabase;
  let pool: Pool;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'jobs-reaper-metrics-test' });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('counts what each sweep did by action: requeued, failed on the last attempt, failed unclaimed', async () => {
    const tenantId = await createTenant(pool);
    const before = await actions();
    // Two leases ran out with attempts left, one on the last attempt, and one job no worker ever claimed.
    for (let i = 0; i < 2; i += 1)
      await insertJob(pool, { tenantId, status: 'running', attempts: 1, leaseOwner: 'gone', leaseSeconds: -5 });
    await insertJob(pool, { tenantId, status: 'running', attempts: 3, maxAttempts: 3, leaseOwner: 'gone', leaseSeconds: -5 });
    const unclaimed = await insertJob(pool, { tenantId });
    await pool.query("UPDATE jobs SET updated_at = now() - interval '10 minutes' WHERE id = $1", [unclaimed]);

    expect(await createLeaseReaper({ pool, logger: testLogger() }).sweep()).toEqual({ ran: true, requeued: 2, failed: 2 });
    const after = await actions();
    const grew = (action: string) => (after[action] ?? 0) - (before[action] ?? 0);
    expect({ requeued: grew('requeued'), failed_expired: grew('failed_expired'), failed_unclaimed: grew('failed_unclaimed') }).toEqual({
      requeued: 2,
      failed_expired: 1,
      failed_unclaimed: 1,
    });
  });
});
