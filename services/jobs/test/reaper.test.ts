import { type Pool, createPool } from '@fin/db';
import { JobRequestedPayload, jobRequestTopics, jobsEventsTopic } from '@fin/events';
import { REAPER_LOCK_CLASS, attemptRecorder, type LeasedJob } from '@fin/job-store';
import { type TestDatabase, createTestDatabase, waitFor } from '@fin/testing';
import { createLeaseReaper } from '../src/reaper';
import { createTenant, insertJob, jobRow, testLogger } from './support';

interface OutboxRow {
  topic: string;
  message_key: string;
  payload: unknown;
}

describe('lease reaper', () => {
  let db: TestDatabase;
  let pool: Pool;
  let tenantId: string;
  const logger = testLogger();
  const reaper = () => createLeaseReaper({ pool, logger, batchSize: 5 });

  /** What a runner holding (or believing it holds) the job's lease for `attempt` writes through. */
  const runner = (id: string, workerId: string, attempt: number, type: LeasedJob['type'] = 'news') =>
    attemptRecorder({ pool, workerId, retryDelayMs: 1_000 }, { id, type, tenantId, request: {}, attempt, maxAttempts: 3, cacheKey: null });

  async function outboxFor(jobId: string): Promise<OutboxRow[]> {
    const { rows } = await pool.query<OutboxRow>(
      "SELECT topic, message_key, envelope->'payload' AS payload FROM outbox WHERE message_key = $1 ORDER BY id",
      [jobId],
    );
    return rows;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'jobs-reaper-test' });
    tenantId = await createTenant(pool);
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });
  beforeEach(async () => {
    await pool.query('DELETE FROM jobs');
    await pool.query('DELETE FROM outbox');
  });

  it('requests a job whose lease expired again, once, and clears the lease', async () => {
    const request = { symbols: ['AAPL', 'MSFT'], n: 5 };
    const id = await insertJob(pool, {
      tenantId,
      type: 'stock-report',
      status: 'running',
      progress: 40,
      currentlyWorkingOn: 'Looking up market data',
      request,
      attempts: 1,
      eventSeq: 1003,
      leaseOwner: 'worker-1',
      leaseSeconds: -5,
    });

    expect(await reaper().sweep()).toEqual({ ran: true, requeued: 1, failed: 0 });
    const row = await jobRow(pool, id);
    expect(row).toMatchObject({
      status: 'running',
      progress: 40,
      attempts: 1,
      lease_owner: null,
      lease_expires_at: null,
      currently_working_on: 'Retrying after an interrupted attempt (attempt 2 of 3)',
    });
    const outbox = await outboxFor(id);
    expect(outbox).toEqual([
      {
        topic: jobRequestTopics['stock-report'].name,
        message_key: id,
        payload: { job_id: id, job_type: 'stock-report', tenant_id: tenantId, attempt: 2 },
      },
    ]);
    expect(JobRequestedPayload.safeParse(outbox[0]?.payload).success).toBe(true);

    // The cleared lease is not expired: a later sweep leaves the job to the worker that claims it.
    expect(await reaper().sweep()).toEqual({ ran: true, requeued: 0, failed: 0 });
    expect(await outboxFor(id)).toHaveLength(1);

    // The lost worker's late writes do not overwrite the retry; the next attempt's do.
    const lost = runner(id, 'worker-1', 1, 'stock-report');
    expect(await lost.progress(60, 'Zombie step')).toMatchObject({ written: false });
    expect(await lost.complete({ result: { news: [] }, customerToolSet: null })).toBe(false);
    await pool.query(
      "UPDATE jobs SET attempts = 2, lease_owner = 'worker-2', lease_expires_at = now() + interval '30 seconds' WHERE id = $1",
      [id],
    );
    expect(await runner(id, 'worker-2', 2, 'stock-report').progress(5, 'Looking up market data')).toMatchObject({ written: true });
    expect(await jobRow(pool, id)).toMatchObject({
      status: 'running',
      progress: 40,
      currently_working_on: 'Looking up market data',
      event_seq: 2001,
    });
  });

  it('fails a job whose last attempt lost its lease, with the reason', async () => {
    const id = await insertJob(pool, {
      tenantId,
      status: 'running',
      progress: 70,
      attempts: 3,
      maxAttempts: 3,
      eventSeq: 3002,
      leaseOwner: 'worker-3',
      leaseSeconds: -1,
    });
    expect(await reaper().sweep()).toEqual({ ran: true, requeued: 0, failed: 1 });
    const row = await jobRow(pool, id);
    expect(row).toMatchObject({
      status: 'failed',
      progress: 70,
      result: null,
      error: { type: 'internal_error', detail: 'The job did not finish: its worker stopped responding on all 3 attempts.' },
      lease_owner: null,
    });
    expect(row.finished_at).toBeInstanceOf(Date);
    expect(row.event_seq).toBeGreaterThanOrEqual(4000);
    // Observers are told, with an event numbered past every attempt's.
    expect(await outboxFor(id)).toEqual([
      {
        topic: jobsEventsTopic.name,
        message_key: id,
        payload: {
          job_id: id,
          job_type: 'news',
          seq: 4000,
          status: 'failed',
          progress: 70,
          currently_working_on: 'Failed',
          error: row.error,
        },
      },
    ]);
    // A dead worker's completion attempted afterwards changes nothing.
    expect(await runner(id, 'worker-3', 3).complete({ result: { news: [] }, customerToolSet: null })).toBe(false);
    expect((await jobRow(pool, id)).status).toBe('failed');
  });

  it('also reaps a pending job whose worker died before reporting anything', async () => {
    const id = await insertJob(pool, { tenantId, status: 'pending', attempts: 1, leaseOwner: 'worker-1', leaseSeconds: -1 });
    expect(await reaper().sweep()).toMatchObject({ requeued: 1 });
    expect(await outboxFor(id)).toHaveLength(1);
  });

  it('leaves live leases, unclaimed jobs and finished jobs alone', async () => {
    const live = await insertJob(pool, {
      tenantId,
      status: 'running',
      attempts: 1,
      leaseOwner: 'worker-1',
      leaseSeconds: 30,
      currentlyWorkingOn: 'Ranking news by relevance',
    });
    const unclaimed = await insertJob(pool, { tenantId });
    const done = await insertJob(pool, {
      tenantId,
      status: 'completed',
      progress: 100,
      result: { news: [] },
      attempts: 1,
      leaseOwner: 'worker-1',
      leaseSeconds: -60,
    });
    expect(await reaper().sweep()).toEqual({ ran: true, requeued: 0, failed: 0 });
    expect(await jobRow(pool, live)).toMatchObject({ lease_owner: 'worker-1', currently_working_on: 'Ranking news by relevance' });
    expect(await jobRow(pool, unclaimed)).toMatchObject({ status: 'pending', currently_working_on: null });
    expect(await jobRow(pool, done)).toMatchObject({ status: 'completed' });
    const { rowCount } = await pool.query('SELECT 1 FROM outbox');
    expect(rowCount).toBe(0);
  });

  it('fails a job that no worker claimed in time, with a reason, and leaves recent ones pending', async () => {
    const stale = await insertJob(pool, { tenantId });
    const recent = await insertJob(pool, { tenantId });
    await pool.query("UPDATE jobs SET updated_at = now() - interval '10 minutes' WHERE id = $1", [stale]);
    expect(await reaper().sweep()).toEqual({ ran: true, requeued: 0, failed: 1 });
    expect(await jobRow(pool, stale)).toMatchObject({
      status: 'failed',
      error: {
        type: 'service_unavailable',
        detail: 'The job could not be started: no worker picked it up within 5 minute(s). Please submit the request again.',
      },
    });
    expect(await jobRow(pool, recent)).toMatchObject({ status: 'pending' });
    expect((await outboxFor(stale)).map((event) => event.topic)).toEqual([jobsEventsTopic.name]);
  });

  it('leaves a job waiting its turn in a long queue pending while workers of its type are running jobs', async () => {
    const waiting = await insertJob(pool, { tenantId, type: 'stock-report' });
    await pool.query("UPDATE jobs SET updated_at = now() - interval '10 minutes' WHERE id = $1", [waiting]);
    const busy = await insertJob(pool, {
      tenantId,
      type: 'stock-report',
      status: 'running',
      attempts: 1,
      leaseOwner: 'w',
      leaseSeconds: 30,
    });
    expect(await reaper().sweep()).toEqual({ ran: true, requeued: 0, failed: 0 });
    expect(await jobRow(pool, waiting)).toMatchObject({ status: 'pending' });
    // Once no worker of the type holds a job, the wait counts as no worker picking it up.
    await pool.query("UPDATE jobs SET status = 'completed', result = '{}', lease_owner = NULL, lease_expires_at = NULL WHERE id = $1", [
      busy,
    ]);
    expect(await reaper().sweep()).toMatchObject({ failed: 1 });
    expect(await jobRow(pool, waiting)).toMatchObject({ status: 'failed', error: { type: 'service_unavailable' } });
  });

  it('settles the daily-budget reservations nothing holds: of jobs that ended (or that it fails) and expired ones', async () => {
    await pool.query('DELETE FROM token_reservations');
    const running = await insertJob(pool, { tenantId, status: 'running', attempts: 1, leaseOwner: 'worker-1', leaseSeconds: 60 });
    const completed = await insertJob(pool, { tenantId, status: 'completed', result: { news: [] }, attempts: 1 });
    const abandoned = await insertJob(pool, {
      tenantId,
      status: 'running',
      attempts: 3,
      maxAttempts: 3,
      leaseOwner: 'w',
      leaseSeconds: -1,
    });
    const reserve = async (name: string, jobId: string | null, expiresInSeconds: number) => {
      await pool.query(
        `INSERT INTO token_reservations (id, tenant_id, product, tokens, job_id, expires_at)
         VALUES (gen_random_uuid(), $1, $2, 1000, $3, now() + $4 * interval '1 second')`,
        [tenantId, name, jobId, expiresInSeconds],
      );
    };
    await reserve('news', running, 3_600);
    // Attached while its job was ending: the job's end did not see it.
    await reserve('stock-report', completed, 3_600);
    // The job's last lease ran out (its worker died): failing it settles its reservation.
    await reserve('analysis', abandoned, 3_600);
    // Left by a gateway that died before it attached or released it.
    await reserve('chat', null, -1);
    // A request still being answered.
    await reserve('news', null, 600);

    expect(await reaper().sweep()).toEqual({ ran: true, requeued: 0, failed: 1 });
    const { rows } = await pool.query<{ job_id: string | null }>('SELECT job_id FROM token_reservations ORDER BY job_id NULLS LAST');
    expect(rows).toEqual([{ job_id: running }, { job_id: null }]);
  });

  it('prunes handled-event records older than a week', async () => {
    await pool.query('DELETE FROM processed_events');
    await pool.query(
      `INSERT INTO processed_events (consumer, event_id, processed_at) VALUES
         ('jobs-service', gen_random_uuid(), now() - interval '8 days'), ('jobs-service', gen_random_uuid(), now() - interval '1 day')`,
    );
    await reaper().sweep();
    const { rows } = await pool.query<{ age: string }>(
      "SELECT (now() - processed_at > interval '2 days')::text AS age FROM processed_events",
    );
    expect(rows).toEqual([{ age: 'false' }]);
  });

  it('never requeues a job twice when two reapers sweep at once', async () => {
    // More than one batch, so the reapers contend across several transactions.
    const ids = await Promise.all(
      Array.from({ length: 12 }, (_, index) =>
        insertJob(pool, { tenantId, status: 'running', attempts: 1, leaseOwner: `worker-${index}`, leaseSeconds: -10 }),
      ),
    );
    const [first, second] = [reaper(), reaper()];
    const results = await Promise.all([first.sweep(), second.sweep(), first.sweep(), second.sweep()]);
    expect(results.reduce((sum, result) => sum + result.requeued, 0)).toBe(12);

    const { rows } = await pool.query<{ message_key: string; count: string }>(
      'SELECT message_key, count(*) FROM outbox GROUP BY message_key',
    );
    expect(rows.map((row) => row.message_key).sort()).toEqual([...ids].sort());
    expect(rows.every((row) => row.count === '1')).toBe(true);
  });

  it('does nothing while another replica holds the reaper lock', async () => {
    const id = await insertJob(pool, { tenantId, status: 'running', attempts: 1, leaseOwner: 'worker-1', leaseSeconds: -10 });
    const other = await pool.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT pg_advisory_xact_lock($1::int, 0)', [REAPER_LOCK_CLASS]);
      expect(await reaper().sweep()).toEqual({ ran: false, requeued: 0, failed: 0 });
      expect(await jobRow(pool, id)).toMatchObject({ lease_owner: 'worker-1' });
      await other.query('COMMIT');
    } finally {
      other.release();
    }
    expect(await reaper().sweep()).toEqual({ ran: true, requeued: 1, failed: 0 });
  });

  it('sweeps on its interval once started, until stopped', async () => {
    const background = createLeaseReaper({ pool, logger, intervalMs: 50 });
    background.start();
    try {
      const id = await insertJob(pool, { tenantId, status: 'running', attempts: 1, leaseOwner: 'worker-1', leaseSeconds: -1 });
      const requested = await waitFor(
        async () => {
          const rows = await outboxFor(id);
          return rows.length > 0 && rows;
        },
        { what: 'the background sweep to requeue the job' },
      );
      expect(requested).toHaveLength(1);
    } finally {
      await background.stop();
    }
  });
});
