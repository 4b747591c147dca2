// A worker's leases renewed together (src/lease-keeper.ts): one statement a heartbeat for every job it holds, each
// renewed only while it is still this runner's attempt.
import { randomUUID } from 'node:crypto';
import { createPool, type Pool } from '@fin/db';
import { createLogger } from '@fin/log';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { claimJob, createLeaseKeeper, type LeaseKeeper } from '../src';

const logger = createLogger({ service: 'lease-keeper-test', level: 'silent' });

describe('the lease keeper', () => {
  let db: TestDatabase;
  let pool: Pool;
  let tenantId: string;
  let keeper: LeaseKeeper | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'lease-keeper-test', max: 4 });
    tenantId = (await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('lease-keeper') RETURNING id")).rows[0]!.id;
  });
  afterEach(() => keeper?.close());
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  /** A news job claimed by `workerId` with a lease of `leaseMs`. */
  async function claimedJob(workerId: string, leaseMs: number): Promise<{ id: string; attempt: number }> {
    const id = randomUUID();
    await pool.query("INSERT INTO jobs (id, tenant_id, type, request) VALUES ($1, $2, 'news', '{}')", [id, tenantId]);
    const job = await claimJob(pool, { jobId: id, jobType: 'news', workerId, leaseMs });
    return { id, attempt: job!.attempt };
  }
  const leaseLeftMs = async (id: string) =>
    (
      await pool.query<{ left: number }>(
        'SELECT (extract(epoch FROM lease_expires_at - now()) * 1000)::int AS left FROM jobs WHERE id = $1',
        [id],
      )
    ).rows[0]!.left;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('renews every held lease each heartbeat, stops with release, and reports a lease taken by another runner as lost', async () => {
    keeper = createLeaseKeeper({ pool, logger, workerId: 'worker-a', leaseMs: 2_000, heartbeatMs: 150 });
    const jobs = await Promise.all(Array.from({ length: 30 }, () => claimedJob('worker-a', 2_000)));
    const lost: string[] = [];
    const held = jobs.map((job) => keeper!.hold(job, () => lost.push(job.id)));
    expect(keeper.size).toBe(30);

    // Another runner took the first job (its lease expired and was claimed again: a new attempt).
    await pool.query("UPDATE jobs SET lease_owner = 'worker-b', attempts = attempts + 1 WHERE id = $1", [jobs[0]!.id]);
    // The second is released (its attempt ended) and must not be renewed any more.
    held[1]!.release();
    await pool.query("UPDATE jobs SET lease_expires_at = now() + interval '500 milliseconds' WHERE id = $1", [jobs[1]!.id]);

    await sleep(1_500);
    expect(lost).toEqual([jobs[0]!.id]);
    expect(keeper.size).toBe(28);
    // Held leases stay about a whole lease ahead; the released one ran out; the lost one is not this runner's.
    for (const job of jobs.slice(2)) expect(await leaseLeftMs(job.id)).toBeGreaterThan(1_500);
    expect(await leaseLeftMs(jobs[1]!.id)).toBeLessThan(0);
    expect(
      (await pool.query<{ lease_owner: string }>('SELECT lease_owner FROM jobs WHERE id = $1', [jobs[0]!.id])).rows[0]!.lease_owner,
    ).toBe('worker-b');
  });

  it('renews in one statement whatever the number of leases held', async () => {
    keeper = createLeaseKeeper({ pool, logger, workerId: 'worker-c', leaseMs: 5_000, heartbeatMs: 200 });
    const jobs = await Promise.all(Array.from({ length: 50 }, () => claimedJob('worker-c', 5_000)));
    for (const job of jobs) keeper.hold(job, () => undefined);
    const queries: string[] = [];
    const query = pool.query.bind(pool);
    const spy = jest.spyOn(pool, 'query').mockImplementation(((config: { name?: string }, ...rest: unknown[]) => {
      queries.push(typeof config === 'object' && config !== null ? (config.name ?? '') : String(config));
      return (query as (...args: unknown[]) => unknown)(config, ...rest);
    }) as typeof pool.query);
    try {
      await sleep(500);
    } finally {
      spy.mockRestore();
    }
    // Two heartbeats in 500 ms: two statements for 50 leases, not 100.
    expect(queries.filter((name) => name === 'job-store-renew-held').length).toBeGreaterThanOrEqual(1);
    expect(queries.length).toBeLessThanOrEqual(3);
  });
});
