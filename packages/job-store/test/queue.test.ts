import { randomUUID } from 'node:crypto';
import { createPool, type Pool } from '@fin/db';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { attemptRecorder, claimNext, readQueuePosition, type ClaimNextParams, type NextClaim } from '../src';

describe('fair claiming between tenants', () => {
  let db: TestDatabase;
  let pool: Pool;
  const tenants: Record<'a' | 'b' | 'c', string> = { a: '', b: '', c: '' };

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'queue-test', max: 8 });
    for (const name of ['a', 'b', 'c'] as const)
      tenants[name] = (await pool.query<{ id: string }>('INSERT INTO tenants (name) VALUES ($1) RETURNING id', [name])).rows[0]!.id;
  });
  beforeEach(async () => {
    await pool.query('DELETE FROM outbox');
    await pool.query('DELETE FROM jobs');
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  /** Pending news jobs of a tenant, one per `createdAt` offset (seconds ago: larger is older). */
  async function queue(tenant: keyof typeof tenants, ...secondsAgo: number[]): Promise<string[]> {
    const ids: string[] = [];
    for (const ago of secondsAgo) {
      const id = randomUUID();
      await pool.query(
        "INSERT INTO jobs (id, tenant_id, type, request, created_at) VALUES ($1, $2, 'news', '{}', now() - $3 * interval '1 second')",
        [id, tenants[tenant], ago],
      );
      ids.push(id);
    }
    return ids;
  }

  const params: ClaimNextParams = { jobType: 'news', workerId: 'w1', leaseMs: 30_000, tenantCap: 100 };
  const next = (overrides: Partial<ClaimNextParams> = {}) => claimNext(pool, { ...params, ...overrides });
  const tenantOf = (claim: NextClaim) => {
    if (claim.kind !== 'claimed') return claim.kind;
    return Object.entries(tenants).find(([, id]) => id === claim.job.tenantId)![0];
  };
  const position = (tenant: keyof typeof tenants, jobId: string) =>
    readQueuePosition(pool, { tenantId: tenants[tenant], jobType: 'news', jobId });

  it('takes the next job from the tenant with the least running, then the oldest, and writes running with its event', async () => {
    const backlog = await queue('a', 100, 99, 98, 97, 96);
    const [b1] = await queue('b', 50);
    const [c1, c2] = await queue('c', 10, 9);
    const order: string[] = [];
    for (let i = 0; i < 8; i++) order.push(tenantOf(await next()));
    // a (oldest), then b and c (nothing running), then a and b/c alternate by level and age.
    expect(order).toEqual(['a', 'b', 'c', 'a', 'c', 'a', 'a', 'a']);
    expect(await next()).toEqual({ kind: 'none' });

    const { rows } = await pool.query<{ id: string; status: string; lease_owner: string; attempts: number }>(
      'SELECT id, status, lease_owner, attempts FROM jobs ORDER BY created_at',
    );
    expect(rows.every((row) => row.status === 'running' && row.lease_owner === 'w1' && row.attempts === 1)).toBe(true);
    const events = await pool.query<{ message_key: string; status: string; seq: number }>(
      "SELECT message_key, envelope #>> '{payload,status}' AS status, (envelope #>> '{payload,seq}')::int AS seq FROM outbox WHERE topic = 'jobs.events'",
    );
    expect(events.rows.map((event) => event.message_key).sort()).toEqual([...backlog, b1, c1, c2].sort());
    expect(events.rows.every((event) => event.status === 'running' && event.seq === 1001)).toBe(true);
  });

  it('claims exactly what claimAndStart would: not a job with a live lease or without attempts left, but an expired lease', async () => {
    const [live, spent, expired, retrying] = await queue('a', 40, 30, 20, 10);
    await pool.query(
      "UPDATE jobs SET status = 'running', lease_owner = 'other', lease_expires_at = now() + interval '1 minute' WHERE id = $1",
      [live],
    );
    await pool.query('UPDATE jobs SET attempts = 3, max_attempts = 3 WHERE id = $1', [spent]);
    await pool.query(
      "UPDATE jobs SET status = 'running', lease_owner = 'dead', lease_expires_at = now() - interval '1 second', attempts = 1 WHERE id = $1",
      [expired],
    );
    // A retryable failure keeps the job, unheld, until its retry delay has passed.
    await pool.query(
      "UPDATE jobs SET status = 'running', lease_owner = NULL, lease_expires_at = now() + interval '1 minute', attempts = 1 WHERE id = $1",
      [retrying],
    );
    const claimed = await next();
    expect(claimed).toMatchObject({ kind: 'claimed', job: { id: expired, attempt: 2 } });
    expect(await next()).toEqual({ kind: 'none' });
  });

  it('passes over a tenant at its cap of work running, counted from live leases across runners', async () => {
    await queue('a', 100, 99, 98, 97);
    await queue('b', 10, 9);
    const claimed: string[] = [];
    for (let i = 0; i < 5; i++) claimed.push(tenantOf(await next({ tenantCap: 2, workerId: `w${i % 2}` })));
    // a's third and fourth jobs wait until a has fewer than two running.
    expect(claimed).toEqual(['a', 'b', 'a', 'b', 'none']);
    // One of a's jobs ends (its lease is released): a may run another.
    await pool.query(
      "UPDATE jobs SET status = 'completed', result = '{}', lease_owner = NULL, lease_expires_at = NULL WHERE id = (SELECT id FROM jobs WHERE tenant_id = $1 AND lease_owner IS NOT NULL LIMIT 1)",
      [tenants.a],
    );
    expect(tenantOf(await next({ tenantCap: 2 }))).toBe('a');
    expect(await next({ tenantCap: 2 })).toEqual({ kind: 'none' });
    // A lease that expired (its runner died) is not running work.
    await pool.query("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE tenant_id = $1 AND lease_owner IS NOT NULL", [
      tenants.b,
    ]);
    expect(tenantOf(await next({ tenantCap: 2 }))).toBe('b');
  });

  it('never hands one job to two concurrent claimers, and keeps the cap under concurrent claims', async () => {
    await queue('a', ...Array.from({ length: 30 }, (_, i) => 100 - i));
    await queue('b', ...Array.from({ length: 30 }, (_, i) => 100 - i));
    // Eight claimers at once, each until nothing is left for it.
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        for (;;) {
          const claim = await next({ workerId: `w${i}`, tenantCap: 12 });
          if (claim.kind === 'none') return;
          if (claim.kind === 'claimed') ids.push(claim.job.id);
        }
      }),
    );
    expect(new Set(ids).size).toBe(ids.length);
    const { rows } = await pool.query<{ tenant_id: string; running: number }>(
      'SELECT tenant_id, count(*)::int AS running FROM jobs WHERE lease_owner IS NOT NULL GROUP BY tenant_id',
    );
    expect(rows.map((row) => row.running)).toEqual([12, 12]);
    expect(ids.length).toBe(24);
  });

  it('leases a job in two round trips: the claim (its choice, lease, running and event) and the completion', async () => {
    // A pool of one connection whose every statement sent is counted: a round trip each (pg sends one at a time).
    const counted = createPool({ connectionString: db.url, applicationName: 'queue-test-round-trips', max: 1 });
    let statements = 0;
    counted.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      client.query = ((...args: unknown[]) => {
        statements += 1;
        return query(...args);
      }) as typeof client.query;
    });
    try {
      await counted.query('SELECT 1');
      const [id] = await queue('a', 10);
      statements = 0;
      const claim = await claimNext(counted, params);
      expect(claim).toMatchObject({ kind: 'claimed', job: { id, attempt: 1, eventsWritten: 1, progress: 5 } });
      expect(statements).toBe(1);
      if (claim.kind !== 'claimed') return;
      expect(
        await attemptRecorder({ pool: counted, workerId: 'w1', retryDelayMs: 60_000 }, claim.job).complete({ result: { ok: true } }),
      ).toBe(true);
      expect(statements).toBe(2);
      // Nothing left: one round trip to say so.
      expect(await claimNext(counted, params)).toEqual({ kind: 'none' });
      expect(statements).toBe(3);
      const events = await pool.query<{ message_key: string; job_id: string; status: string; seq: number }>(
        `SELECT message_key, envelope #>> '{payload,job_id}' AS job_id, envelope #>> '{payload,status}' AS status,
                (envelope #>> '{payload,seq}')::int AS seq FROM outbox WHERE topic = 'jobs.events' ORDER BY id`,
      );
      expect(events.rows).toEqual([
        { message_key: id, job_id: id, status: 'running', seq: 1001 },
        { message_key: id, job_id: id, status: 'completed', seq: 1002 },
      ]);
    } finally {
      await counted.end();
    }
  });

  it('counts the jobs ahead of a pending job as the fair order takes them', async () => {
    const a = await queue('a', 100, 99, 98, 97, 96, 95);
    const [b1, b2] = await queue('b', 50, 49);
    const [c1] = await queue('c', 10);
    // Nothing running: round robin by level, ties to the older job. a1 b1 c1 | a2 b2 | a3 | a4 …
    expect(await position('a', a[0]!)).toBe(0);
    expect(await position('b', b1!)).toBe(1);
    expect(await position('c', c1!)).toBe(2);
    expect(await position('a', a[1]!)).toBe(3);
    expect(await position('b', b2!)).toBe(4);
    expect(await position('a', a[5]!)).toBe(5 + 2 + 1);
    // Take a1, b1, c1, a2 in that order: each position drops as the jobs ahead start.
    for (let i = 0; i < 4; i++) await next();
    expect(await position('b', b2!)).toBe(0);
    expect(await position('a', a[2]!)).toBe(1);
    // Not pending (running), another tenant's, or unknown: no position.
    expect(await position('a', a[0]!)).toBeUndefined();
    expect(await position('b', a[2]!)).toBeUndefined();
    expect(await position('a', randomUUID())).toBeUndefined();
  });
});
