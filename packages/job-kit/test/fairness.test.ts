// Workers take jobs fairly between tenants: one tenant's backlog delays another tenant's job by about one job's run,
// not by the backlog, and no tenant runs more than its cap at once across workers.
import { createPool, type Pool } from '@fin/db';
import { createMemoryBus, createPublisher, jobRequestTopics, type MemoryEventBus } from '@fin/events';
import { createLogger } from '@fin/log';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { createJobWorker, submitJob, type JobToRun, type JobWorker, type JobWorkerOptions } from '../src';

const logger = createLogger({ service: 'fairness-test', level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('fair job order between tenants', () => {
  let db: TestDatabase;
  let pool: Pool;
  let bus: MemoryEventBus;
  const tenants = { a: '', b: '' };
  const workers: JobWorker[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'fairness-test', max: 12 });
    for (const name of ['a', 'b'] as const)
      tenants[name] = (await pool.query<{ id: string }>('INSERT INTO tenants (name) VALUES ($1) RETURNING id', [name])).rows[0]!.id;
  });
  beforeEach(() => {
    bus = createMemoryBus({ logger });
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop()));
    await bus.close();
    await pool.query(
      `UPDATE jobs SET status = 'failed', error = '{"type": "internal_error", "detail": "test over"}', result = NULL,
              lease_owner = NULL, lease_expires_at = NULL, finished_at = now() WHERE status IN ('pending', 'running')`,
    );
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  async function startWorker(overrides: Partial<JobWorkerOptions> & Pick<JobWorkerOptions, 'run'>): Promise<JobWorker> {
    const worker = createJobWorker({
      pool,
      bus,
      logger,
      jobType: 'news',
      timeLimitMs: 30_000,
      leaseMs: 5_000,
      classify: () => ({ retry: false, type: 'internal_error', detail: 'failed' }),
      ...overrides,
    });
    await worker.start();
    workers.push(worker);
    return worker;
  }

  /** Submits a news job for `tenant` and, unless told not to, publishes its request (the workers' wake-up). */
  async function submit(tenant: keyof typeof tenants, n: number, { wake = true } = {}): Promise<string> {
    const { jobId } = await submitJob(pool, {
      tenantId: tenants[tenant],
      jobType: 'news',
      request: { symbols: [`S${n}`] },
      maxAttempts: 3,
    });
    if (wake)
      await createPublisher(bus).publish(jobRequestTopics.news, jobId, {
        job_id: jobId,
        job_type: 'news',
        tenant_id: tenants[tenant],
        attempt: 1,
      });
    return jobId;
  }

  const tenantOf = (job: JobToRun) => (job.tenantId === tenants.a ? 'a' : 'b');

  it("starts a second tenant's job within about one run behind another tenant's 100-job backlog", async () => {
    const RUN_MS = 150;
    const CONCURRENCY = 3;
    const starts: { tenant: string; id: string; at: number }[] = [];
    // Tenant b's job is submitted from inside the run of a's job that starts once every slot has been busy with a
    // (the (CONCURRENCY + 1)th start), and a's pending jobs are counted as b's starts: both points are fixed by the
    // worker's progress, not by how long this machine takes to get there.
    let bSubmitted: Promise<string> | undefined;
    let submittedAt = 0;
    let startsBefore = 0;
    let aPendingAtBStart: number | undefined;
    // A's backlog is in the database before the worker starts, which takes queued work at once.
    for (let n = 0; n < 100; n++) await submit('a', n, { wake: false });
    await startWorker({
      concurrency: CONCURRENCY,
      pollIntervalMs: 1_000,
      run: async (job) => {
        starts.push({ tenant: tenantOf(job), id: job.id, at: Date.now() });
        if (tenantOf(job) === 'b')
          aPendingAtBStart = (
            await pool.query<{ pending: number }>("SELECT count(*)::int AS pending FROM jobs WHERE tenant_id = $1 AND status = 'pending'", [
              tenants.a,
            ])
          ).rows[0]!.pending;
        else if (starts.length === CONCURRENCY + 1) {
          submittedAt = Date.now();
          bSubmitted = submit('b', 0).then((id) => {
            startsBefore = starts.length;
            return id;
          });
        }
        await sleep(RUN_MS);
        return { result: { news: [] } };
      },
    });
    await waitFor(() => aPendingAtBStart !== undefined, { what: "tenant b's job to start", timeoutMs: 20_000 });
    const bJob = await bSubmitted!;
    const bIndex = starts.findIndex((start) => start.id === bJob);
    // b's job is the next job started once a slot frees (at most the claim already under way goes before it), not
    // the 101st: a's backlog is still nearly all queued when it starts.
    expect(bIndex - startsBefore).toBeLessThanOrEqual(1);
    expect(starts.slice(0, bIndex).every((start) => start.tenant === 'a')).toBe(true);
    // About one run plus scheduling slack (seconds of it on a loaded machine), sooner than the backlog could have
    // run: 100 × 150 ms / 3 = 5 s at the least, however fast the machine.
    expect(starts[bIndex]!.at - submittedAt).toBeLessThan((100 * RUN_MS) / CONCURRENCY);
    expect(aPendingAtBStart).toBeGreaterThan(80);
  }, 60_000);

  it('takes a job whose wake-up was lost at the next poll', async () => {
    const started: string[] = [];
    await startWorker({
      pollIntervalMs: 600,
      run: async (job) => {
        started.push(job.id);
        return { result: { news: [] } };
      },
    });
    // The worker's first look for work (at start) is over, and found nothing.
    await sleep(200);
    const submittedAt = Date.now();
    const jobId = await submit('b', 1, { wake: false });
    await waitFor(() => started.includes(jobId), { what: 'the poll to take the job', timeoutMs: 5_000 });
    // Taken by the poll (450–750 ms after start), not by anything else.
    expect(Date.now() - submittedAt).toBeGreaterThanOrEqual(150);
  });

  it("keeps a tenant's work in flight at its cap across workers, while the other tenant's jobs still get slots", async () => {
    const CAP = 3;
    const inFlight = { a: 0, b: 0 };
    const most = { a: 0, b: 0 };
    const done: string[] = [];
    const A_JOBS = 20;
    let aStarted = 0;
    const run = async (job: JobToRun) => {
      const tenant = tenantOf(job);
      inFlight[tenant] += 1;
      if (tenant === 'a') aStarted += 1;
      most[tenant] = Math.max(most[tenant], inFlight[tenant]);
      // a's jobs keep their slots until a has its cap in flight (or has no job left to start): how many run at once
      // is then the claims' doing, not a race between this machine's claims and a 100 ms run.
      if (tenant === 'a') await waitFor(() => inFlight.a >= CAP || aStarted === A_JOBS, { what: "a's cap in flight", intervalMs: 10 });
      await sleep(100);
      inFlight[tenant] -= 1;
      done.push(job.id);
      return { result: { news: [] } };
    };
    // Two workers with ten slots each: room for far more than a's cap.
    await startWorker({ concurrency: 10, tenantCap: CAP, pollIntervalMs: 200, run });
    await startWorker({ concurrency: 10, tenantCap: CAP, pollIntervalMs: 200, run });
    const ids: string[] = [];
    for (let n = 0; n < A_JOBS; n++) ids.push(await submit('a', 100 + n));
    for (let n = 0; n < 4; n++) ids.push(await submit('b', 100 + n));
    await waitFor(() => ids.every((id) => done.includes(id)), { what: 'every job to run', timeoutMs: 30_000 });
    expect(most.a).toBe(CAP);
    expect(most.b).toBeGreaterThanOrEqual(1);
    expect(most.b).toBeLessThanOrEqual(CAP);
    // Each ran exactly once.
    expect(done.length).toBe(ids.length);
  }, 60_000);
});
