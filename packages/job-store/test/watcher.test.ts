import { createPool, type Pool } from '@fin/db';
import { createLogger } from '@fin/log';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { createJobWatcher, submitJob } from '../src';

const logger = createLogger({ service: 'job-store-test', level: 'silent' });

/** Finishes a job as its runner's final commit would (status with result or error). */
async function finishJob(
  pool: Pool,
  jobId: string,
  outcome: { result: Record<string, unknown> } | { error: { type: string; detail: string } },
): Promise<void> {
  await pool.query(
    'UPDATE jobs SET status = $2, result = $3, error = $4, progress = 100, finished_at = now() WHERE id = $1',
    'result' in outcome
      ? [jobId, 'completed', JSON.stringify(outcome.result), null]
      : [jobId, 'failed', null, JSON.stringify(outcome.error)],
  );
}

describe('job watcher', () => {
  let db: TestDatabase;
  let pool: Pool;
  let tenantId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'watcher-test', max: 6 });
    const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('w') RETURNING id");
    tenantId = rows[0]!.id;
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  const newJob = async () => (await submitJob(pool, { tenantId, jobType: 'analysis', request: { prompt: 'p' } })).jobId;
  const never = () => new AbortController().signal;

  it('wakes on the job_finished notification, with the result or the error', async () => {
    // No poll within the test's lifetime: only the notification can wake the waiters.
    const watcher = createJobWatcher({ pool, logger, pollIntervalMs: 600_000 });
    try {
      const [done, broken] = [await newJob(), await newJob()];
      const waits = [watcher.finished(done, never()), watcher.finished(broken, never())];
      await finishJob(pool, done, { result: { format: 'markdown', content: 'ok' } });
      await finishJob(pool, broken, { error: { type: 'gateway_timeout', detail: 'Too slow.' } });
      expect(await Promise.all(waits)).toEqual([
        { status: 'completed', result: { format: 'markdown', content: 'ok' } },
        { status: 'failed', error: { type: 'gateway_timeout', detail: 'Too slow.' } },
      ]);
      // A finished job is answered at once.
      expect(await watcher.finished(done, never())).toMatchObject({ status: 'completed' });
    } finally {
      await watcher.close();
    }
  });

  it('gives up when the signal aborts', async () => {
    const watcher = createJobWatcher({ pool, logger, pollIntervalMs: 600_000 });
    try {
      const controller = new AbortController();
      const waiting = watcher.finished(await newJob(), controller.signal);
      controller.abort();
      expect(await waiting).toBeUndefined();
    } finally {
      await watcher.close();
    }
  });

  it('still wakes its waiters after losing its LISTEN connection', async () => {
    const watcher = createJobWatcher({ pool, logger, pollIntervalMs: 100, reconnectDelayMs: 50 });
    try {
      const jobId = await newJob();
      const waiting = watcher.finished(jobId, never());
      const { rows } = await waitFor(
        async () => {
          const found = await pool.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN job_finished'",
          );
          return found.rowCount === 1 && found;
        },
        { what: 'the LISTEN connection' },
      );
      expect(rows).toHaveLength(1);
      await finishJob(pool, jobId, { result: { format: 'json', content: {} } });
      expect(await waiting).toEqual({ status: 'completed', result: { format: 'json', content: {} } });
    } finally {
      await watcher.close();
    }
  });
});
