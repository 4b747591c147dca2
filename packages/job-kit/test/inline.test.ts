import { randomUUID } from 'node:crypto';
import { NO_USAGE } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { AppError } from '@fin/http';
import { createLogger } from '@fin/log';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { createInlineRunner, type InlineRunnerOptions } from '../src';
import { outboxOf } from './helpers';

const logger = createLogger({ service: 'inline-test', level: 'silent' });

class ClientLeft extends Error {}

describe('inline job runner', () => {
  let db: TestDatabase;
  let pool: Pool;
  let tenantId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'inline-test', max: 10 });
    const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('i') RETURNING id");
    tenantId = rows[0]!.id;
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  function runner(overrides: Partial<InlineRunnerOptions> = {}) {
    return createInlineRunner({
      pool,
      logger,
      jobType: 'analysis',
      timeLimitMs: 5_000,
      leaseMs: 1_000,
      heartbeatMs: 100,
      progressIntervalMs: 0,
      classify: (error) =>
        error instanceof ClientLeft
          ? { retry: false, type: 'service_unavailable', detail: 'The client left.' }
          : { retry: true, type: 'service_unavailable', detail: 'Temporarily unavailable.' },
      ...overrides,
    });
  }

  const outbox = (jobId: string) => outboxOf(pool, jobId);

  async function jobRow(jobId: string) {
    const { rows } = await pool.query<{
      status: string;
      attempts: number;
      max_attempts: number;
      lease_owner: string | null;
      released: boolean;
      request: unknown;
      result: unknown;
    }>(
      'SELECT status, attempts, max_attempts, lease_owner, lease_expires_at IS NULL AS released, request, result FROM jobs WHERE id = $1',
      [jobId],
    );
    return rows[0]!;
  }

  it('creates the job already claimed, runs it here and reports it exactly as a worker does — and never asks a worker for it', async () => {
    const inline = runner();
    let startedWith: string | undefined;
    let rowWhileRunning: Awaited<ReturnType<typeof jobRow>> | undefined;
    const outcome = await inline.run(
      { tenantId, request: { prompt: 'p' }, onStart: (jobId) => void (startedWith = jobId) },
      async (job, ctx) => {
        rowWhileRunning = await jobRow(job.id);
        ctx.progress(40, 'Writing');
        return {
          result: { format: 'markdown', content: 'done', meta: { model: 'm' } },
          usage: { ...NO_USAGE, modelCalls: 1, inputTokens: 3, outputTokens: 4 },
        };
      },
    );
    // The caller gets the result as it was stored: its meta says what the job cost.
    const usage = {
      model_calls: 1,
      input_tokens: 3,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: 4,
      web_searches: 0,
    };
    const result = { format: 'markdown', content: 'done', meta: { model: 'm', usage } };
    expect(outcome).toEqual({ kind: 'completed', jobId: startedWith, result });
    // `running` is written by the runner before the work starts, under its lease.
    expect(rowWhileRunning).toMatchObject({
      status: 'running',
      attempts: 1,
      max_attempts: 1,
      lease_owner: inline.workerId,
      request: { prompt: 'p' },
    });

    const events = await outbox(outcome.jobId);
    // Only job.state events: no job.requested, so no worker ever runs this job.
    expect(events.map((event) => event.topic)).toEqual(['jobs.events', 'jobs.events', 'jobs.events']);
    expect(events.map(({ payload }) => [payload.seq, payload.status, payload.progress, payload.currently_working_on])).toEqual([
      [1001, 'running', 5, 'Starting'],
      [1002, 'running', 40, 'Writing'],
      [1003, 'completed', 100, 'Completed'],
    ]);
    expect(events[2]!.payload).toMatchObject({
      result,
      usage,
    });
    // The result is in the job too, committed with the completion and its event.
    expect(await jobRow(outcome.jobId)).toMatchObject({
      status: 'completed',
      result,
      lease_owner: null,
      released: true,
    });
  });

  it('aborts the work when the caller stops it, and fails the job with the reason the caller gave', async () => {
    const stop = new AbortController();
    let workAborted = false;
    const outcome = await runner().run({ tenantId, request: { prompt: 'stopped' }, signal: stop.signal }, (_job, ctx) => {
      const work = new Promise<never>((_resolve, reject) =>
        ctx.signal.addEventListener('abort', () => {
          workAborted = true;
          reject(new Error('aborted'));
        }),
      );
      stop.abort(new ClientLeft());
      return work;
    });
    expect(workAborted).toBe(true);
    expect(outcome).toMatchObject({ kind: 'failed', error: { type: 'service_unavailable', detail: 'The client left.' } });
    const events = await outbox(outcome.jobId);
    expect(events.at(-1)!.payload).toMatchObject({
      status: 'failed',
      seq: 1002,
      error: { type: 'service_unavailable', detail: 'The client left.' },
    });
    // The job is finished for good: not handed back for a retry.
    expect(await jobRow(outcome.jobId)).toMatchObject({ status: 'failed', lease_owner: null, released: true });
  });

  it('fails at once on an error that a worker would retry: the job has one attempt', async () => {
    const outcome = await runner().run({ tenantId, request: { prompt: 'flaky' } }, async () => {
      throw new Error('model overloaded');
    });
    expect(outcome).toMatchObject({ kind: 'failed', error: { type: 'service_unavailable', detail: 'Temporarily unavailable.' } });
    expect((await outbox(outcome.jobId)).map(({ payload }) => payload.status)).toEqual(['running', 'failed']);
  });

  it('fails a run that exceeds its time limit', async () => {
    const outcome = await runner({ timeLimitMs: 150 }).run(
      { tenantId, request: { prompt: 'slow' } },
      (_job, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('x')))),
    );
    expect(outcome).toMatchObject({
      kind: 'failed',
      error: { type: 'gateway_timeout', detail: 'The job took longer than its 0.15 s time limit.' },
    });
  });

  it('stops the time limit while the run waits for the model budget, and counts only the time it runs', async () => {
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    // 400 ms of waiting for the model and 100 ms of work fit a 300 ms limit; 100 ms waited and 400 ms worked do not.
    const completes = await runner({ timeLimitMs: 300 }).run(
      { tenantId, request: { prompt: 'queued for the model' } },
      async (_job, ctx) => {
        ctx.waitingForModel(true);
        await sleep(400);
        ctx.waitingForModel(false);
        await sleep(100);
        return { result: { ok: true } };
      },
    );
    expect(completes).toMatchObject({ kind: 'completed' });
    const overruns = await runner({ timeLimitMs: 300 }).run({ tenantId, request: { prompt: 'slow after waiting' } }, async (_job, ctx) => {
      ctx.waitingForModel(true);
      await sleep(100);
      ctx.waitingForModel(false);
      await new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('x'))));
      return { result: { ok: true } };
    });
    expect(overruns).toMatchObject({ kind: 'failed', error: { type: 'gateway_timeout' } });
  });

  it('keeps the lease alive while the work runs', async () => {
    let jobId: string | undefined;
    let release: (() => void) | undefined;
    const running = runner({ leaseMs: 300, heartbeatMs: 50 }).run({ tenantId, request: { prompt: 'long' } }, (job) => {
      jobId = job.id;
      return new Promise((resolve) => (release = () => resolve({ result: { ok: true } })));
    });
    await waitFor(() => release !== undefined, { what: 'the work to start' });
    const { rows } = await pool.query<{ expires: Date }>('SELECT lease_expires_at AS expires FROM jobs WHERE id = $1', [jobId]);
    // Renewed past the lease it was created with.
    await waitFor(async () => {
      const now = await pool.query<{ expires: Date }>('SELECT lease_expires_at AS expires FROM jobs WHERE id = $1', [jobId]);
      return now.rows[0]!.expires.getTime() > rows[0]!.expires.getTime();
    });
    release!();
    expect((await running).kind).toBe('completed');
  });

  it('replays an Idempotency-Key without running anything, and refuses the key for another request', async () => {
    const key = `key-${randomUUID()}`;
    const first = await runner().run({ tenantId, request: { prompt: 'once' }, idempotencyKey: key }, async () => ({ result: { n: 1 } }));
    let ranAgain = false;
    const again = await runner().run({ tenantId, request: { prompt: 'once' }, idempotencyKey: key }, async () => {
      ranAgain = true;
      return { result: { n: 2 } };
    });
    expect(ranAgain).toBe(false);
    expect(again).toMatchObject({ kind: 'replayed', jobId: first.jobId });
    await expect(
      runner().run({ tenantId, request: { prompt: 'other' }, idempotencyKey: key }, async () => ({ result: {} })),
    ).rejects.toMatchObject({
      constructor: AppError,
      type: 'unprocessable_entity',
    });
  });
});
