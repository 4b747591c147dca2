import { randomUUID } from 'node:crypto';
import { type Pool, createPool } from '@fin/db';
import { cacheKeysFor, withToolSet } from '@fin/job-kit';
import { jobsFinished } from '@fin/metrics';
import { type TestDatabase, createTestDatabase } from '@fin/testing';
import { JOBS_CONSUMER, applyJobEvent } from '../src/apply';
import { NEWS_RESULT, createTenant, insertJob, jobEvent, jobRow, testLogger } from './support';

describe('applyJobEvent', () => {
  let db: TestDatabase;
  let pool: Pool;
  let tenantId: string;
  const logger = testLogger();
  const apply = (envelope: ReturnType<typeof jobEvent>) => applyJobEvent(pool, envelope, { logger });

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'jobs-apply-test' });
    tenantId = await createTenant(pool);
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('walks a job through running and progress to completed, in order', async () => {
    const id = await insertJob(pool, { tenantId, attempts: 1 });
    expect(await apply(jobEvent(id, { seq: 1001, progress: 10, currently_working_on: 'Fetching news for AAPL' }))).toBe('applied');
    let row = await jobRow(pool, id);
    expect(row).toMatchObject({ status: 'running', progress: 10, currently_working_on: 'Fetching news for AAPL', event_seq: 1001 });
    expect(row.started_at).toBeInstanceOf(Date);
    expect(row.finished_at).toBeNull();
    const startedAt = row.started_at;

    expect(await apply(jobEvent(id, { seq: 1002, progress: 60, currently_working_on: 'Ranking news by relevance' }))).toBe('applied');
    row = await jobRow(pool, id);
    expect(row).toMatchObject({ status: 'running', progress: 60, currently_working_on: 'Ranking news by relevance', event_seq: 1002 });
    expect(row.started_at).toEqual(startedAt);

    expect(await apply(jobEvent(id, { seq: 1003, status: 'completed', progress: 95, result: NEWS_RESULT }))).toBe('applied');
    row = await jobRow(pool, id);
    // Completed is 100% whatever the worker last said; its step falls back to the status's default.
    expect(row).toMatchObject({ status: 'completed', progress: 100, result: NEWS_RESULT, error: null, event_seq: 1003, currently_working_on: null });
    expect(row.finished_at).toBeInstanceOf(Date);
    expect(row.started_at).toEqual(startedAt);
  });

  it('applies a redelivered envelope once', async () => {
    const id = await insertJob(pool, { tenantId, attempts: 1 });
    const completed = jobEvent(id, { seq: 1001, status: 'completed', progress: 100, result: NEWS_RESULT, usage: { input_tokens: 120, output_tokens: 30 } });
    expect(await apply(completed)).toBe('applied');
    expect(await apply(completed)).toBe('duplicate');
    // Concurrent redeliveries: the second waits on the first's processed mark, then skips.
    const again = jobEvent(id, { seq: 1002, status: 'running', progress: 5 });
    expect((await Promise.all([apply(again), apply(again)])).sort()).toEqual(['duplicate', 'job_finished']);

    const row = await jobRow(pool, id);
    expect(row).toMatchObject({ status: 'completed', input_tokens: 120, output_tokens: 30 });
    const { rows } = await pool.query<{ count: string }>('SELECT count(*) FROM processed_events WHERE consumer = $1 AND event_id = $2', [JOBS_CONSUMER, completed.id]);
    expect(rows[0]?.count).toBe('1');
  });

  it('counts each job that reaches a final state once, by type and outcome, for the metrics', async () => {
    const finished = async (outcome: string) => (await jobsFinished.get()).values.find((value) => value.labels.type === 'news' && value.labels.outcome === outcome)?.value ?? 0;
    const [completedBefore, failedBefore] = [await finished('completed'), await finished('failed')];
    const done = await insertJob(pool, { tenantId, attempts: 1 });
    const completion = jobEvent(done, { seq: 1001, status: 'completed', progress: 100, result: NEWS_RESULT });
    await apply(completion);
    await apply(completion);
    await apply(jobEvent(done, { seq: 1002, status: 'failed', progress: 100, error: { type: 'internal_error', detail: 'late' } }));
    const broken = await insertJob(pool, { tenantId, attempts: 1 });
    await apply(jobEvent(broken, { seq: 1001, status: 'failed', progress: 0, error: { type: 'internal_error', detail: 'x' } }));
    expect(await finished('completed')).toBe(completedBefore + 1);
    expect(await finished('failed')).toBe(failedBefore + 1);
  });

  it('ignores a late event whose seq is not above the last applied one', async () => {
    const id = await insertJob(pool, { tenantId, attempts: 1 });
    await apply(jobEvent(id, { seq: 1003, progress: 60, currently_working_on: 'Ranking news by relevance' }));
    expect(await apply(jobEvent(id, { seq: 1002, progress: 40, currently_working_on: 'Fetching news for AAPL' }))).toBe('superseded');
    expect(await apply(jobEvent(id, { seq: 1003, progress: 70, currently_working_on: 'Same seq, other envelope' }))).toBe('superseded');
    expect(await jobRow(pool, id)).toMatchObject({ progress: 60, currently_working_on: 'Ranking news by relevance', event_seq: 1003 });
  });

  it('never lowers progress, but still takes the newer step text', async () => {
    const id = await insertJob(pool, { tenantId, attempts: 1 });
    await apply(jobEvent(id, { seq: 1001, progress: 50, currently_working_on: 'Looking up market data' }));
    expect(await apply(jobEvent(id, { seq: 1002, progress: 30, currently_working_on: 'Writing the summary' }))).toBe('applied');
    expect(await jobRow(pool, id)).toMatchObject({ progress: 50, currently_working_on: 'Writing the summary', event_seq: 1002 });
    // A newer event without a step keeps the last one.
    await apply(jobEvent(id, { seq: 1003, progress: 55 }));
    expect(await jobRow(pool, id)).toMatchObject({ progress: 55, currently_working_on: 'Writing the summary' });
  });

  it('keeps status from going backwards: pending after running is ignored', async () => {
    const id = await insertJob(pool, { tenantId, attempts: 1 });
    await apply(jobEvent(id, { seq: 1002, progress: 20 }));
    expect(await apply(jobEvent(id, { seq: 1003, status: 'pending', progress: 0, currently_working_on: 'Queued' }))).toBe('status_regression');
    expect(await jobRow(pool, id)).toMatchObject({ status: 'running', progress: 20, event_seq: 1002 });
  });

  it('treats completed and failed as final', async () => {
    const done = await insertJob(pool, { tenantId, attempts: 1 });
    await apply(jobEvent(done, { seq: 1001, status: 'completed', progress: 100, result: NEWS_RESULT }));
    expect(await apply(jobEvent(done, { seq: 1002, status: 'failed', progress: 100, error: { type: 'internal_error', detail: 'late failure' } }))).toBe('job_finished');
    expect(await apply(jobEvent(done, { seq: 2001, status: 'running', progress: 10 }))).toBe('job_finished');
    expect(await jobRow(pool, done)).toMatchObject({ status: 'completed', result: NEWS_RESULT, error: null, event_seq: 1001 });

    const failed = await insertJob(pool, { tenantId, attempts: 1 });
    await apply(jobEvent(failed, { seq: 1002, status: 'failed', progress: 40, error: { type: 'gateway_timeout', detail: 'The news model did not answer within 30 s.' } }));
    expect(await apply(jobEvent(failed, { seq: 1003, status: 'completed', progress: 100, result: NEWS_RESULT }))).toBe('job_finished');
    const row = await jobRow(pool, failed);
    expect(row).toMatchObject({ status: 'failed', progress: 40, result: null, error: { type: 'gateway_timeout', detail: 'The news model did not answer within 30 s.' } });
    expect(row.finished_at).toBeInstanceOf(Date);
  });

  it('rejects events, above all a completion, from an attempt older than the current one', async () => {
    // Attempt 1's worker reported, lost its lease, and attempt 2's worker has claimed the job.
    const id = await insertJob(pool, { tenantId, status: 'running', progress: 30, attempts: 2, eventSeq: 1004, leaseOwner: 'worker-2', leaseSeconds: 30 });
    expect(await apply(jobEvent(id, { seq: 1005, status: 'completed', progress: 100, result: { news: [] }, worker_id: 'worker-1' }))).toBe('stale_attempt');
    expect(await apply(jobEvent(id, { seq: 1006, progress: 90, currently_working_on: 'Zombie step', worker_id: 'worker-1' }))).toBe('stale_attempt');
    expect(await jobRow(pool, id)).toMatchObject({ status: 'running', progress: 30, result: null, event_seq: 1004 });

    expect(await apply(jobEvent(id, { seq: 2001, progress: 10, currently_working_on: 'Fetching news for AAPL', worker_id: 'worker-2' }))).toBe('applied');
    expect(await apply(jobEvent(id, { seq: 2002, status: 'completed', progress: 100, result: NEWS_RESULT, worker_id: 'worker-2' }))).toBe('applied');
    expect(await jobRow(pool, id)).toMatchObject({ status: 'completed', progress: 100, result: NEWS_RESULT, event_seq: 2002 });
  });

  it('writes the result cache for 7 days, scoped to the tenant when its key is the tenant\'s', async () => {
    const keys = cacheKeysFor({ jobType: 'news', parameters: { symbols: ['AAPL'], n: randomUUID() }, tenantId });
    const sharedKey = keys.shared!;
    const shared = await insertJob(pool, { tenantId, attempts: 1, cacheKey: sharedKey, request: { symbols: ['AAPL'], n: 5 } });
    const privateKey = cacheKeysFor({ jobType: 'news', parameters: { symbols: ['AAPL'], n: 5 }, tenantId, data: { eps: randomUUID() } }).own;
    const custom = await insertJob(pool, { tenantId, attempts: 1, cacheKey: privateKey, request: { symbols: ['AAPL'], n: 5, data: { eps: 1.64 } } });
    const uncached = await insertJob(pool, { tenantId, attempts: 1, type: 'analysis', request: { prompt: 'Compare' } });

    await apply(jobEvent(shared, { seq: 1001, status: 'completed', progress: 100, result: NEWS_RESULT, customer_tool_set: null }));
    await apply(jobEvent(custom, { seq: 1001, status: 'completed', progress: 100, result: { news: [] }, customer_tool_set: null }));
    await apply(jobEvent(uncached, { seq: 1001, job_type: 'analysis', status: 'completed', progress: 100, result: { content: 'x' }, customer_tool_set: null }));

    const { rows } = await pool.query<{ cache_key: string; job_type: string; tenant_id: string | null; job_id: string; result: unknown; ttl: string }>(
      `SELECT cache_key, job_type, tenant_id::text AS tenant_id, job_id::text AS job_id, result, (expires_at - created_at)::text AS ttl
       FROM result_cache WHERE job_id = ANY($1::uuid[]) ORDER BY cache_key = $2 DESC`,
      [[shared, custom, uncached], sharedKey],
    );
    expect(rows).toEqual([
      { cache_key: sharedKey, job_type: 'news', tenant_id: null, job_id: shared, result: NEWS_RESULT, ttl: '7 days' },
      { cache_key: privateKey, job_type: 'news', tenant_id: tenantId, job_id: custom, result: { news: [] }, ttl: '7 days' },
    ]);

    // A later run under the same key (the earlier entry expired) replaces the entry.
    await pool.query("UPDATE result_cache SET expires_at = now() - interval '1 minute' WHERE cache_key = $1", [sharedKey]);
    const rerun = await insertJob(pool, { tenantId, attempts: 1, cacheKey: sharedKey });
    await apply(jobEvent(rerun, { seq: 1001, status: 'completed', progress: 100, result: { news: [] }, customer_tool_set: null }));
    const { rows: replaced } = await pool.query<{ job_id: string; fresh: boolean }>(
      'SELECT job_id::text AS job_id, expires_at > now() AS fresh FROM result_cache WHERE cache_key = $1',
      [sharedKey],
    );
    expect(replaced).toEqual([{ job_id: rerun, fresh: true }]);
  });

  it('caches a result only under a key made for the customer tool set its run offered', async () => {
    const keys = cacheKeysFor({ jobType: 'news', parameters: { symbols: ['MSFT'], n: randomUUID() }, tenantId });
    const cached = async (key: string) => (await pool.query('SELECT tenant_id::text AS tenant_id FROM result_cache WHERE cache_key = $1', [key])).rows;
    const run = async (key: string, customerToolSet: string | null | undefined) => {
      const id = await insertJob(pool, { tenantId, attempts: 1, cacheKey: key });
      const reported = customerToolSet === undefined ? {} : { customer_tool_set: customerToolSet };
      expect(await apply(jobEvent(id, { seq: 1001, status: 'completed', progress: 100, result: NEWS_RESULT, ...reported }))).toBe('applied');
      expect(await jobRow(pool, id)).toMatchObject({ status: 'completed', result: NEWS_RESULT });
    };
    // Submitted as shared, but the run offered the tenant's tools (one was added in between): not cached at all.
    await run(keys.shared!, 'a1b2c3');
    expect(await cached(keys.shared!)).toEqual([]);
    // A runner that does not say which tools it offered: not cached.
    await run(keys.shared!, undefined);
    expect(await cached(keys.shared!)).toEqual([]);
    // Submitted for one tool set, run with another (a tool changed in between): not cached.
    await run(withToolSet(keys.own, 'a1b2c3'), 'd4e5f6');
    expect(await cached(withToolSet(keys.own, 'a1b2c3'))).toEqual([]);
    // Submitted for a tool set and run with it, or with one but run without (all removed): never cached shared.
    await run(withToolSet(keys.own, 'a1b2c3'), 'a1b2c3');
    expect(await cached(withToolSet(keys.own, 'a1b2c3'))).toEqual([{ tenant_id: tenantId }]);
    await run(withToolSet(keys.own, 'ffffff'), null);
    expect(await cached(withToolSet(keys.own, 'ffffff'))).toEqual([]);
    // A no-cache refresh without tools: the tenant's own entry.
    await run(keys.own, null);
    expect(await cached(keys.own)).toEqual([{ tenant_id: tenantId }]);
  });

  it('does not cache a failed job', async () => {
    const cacheKey = `news:${randomUUID()}`;
    const id = await insertJob(pool, { tenantId, attempts: 1, cacheKey });
    await apply(jobEvent(id, { seq: 1001, status: 'failed', progress: 10, error: { type: 'internal_error', detail: 'No news found.' } }));
    const { rowCount } = await pool.query('SELECT 1 FROM result_cache WHERE cache_key = $1', [cacheKey]);
    expect(rowCount).toBe(0);
  });

  it('adds the token usage of terminal events to the job', async () => {
    const id = await insertJob(pool, { tenantId, attempts: 1 });
    await pool.query('UPDATE jobs SET input_tokens = 1000, output_tokens = 200 WHERE id = $1', [id]);
    // Usage on a progress event is not counted: an attempt reports its total once, when it ends.
    await apply(jobEvent(id, { seq: 1001, progress: 50, usage: { input_tokens: 7, output_tokens: 7 } }));
    await apply(jobEvent(id, { seq: 1002, status: 'completed', progress: 100, result: NEWS_RESULT, usage: { input_tokens: 1500, output_tokens: 420 } }));
    expect(await jobRow(pool, id)).toMatchObject({ input_tokens: 2500, output_tokens: 620 });

    const failed = await insertJob(pool, { tenantId, attempts: 1 });
    await apply(jobEvent(failed, { seq: 1001, status: 'failed', progress: 10, error: { type: 'bad_gateway', detail: 'The model is overloaded.' }, usage: { input_tokens: 90, output_tokens: 0 } }));
    expect(await jobRow(pool, failed)).toMatchObject({ input_tokens: 90, output_tokens: 0 });
  });

  it('stores only failure reasons a client may read', async () => {
    const odd = await insertJob(pool, { tenantId, attempts: 1 });
    await apply(jobEvent(odd, { seq: 1001, status: 'failed', progress: 10, error: { type: 'AnthropicOverloaded', detail: '  The model was overloaded on every try.  ' } }));
    expect((await jobRow(pool, odd)).error).toEqual({ type: 'internal_error', detail: 'The model was overloaded on every try.' });

    // A completion without a result would leave the job running with no lease: it fails instead.
    const empty = await insertJob(pool, { tenantId, attempts: 1 });
    await apply(jobEvent(empty, { seq: 1001, status: 'completed', progress: 100 }));
    expect(await jobRow(pool, empty)).toMatchObject({ status: 'failed', result: null, error: { type: 'internal_error', detail: 'The job finished without producing a result.' } });
  });

  it('ignores events that match no job', async () => {
    expect(await apply(jobEvent(randomUUID(), { seq: 1001 }))).toBe('unknown_job');
    const id = await insertJob(pool, { tenantId, attempts: 1, type: 'stock-report' });
    expect(await apply(jobEvent(id, { seq: 1001, job_type: 'news' }))).toBe('wrong_job_type');
    expect(await jobRow(pool, id)).toMatchObject({ status: 'pending', event_seq: 0 });
  });
});
