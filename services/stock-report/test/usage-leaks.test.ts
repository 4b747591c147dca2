// What an attempt spent is recorded however it ends: failed at its time limit, handed back by a worker that stops,
// or cut off by a lost lease. Each test runs a stock report on the real AI engine against the fake Messages API
// (a first round that is answered, then a call that never is), on a worker of the job runtime, over Postgres.
import { createAiEngine, offlineAnalyst, SampleMarketDataProvider, aiConfigShape, type AiEngine } from '@fin/ai';
import { parseConfig } from '@fin/config';
import { StockReportRequest, StockReportResult, type JobUsage } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { createMemoryBus, createPublisher, jobRequestTopics, type MemoryEventBus } from '@fin/events';
import { hangingReply, startFakeAnthropic, toolUseReply, type FakeAnthropic, type ReplyHandler } from '@fin/fakes';
import { classifyFailure, createJobWorker, submitJob, type JobWorker, type JobWorkerOptions } from '@fin/job-kit';
import { createLogger } from '@fin/log';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';

const logger = createLogger({ service: 'usage-leaks-test', level: 'silent' });

/** The first round: market data asked for, billed exactly this (no prompt cache). */
const FIRST_ROUND = { inputTokens: 1_000, outputTokens: 50, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 };
/** What the interrupted attempt spent: the answered round, and the call it was waiting for (sent, so counted). */
const INTERRUPTED: Omit<JobUsage, 'failed_attempts'> = {
  model_calls: 2,
  input_tokens: 1_000,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  output_tokens: 50,
  web_searches: 0,
};

