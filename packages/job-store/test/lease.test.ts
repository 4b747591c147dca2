import { randomUUID } from 'node:crypto';
import { NO_USAGE } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { decodeEnvelope, jobsEventsTopic } from '@fin/events';
import { jobsFinished } from '@fin/metrics';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { attemptRecorder, cacheKeysFor, claimAndStart, claimJob, withToolSet, type LeasedJob } from '../src';

describe('job state written under the lease', () => {
  let db: TestDatabase;
  let pool: Pool;
  let tenantId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'lease-test', max: 6 });
    tenantId = (await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('lease') RETURNING id")).rows[0]!.id;
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  /** A pending news job filed under `cacheKey`, as a submission leaves it. */
  async function newJob(cacheKey: string | null = null, maxAttempts = 3): Promise<string> {
    const id = randomUUID();
    await pool.query("INSERT INTO jobs (id, tenant_id, type, request, cache_key, max_attempts) VALUES ($1, $2, 'news', '{}', $3, $4)", [
      id,
      tenantId,
      cacheKey,
      maxAttempts,
    ]);
    return id;
  }
  const claim = (jobId: string, workerId: string) => claimJob(pool, { jobId, jobType: 'news', workerId, leaseMs: 30_000 });
  const recorder = (job: LeasedJob, workerId: string) => attemptRecorder({ pool, workerId, retryDelayMs: 60_000 }, job);
  const row = async (id: string) =>
    (
      await pool.query<{
        status: string;
        progress: number;
        currently_working_on: string | null;
        result: unknown;
        error: unknown;
        event_seq: number;
        lease_owner: string | null;
        attempts: number;
      }>('SELECT status, progress, currently_working_on, result, error, event_seq, lease_owner, attempts FROM jobs WHERE id = $1', [id])
    ).rows[0]!;
  const events = async (id: string) =>
    (
      await pool.query<{ payload: { seq: number; status: string; progress: number; result?: unknown } }>(
        "SELECT envelope->'payload' AS payload FROM outbox WHERE topic = 'jobs.events' AND message_key = $1 ORDER BY id",
        [id],
      )
    ).rows.map((r) => r.payload);
  const cacheEntry = async (key: string) =>
    (
      await pool.query<{ job_id: string; tenant_id: string | null; result: unknown }>(
        'SELECT job_id, tenant_id, result FROM result_cache WHERE cache_key = $1',
        [key],
      )
    ).rows[0];

  it('writes each step and its event together, numbered within the attempt, progress never lower', async () => {
    const id = await newJob();
    const job = (await claim(id, 'w1'))!;
    expect(job).toMatchObject({ id, attempt: 1, maxAttempts: 3, tenantId, cacheKey: null });
    // A second delivery of the request finds the lease live.
    expect(await claim(id, 'w2')).toBeUndefined();
    const w1 = recorder(job, 'w1');
    expect(await w1.progress(5, 'Starting')).toEqual({ written: true, numbersLeft: true });
    expect(await w1.progress(40, 'Reading the news')).toMatchObject({ written: true });
    expect(await w1.progress(20, 'Ranking')).toMatchObject({ written: true });
    expect(await row(id)).toMatchObject({
      status: 'running',
      progress: 40,
      currently_working_on: 'Ranking',
      event_seq: 1003,
      lease_owner: 'w1',
    });
    expect((await events(id)).map((e) => [e.seq, e.status, e.progress])).toEqual([
      [1001, 'running', 5],
      [1002, 'running', 40],
      [1003, 'running', 40],
    ]);
  });

  it('claims and writes `running` with its event in one statement, numbered 1 within each attempt', async () => {
    const id = await newJob();
    const start = (workerId: string) => claimAndStart(pool, { jobId: id, jobType: 'news', workerId, leaseMs: 30_000 });
    const job = (await start('w1'))!;
    expect(job).toMatchObject({ id, attempt: 1, maxAttempts: 3, tenantId, cacheKey: null, eventsWritten: 1, progress: 5 });
    expect(await row(id)).toMatchObject({
      status: 'running',
      progress: 5,
      currently_working_on: 'Starting',
      event_seq: 1001,
      lease_owner: 'w1',
      attempts: 1,
    });
    // A second delivery finds the lease live and writes nothing.
    expect(await start('w2')).toBeUndefined();
    expect(await claimJob(pool, { jobId: id, jobType: 'news', workerId: 'w2', leaseMs: 30_000 })).toBeUndefined();
    const w1 = recorder(job, 'w1');
    expect(await w1.progress(40, 'Reading the news')).toMatchObject({ written: true });
    // The lease ran out and another worker claimed the job: its start is the next attempt's first number.
    await pool.query("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1", [id]);
    const second = (await start('w2'))!;
    expect(second).toMatchObject({ attempt: 2, eventsWritten: 1, progress: 40 });
    expect(await w1.complete({ result: { news: ['stale'] }, customerToolSet: null })).toBe(false);
    expect(await recorder(second, 'w2').complete({ result: { news: ['fresh'] }, customerToolSet: null })).toBe(true);
    const envelopes = (
      await pool.query<{ envelope: { type: string; payload: Record<string, unknown> } }>(
        "SELECT envelope FROM outbox WHERE topic = 'jobs.events' AND message_key = $1 ORDER BY id",
        [id],
      )
    ).rows.map((r) => r.envelope);
    expect(
      envelopes.map((e) => [e.payload.seq, e.payload.status, e.payload.progress, e.payload.currently_working_on, e.payload.worker_id]),
    ).toEqual([
      [1001, 'running', 5, 'Starting', 'w1'],
      [1002, 'running', 40, 'Reading the news', 'w1'],
      [2001, 'running', 40, 'Starting again (attempt 2 of 3)', 'w2'],
      [2002, 'completed', 100, 'Completed', 'w2'],
    ]);
    // What observers read back is a valid job.state event.
    for (const envelope of envelopes) expect(() => decodeEnvelope(jobsEventsTopic, JSON.stringify(envelope))).not.toThrow();
    // A finished job is claimed by nobody.
    expect(await start('w3')).toBeUndefined();
  });

  it('rejects every write of a stale attempt: its lease moved on to another worker', async () => {
    const id = await newJob();
    const first = (await claim(id, 'w1'))!;
    const stale = recorder(first, 'w1');
    await stale.progress(30, 'Working');
    // The lease ran out (the worker paused) and another worker claimed the job: attempt 2.
    await pool.query("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1", [id]);
    const second = (await claim(id, 'w2'))!;
    expect(second.attempt).toBe(2);
    expect(await stale.progress(90, 'Late step')).toMatchObject({ written: false });
    expect(await stale.renew(30_000)).toBe(false);
    expect(await stale.complete({ result: { news: ['stale'] }, customerToolSet: null })).toBe(false);
    expect(await stale.fail({ type: 'internal_error', detail: 'late' })).toBe(false);
    expect(await stale.retryLater('late retry')).toBe(false);
    expect(await row(id)).toMatchObject({ status: 'running', progress: 30, lease_owner: 'w2', attempts: 2 });
    const fresh = recorder(second, 'w2');
    expect(await fresh.complete({ result: { news: ['fresh'] }, customerToolSet: null })).toBe(true);
    expect(await row(id)).toMatchObject({
      status: 'completed',
      progress: 100,
      result: { news: ['fresh'] },
      event_seq: 2001,
      lease_owner: null,
    });
    // One completion event, the fresh attempt's; the stale attempt's writes left no events.
    expect((await events(id)).map((e) => [e.seq, e.status])).toEqual([
      [1001, 'running'],
      [2001, 'completed'],
    ]);
  });

  it('keeps a finished job final: nothing writes after completed or failed', async () => {
    const id = await newJob();
    const job = (await claim(id, 'w1'))!;
    const w1 = recorder(job, 'w1');
    expect(await w1.fail({ type: 'not_a_type', detail: '  ' })).toBe(true);
    expect(await row(id)).toMatchObject({
      status: 'failed',
      error: { type: 'internal_error', detail: 'The job failed.' },
      lease_owner: null,
    });
    // Even with its lease given back by hand, the finished job takes no write and no new claim.
    await pool.query("UPDATE jobs SET lease_owner = 'w1' WHERE id = $1", [id]);
    expect(await w1.progress(50, 'After the end')).toMatchObject({ written: false });
    expect(await w1.complete({ result: { news: [] }, customerToolSet: null })).toBe(false);
    expect(await claim(id, 'w3')).toBeUndefined();
    expect(await row(id)).toMatchObject({ status: 'failed', result: null });
  });

  it('never numbers a step as the next attempt: past its range, steps are not written and the terminal takes the last number', async () => {
    const id = await newJob();
    const job = (await claim(id, 'w1'))!;
    const w1 = recorder(job, 'w1');
    for (let n = 0; n < 998; n++) await w1.progress(1, 'step');
    expect(await w1.progress(2, 'one too many')).toEqual({ written: false, numbersLeft: false });
    expect(await w1.complete({ result: { news: [] }, customerToolSet: null })).toBe(true);
    expect(await row(id)).toMatchObject({ status: 'completed', event_seq: 1999 });
    expect((await events(id)).at(-2)?.seq).toBe(1998);
  });

  it('counts a finished job once, after its commit', async () => {
    const before = (await jobsFinished.get()).values.find((v) => v.labels.type === 'news' && v.labels.outcome === 'completed')?.value ?? 0;
    const id = await newJob();
    const w1 = recorder((await claim(id, 'w1'))!, 'w1');
    await w1.complete({ result: { news: [] }, customerToolSet: null });
    await w1.complete({ result: { news: [] }, customerToolSet: null });
    const after = (await jobsFinished.get()).values.find((v) => v.labels.type === 'news' && v.labels.outcome === 'completed')?.value ?? 0;
    expect(after - before).toBe(1);
  });

  describe('the result cache', () => {
    const keys = cacheKeysFor({ jobType: 'news', parameters: { case: randomUUID() }, tenantId: 'unused' });

    it('fills a shared key when the run offered no customer tools, in the completion transaction', async () => {
      const id = await newJob(keys.shared);
      const job = (await claim(id, 'w1'))!;
      expect(job.cacheKey).toBe(keys.shared);
      await recorder(job, 'w1').complete({
        result: { news: ['shared'] },
        customerToolSet: null,
        usage: { ...NO_USAGE, modelCalls: 1, inputTokens: 10, outputTokens: 5 },
      });
      expect(await cacheEntry(keys.shared!)).toEqual({ job_id: id, tenant_id: null, result: { news: ['shared'] } });
      const { rows } = await pool.query('SELECT input_tokens, output_tokens FROM jobs WHERE id = $1', [id]);
      expect(rows[0]).toEqual({ input_tokens: 10, output_tokens: 5 });
    });

    it('files a tenant-scoped key under the tenant', async () => {
      const id = await newJob(keys.own);
      await recorder((await claim(id, 'w1'))!, 'w1').complete({ result: { news: ['own'] }, customerToolSet: null });
      expect(await cacheEntry(keys.own)).toEqual({ job_id: id, tenant_id: tenantId, result: { news: ['own'] } });
    });

    it('caches nothing when the run offered another tool set than the key was made for, or did not say', async () => {
      const toolKey = withToolSet(keys.own, 'digest-a');
      const changed = await newJob(toolKey);
      await recorder((await claim(changed, 'w1'))!, 'w1').complete({ result: { news: ['b'] }, customerToolSet: 'digest-b' });
      expect(await cacheEntry(toolKey)).toBeUndefined();
      const sharedKey = cacheKeysFor({ jobType: 'news', parameters: { case: randomUUID() }, tenantId: 'unused' }).shared!;
      const withTools = await newJob(sharedKey);
      await recorder((await claim(withTools, 'w1'))!, 'w1').complete({ result: { news: ['tools'] }, customerToolSet: 'digest-a' });
      const silent = await newJob(sharedKey);
      await recorder((await claim(silent, 'w1'))!, 'w1').complete({ result: { news: ['silent'] } });
      expect(await cacheEntry(sharedKey)).toBeUndefined();
      // The jobs themselves completed with their results.
      expect(await row(withTools)).toMatchObject({ status: 'completed', result: { news: ['tools'] } });
      // The matching set is cached.
      const matching = await newJob(toolKey);
      await recorder((await claim(matching, 'w1'))!, 'w1').complete({ result: { news: ['a'] }, customerToolSet: 'digest-a' });
      expect(await cacheEntry(toolKey)).toMatchObject({ job_id: matching, tenant_id: tenantId });
    });
  });

  it("adds each attempt's usage to the job's, names the failed attempts' share, and counts both in the account's day", async () => {
    await pool.query('DELETE FROM usage_daily WHERE tenant_id = $1', [tenantId]);
    const id = await newJob(null, 3);
    const spend = (calls: number, input: number, output: number) => ({
      ...NO_USAGE,
      modelCalls: calls,
      inputTokens: input,
      outputTokens: output,
    });
    // Attempt 1 fails after two calls and is retried; attempt 2 completes.
    expect(await recorder((await claim(id, 'w1'))!, 'w1').retryLater('Retrying shortly', spend(2, 100, 10))).toBe(true);
    await pool.query('UPDATE jobs SET lease_expires_at = now() WHERE id = $1', [id]);
    const second = (await claim(id, 'w2'))!;
    expect(second.usage).toMatchObject({ model_calls: 2, failed_attempts: { attempts: 1, model_calls: 2 } });
    const completion = {
      result: { news: [], meta: { model: 'm' } },
      usage: { ...spend(3, 50, 20), cacheReadInputTokens: 900, webSearches: 1 },
    };
    expect(await recorder(second, 'w2').complete(completion)).toBe(true);

    const usage = {
      model_calls: 5,
      input_tokens: 150,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 900,
      output_tokens: 30,
      web_searches: 1,
      failed_attempts: {
        attempts: 1,
        model_calls: 2,
        input_tokens: 100,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: 10,
        web_searches: 0,
      },
    };
    // The stored result, the completed event and the job's own columns say the same.
    expect((await row(id)).result).toEqual({ news: [], meta: { model: 'm', usage } });
    expect((await events(id)).at(-1)).toMatchObject({ status: 'completed', usage, result: { meta: { usage } } });
    const { rows } = await pool.query('SELECT usage, input_tokens, output_tokens FROM jobs WHERE id = $1', [id]);
    expect(rows[0]).toEqual({ usage, input_tokens: 150, output_tokens: 30 });
    const daily = await pool.query(
      `SELECT runs, failed_runs, model_calls::int, input_tokens::int, cache_read_input_tokens::int, output_tokens::int, web_searches::int,
              day = (now() AT TIME ZONE 'UTC')::date AS today
         FROM usage_daily WHERE tenant_id = $1 AND product = 'news'`,
      [tenantId],
    );
    expect(daily.rows).toEqual([
      {
        runs: 2,
        failed_runs: 1,
        model_calls: 5,
        input_tokens: 150,
        cache_read_input_tokens: 900,
        output_tokens: 30,
        web_searches: 1,
        today: true,
      },
    ]);

    // A job that fails for good reports its usage with the failure, all of it the failed attempts'.
    const failed = await newJob(null, 1);
    expect(await recorder((await claim(failed, 'w1'))!, 'w1').fail({ type: 'internal_error', detail: 'no' }, spend(1, 7, 0))).toBe(true);
    expect((await events(failed)).at(-1)).toMatchObject({
      status: 'failed',
      usage: { model_calls: 1, input_tokens: 7, failed_attempts: { attempts: 1, model_calls: 1, input_tokens: 7 } },
    });
  });

  it("settles the job's daily-budget reservation when it ends, not when an attempt is retried or a stale one writes", async () => {
    const id = await newJob(null, 3);
    await pool.query(
      `INSERT INTO token_reservations (id, tenant_id, product, tokens, job_id, expires_at)
       VALUES (gen_random_uuid(), $1, 'news', 12000, $2, now() + interval '1 hour')`,
      [tenantId, id],
    );
    const held = async () => (await pool.query('SELECT 1 FROM token_reservations WHERE job_id = $1', [id])).rowCount;
    expect(await recorder((await claim(id, 'w1'))!, 'w1').retryLater('Retrying shortly', { ...NO_USAGE, modelCalls: 1 })).toBe(true);
    expect(await held()).toBe(1);
    await pool.query('UPDATE jobs SET lease_expires_at = now() WHERE id = $1', [id]);
    const second = (await claim(id, 'w2'))!;
    // The first attempt's runner, long gone, cannot settle it either.
    expect(await recorder({ ...second, attempt: 1 }, 'w1').complete({ result: {} })).toBe(false);
    expect(await held()).toBe(1);
    expect(await recorder(second, 'w2').complete({ result: { news: [] }, usage: { ...NO_USAGE, modelCalls: 1, inputTokens: 5 } })).toBe(
      true,
    );
    expect(await held()).toBe(0);
  });

  it('hands a job back at once, and a retryable failure keeps it for the retry delay, both with the lease released', async () => {
    const back = await newJob();
    const w1 = recorder((await claim(back, 'w1'))!, 'w1');
    expect(await w1.handBack()).toBe(true);
    expect(await row(back)).toMatchObject({ status: 'pending', lease_owner: null });
    const retried = await newJob();
    const job = (await claim(retried, 'w1'))!;
    const r1 = recorder(job, 'w1');
    await r1.progress(5, 'Starting');
    expect(await r1.retryLater('Retrying shortly')).toBe(true);
    expect(await row(retried)).toMatchObject({
      status: 'running',
      currently_working_on: 'Retrying shortly',
      lease_owner: null,
      event_seq: 1002,
    });
    // Not claimable until the reaper requests it (the lease runs for the retry delay).
    expect(await claim(retried, 'w2')).toBeUndefined();
  });
});