describe('usage of attempts that end without finishing their run', () => {
  let db: TestDatabase;
  let pool: Pool;
  let claude: FakeAnthropic;
  let engine: AiEngine;
  let tenantId: string;
  const buses: MemoryEventBus[] = [];
  const workers: JobWorker[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'usage-leaks-test', max: 6 });
    tenantId = (await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('u') RETURNING id")).rows[0]!.id;
    claude = await startFakeAnthropic();
    const config = parseConfig(aiConfigShape, {
      ANTHROPIC_API_KEY: 'sk-ant-test-key-0000',
      ANTHROPIC_BASE_URL: claude.url,
      AI_MAX_RETRIES: '0',
      AI_WEB_SEARCH: 'false',
      AI_TIMEOUT_MS: '60000',
    });
    engine = await createAiEngine({ config, logger, marketData: new SampleMarketDataProvider() });
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop()));
    await Promise.all(buses.splice(0).map((bus) => bus.close()));
    claude.reset();
    // A worker takes any claimable job of its type (a job handed back included), not only those it is woken for.
    await pool.query(
      `UPDATE jobs SET status = 'failed', error = '{"type": "internal_error", "detail": "test over"}', result = NULL,
              lease_owner = NULL, lease_expires_at = NULL, finished_at = now() WHERE status IN ('pending', 'running')`,
    );
  });
  afterAll(async () => {
    await engine.close();
    await claude.close();
    await pool.end();
    await db.drop();
  });

  async function startWorker(options: Partial<JobWorkerOptions> = {}): Promise<{ worker: JobWorker; bus: MemoryEventBus }> {
    const bus = createMemoryBus({ logger });
    buses.push(bus);
    const worker = createJobWorker({
      pool,
      bus,
      logger,
      jobType: 'stock-report',
      timeLimitMs: 60_000,
      leaseMs: 10_000,
      classify: classifyFailure,
      run: (job, ctx) => engine.stockReport(StockReportRequest.parse(job.request), { signal: ctx.signal, onProgress: ctx.progress }),
      ...options,
    });
    await worker.start();
    workers.push(worker);
    return { worker, bus };
  }

  async function newJob(symbol: string): Promise<string> {
    const { jobId } = await submitJob(pool, { tenantId, jobType: 'stock-report', request: { symbols: [symbol], language: 'en' } });
    return jobId;
  }

  const request = (bus: MemoryEventBus, jobId: string) =>
    createPublisher(bus).publish(jobRequestTopics['stock-report'], jobId, {
      job_id: jobId,
      job_type: 'stock-report',
      tenant_id: tenantId,
      attempt: 1,
    });

  /** A first round that is answered, then a call the model never answers (the run waits in it). */
  function interruptedRun(): void {
    claude.reply(toolUseReply('market_data', { symbol: 'AAPL', kind: 'quote' }, { usage: FIRST_ROUND }), hangingReply());
  }

  const jobRow = async (jobId: string) =>
    (
      await pool.query<{
        status: string;
        usage: JobUsage | null;
        error: { type: string } | null;
        lease_owner: string | null;
        result: unknown;
      }>('SELECT status, usage, error, lease_owner, result FROM jobs WHERE id = $1', [jobId])
    ).rows[0]!;

  const today = async () =>
    (
      await pool.query<{ runs: number; failed_runs: number; model_calls: string; input_tokens: string; output_tokens: string }>(
        `SELECT runs, failed_runs, model_calls::text, input_tokens::text, output_tokens::text FROM usage_daily
          WHERE tenant_id = $1 AND product = 'stock-report' AND day = (now() AT TIME ZONE 'UTC')::date`,
        [tenantId],
      )
    ).rows[0];

  const resetDay = () => pool.query('DELETE FROM usage_daily WHERE tenant_id = $1', [tenantId]);

  it('records what a job spent before its time limit: the failed job says it, and so does the account', async () => {
    await resetDay();
    interruptedRun();
    // The time limit counts running time only: it stands still while the run says it waits for the model budget
    // (RunContext.waitingForModel). Held so until the run waits in the call never answered, it runs out there,
    // however long a loaded machine takes over the first round.
    const { bus } = await startWorker({
      timeLimitMs: 1_500,
      run: (job, ctx) => {
        ctx.waitingForModel(true);
        waitFor(() => claude.requests.length === 2, { what: 'the call the run waits in', timeoutMs: 60_000 }).then(
          () => ctx.waitingForModel(false),
          () => undefined,
        );
        return engine.stockReport(StockReportRequest.parse(job.request), { signal: ctx.signal, onProgress: ctx.progress });
      },
    });
    const jobId = await newJob('AAPL');
    await request(bus, jobId);
    const failed = await waitFor(async () => {
      const row = await jobRow(jobId);
      return row.status === 'failed' && row;
    });
    expect(failed.error).toMatchObject({ type: 'gateway_timeout' });
    // Before: usage null, and nothing in the account's day (the time limit's abort dropped the error's usage).
    expect(failed.usage).toEqual({ ...INTERRUPTED, failed_attempts: { attempts: 1, ...INTERRUPTED } });
    expect(await today()).toEqual({ runs: 1, failed_runs: 1, model_calls: '2', input_tokens: '1000', output_tokens: '50' });
  });

  it('records what an attempt spent when its worker stops and hands the job back', async () => {
    await resetDay();
    interruptedRun();
    const { worker, bus } = await startWorker();
    const jobId = await newJob('MSFT');
    await request(bus, jobId);
    await waitFor(() => claude.requests.length === 2, { what: 'the call the run waits in' });
    await worker.stop();
    const row = await jobRow(jobId);
    expect(row).toMatchObject({ status: 'running', lease_owner: null });
    // Before: usage null (handBack recorded nothing).
    expect(row.usage).toEqual({ ...INTERRUPTED, failed_attempts: { attempts: 1, ...INTERRUPTED } });
    expect(await today()).toEqual({ runs: 1, failed_runs: 1, model_calls: '2', input_tokens: '1000', output_tokens: '50' });
  });

  it('records what an attempt spent after it lost its lease, in the job the next attempt completes', async () => {
    await resetDay();
    interruptedRun();
    // Renewed only every second against a 300 ms lease: the lease runs out while the run waits for the model. One
    // slot, so that this worker cannot claim the job again while its first attempt runs (the job is claimable
    // whenever the lease has run out, and its poll would find it before the second worker on a slow machine); the
    // attempt ends only once the second worker holds the job.
    const first = await startWorker({ leaseMs: 300, heartbeatMs: 1_000, concurrency: 1 });
    const jobId = await newJob('NVDA');
    await request(first.bus, jobId);
    await waitFor(() => claude.requests.length === 2, { what: 'the call the first attempt waits in' });
    // The second attempt's model answers like the analyst, its first call slower than the first attempt takes to
    // notice that its lease is gone: a renewal that comes after the lease ran out but before the second claim still
    // succeeds, so the loss is seen at most two renewals (2 s) after the claim, more on a loaded machine.
    const analyst = offlineAnalyst();
    let calls = 0;
    const slowFirst: ReplyHandler = async (sent, context) => {
      calls += 1;
      if (calls === 1) await new Promise((resolve) => setTimeout(resolve, 4_000));
      return analyst(sent, context);
    };
    claude.setHandler(slowFirst);
    await waitFor(
      async () =>
        (await pool.query('SELECT 1 FROM jobs WHERE id = $1 AND lease_expires_at < now()', [jobId])).rowCount === 1 &&
        (await startWorker({ leaseMs: 10_000 })),
      { what: 'the first lease to run out' },
    ).then((second) => request(second.bus, jobId));
    const done = await waitFor(async () => {
      const row = await jobRow(jobId);
      return row.status === 'completed' && row;
    });
    expect(done.usage?.failed_attempts).toEqual({ attempts: 1, ...INTERRUPTED });
    // The result's meta.usage is the job's: the second attempt's added to the first's, which that attempt never read.
    const report = StockReportResult.parse(done.result);
    expect(report.meta?.usage).toEqual(done.usage);
    expect(done.usage!.model_calls).toBeGreaterThan(INTERRUPTED.model_calls);
    // So are the job.completed event's usage and result (what webhooks deliver).
    const { rows: events } = await pool.query<{ payload: { usage?: unknown; result?: { meta?: { usage?: unknown } } } }>(
      "SELECT envelope -> 'payload' AS payload FROM outbox WHERE message_key = $1 AND topic = 'jobs.events' AND envelope #>> '{payload,status}' = 'completed'",
      [jobId],
    );
    expect(events[0]?.payload.usage).toEqual(done.usage);
    expect(events[0]?.payload.result?.meta?.usage).toEqual(done.usage);
    const day = await today();
    expect(day).toMatchObject({ runs: 2, failed_runs: 1 });
    expect(Number(day!.input_tokens)).toBe(done.usage!.input_tokens);
  });
});
