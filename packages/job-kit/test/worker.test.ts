import { createServer, connect, type Server, type Socket } from 'node:net';
import { NO_USAGE } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { createMemoryBus, createPublisher, jobRequestTopics, type MemoryEventBus } from '@fin/events';
import { createLogger } from '@fin/log';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { createJobWorker, submitJob, type JobWorker, type JobWorkerOptions } from '../src';
import { jobEvents } from './helpers';

/** A TCP proxy to the database that can make it unreachable (connections cut and refused) and reachable again. */
async function startDatabaseProxy(databaseUrl: string) {
  const target = new URL(databaseUrl);
  const sockets = new Set<Socket>();
  let reachable = true;
  let refused = 0;
  const server: Server = createServer((socket) => {
    if (!reachable) {
      refused += 1;
      socket.destroy();
      return;
    }
    const upstream = connect(Number(target.port || 5432), target.hostname);
    const close = () => {
      socket.destroy();
      upstream.destroy();
      sockets.delete(socket);
      sockets.delete(upstream);
    };
    for (const end of [socket, upstream]) {
      sockets.add(end);
      end.on('error', close);
      end.on('close', close);
    }
    socket.pipe(upstream).pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(databaseUrl);
  url.host = `127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url: url.toString(),
    refused: () => refused,
    down() {
      reachable = false;
      for (const socket of sockets) socket.destroy();
    },
    up() {
      reachable = true;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const logger = createLogger({ service: 'worker-test', level: 'silent' });

describe('job worker', () => {
  let db: TestDatabase;
  let pool: Pool;
  let bus: MemoryEventBus;
  let tenantId: string;
  const workers: JobWorker[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'worker-test', max: 10 });
    const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('w') RETURNING id");
    tenantId = rows[0]!.id;
  });
  beforeEach(() => {
    bus = createMemoryBus({ logger });
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop()));
    await bus.close();
    // A worker takes any claimable job of its type, not only those it is woken for: a test leaves none behind.
    await pool.query(
      `UPDATE jobs SET status = 'failed', error = '{"type": "internal_error", "detail": "test over"}', result = NULL,
              lease_owner = NULL, lease_expires_at = NULL, finished_at = now() WHERE status IN ('pending', 'running')`,
    );
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  async function startWorker(overrides: Partial<JobWorkerOptions>): Promise<JobWorker> {
    const worker = createJobWorker({
      pool,
      bus,
      logger,
      jobType: 'news',
      timeLimitMs: 5_000,
      leaseMs: 1_000,
      heartbeatMs: 100,
      retryDelayMs: 50,
      progressIntervalMs: 0,
      classify: () => ({ retry: true, type: 'service_unavailable', detail: 'Temporarily unavailable.' }),
      run: async () => ({ result: { news: [] } }),
      ...overrides,
    });
    await worker.start();
    workers.push(worker);
    return worker;
  }

  async function newJob(maxAttempts = 3): Promise<string> {
    const outcome = await submitJob(pool, { tenantId, jobType: 'news', request: { symbols: ['AAPL'] }, maxAttempts });
    return outcome.jobId;
  }

  async function request(jobId: string, attempt = 1): Promise<void> {
    await createPublisher(bus).publish(jobRequestTopics.news, jobId, { job_id: jobId, job_type: 'news', tenant_id: tenantId, attempt });
  }

  const events = (jobId: string) => jobEvents(pool, jobId);

  async function lease(jobId: string) {
    const { rows } = await pool.query<{
      status: string;
      result: unknown;
      lease_owner: string | null;
      lease_expires_at: Date | null;
      attempts: number;
    }>('SELECT status, result, lease_owner, lease_expires_at, attempts FROM jobs WHERE id = $1', [jobId]);
    return rows[0]!;
  }

  it('reports running, progress and completed with increasing seq, and keeps the job unclaimable after', async () => {
    let runs = 0;
    await startWorker({
      run: async (_job, ctx) => {
        runs += 1;
        ctx.progress(30, 'Searching news');
        ctx.progress(20, 'A step that must not lower progress');
        ctx.progress(70, 'Writing');
        return { result: { news: [] }, usage: { ...NO_USAGE, modelCalls: 1, inputTokens: 10, outputTokens: 5 } };
      },
    });
    const jobId = await newJob();
    await request(jobId);
    const list = await waitFor(async () => {
      const found = await events(jobId);
      return found.some((event) => event.status === 'completed') && found;
    });
    expect(list.map((event) => [event.seq, event.status, event.progress])).toEqual([
      [1001, 'running', 5],
      [1002, 'running', 30],
      [1003, 'running', 30],
      [1004, 'running', 70],
      [1005, 'completed', 100],
    ]);
    expect(list.at(-1)).toMatchObject({ result: { news: [] }, usage: { input_tokens: 10, output_tokens: 5 } });
    // The state is the job row's, committed with the event: completed with its result, the lease released, and
    // not claimable again.
    expect(await lease(jobId)).toMatchObject({
      status: 'completed',
      result: { news: [] },
      lease_owner: null,
      lease_expires_at: null,
      attempts: 1,
    });

    // A duplicate delivery of the same request does not run the job again.
    await request(jobId);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(runs).toBe(1);
  });

  it('reports at most one progress step per interval, the latest, and none after completion', async () => {
    await startWorker({
      progressIntervalMs: 150,
      run: async (_job, ctx) => {
        ctx.progress(10, 'first');
        ctx.progress(20, 'replaced before it was written');
        ctx.progress(30, 'latest');
        await new Promise((resolve) => setTimeout(resolve, 250));
        ctx.progress(60, 'dropped: the job completes first');
        return { result: { news: [] } };
      },
    });
    const jobId = await newJob();
    await request(jobId);
    const list = await waitFor(async () => {
      const found = await events(jobId);
      return found.some((event) => event.status === 'completed') && found;
    });
    expect(list.map((event) => [event.status, event.currently_working_on])).toEqual([
      ['running', 'Starting'],
      ['running', 'latest'],
      ['completed', 'Completed'],
    ]);
  });

  it("never numbers an event into the next attempt's range, however many steps an attempt reports", async () => {
    await startWorker({
      timeLimitMs: 60_000,
      leaseMs: 10_000,
      heartbeatMs: 1_000,
      run: async (_job, ctx) => {
        for (let step = 1; step <= 1_200; step++) ctx.progress(Math.min(99, step / 12), `Step ${step}`);
        return { result: { news: [] }, customerToolSet: null };
      },
    });
    const jobId = await newJob();
    await request(jobId);
    const list = await waitFor(
      async () => {
        const found = await events(jobId);
        return found.some((event) => event.status === 'completed') && found;
      },
      { timeoutMs: 60_000, what: 'the job to complete' },
    );
    const seqs = list.map((event) => event.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(Math.max(...seqs)).toBe(1999);
    expect(list.at(-1)).toMatchObject({ seq: 1999, status: 'completed', customer_tool_set: null });
    // Steps past the range are dropped; the status keeps the last one recorded.
    expect(list.at(-2)).toMatchObject({ seq: 1998, status: 'running', currently_working_on: 'Step 997' });
  }, 90_000);

  it('discards a completion after its lease was taken over (a stale worker)', async () => {
    let release: (() => void) | undefined;
    await startWorker({
      heartbeatMs: 10_000,
      run: (_job, { signal }) =>
        new Promise((resolve, reject) => {
          release = () => resolve({ result: { news: ['stale'] } });
          signal.addEventListener('abort', () => reject(new Error('aborted')));
        }),
    });
    const jobId = await newJob();
    await request(jobId);
    await waitFor(() => release !== undefined, { what: 'the run to start' });
    // Another attempt took the job over while this worker was paused.
    await pool.query("UPDATE jobs SET lease_owner = 'someone-else', attempts = 2 WHERE id = $1", [jobId]);
    release!();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await events(jobId)).map((event) => event.status)).toEqual(['running']);
  });

  it('stops working when the heartbeat finds its lease gone', async () => {
    let aborted = false;
    await startWorker({
      run: (_job, { signal }) =>
        new Promise((_resolve, reject) =>
          signal.addEventListener('abort', () => {
            aborted = true;
            reject(new Error('aborted'));
          }),
        ),
    });
    const jobId = await newJob();
    await request(jobId);
    await waitFor(async () => (await lease(jobId)).lease_owner !== null);
    await pool.query("UPDATE jobs SET lease_owner = 'someone-else' WHERE id = $1", [jobId]);
    await waitFor(() => aborted);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await events(jobId)).map((event) => event.status)).toEqual(['running']);
  });

  it('fails a job that exceeds its time limit, with a readable reason', async () => {
    await startWorker({
      timeLimitMs: 200,
      run: (_job, { signal }) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('x')))),
    });
    const jobId = await newJob();
    await request(jobId);
    const failed = await waitFor(async () => (await events(jobId)).find((event) => event.status === 'failed'));
    expect(failed.error).toEqual({ type: 'gateway_timeout', detail: 'The job took longer than its 0.2 s time limit.' });
  });

  it('schedules a retry for a retryable failure while attempts remain, then fails', async () => {
    await startWorker({
      run: async () => {
        throw new Error('model overloaded');
      },
    });
    const jobId = await newJob(2);
    await request(jobId);
    await waitFor(async () => (await events(jobId)).some((event) => event.currently_working_on.startsWith('A temporary problem')));
    const afterFirst = await lease(jobId);
    expect(afterFirst.lease_owner).toBeNull();
    expect(afterFirst.status).toBe('running');
    expect(afterFirst.lease_expires_at!.getTime()).toBeGreaterThan(Date.now() - 1_000);
    // The reaper re-requests it once the retry delay has passed; here the test does.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await request(jobId, 2);
    const failed = await waitFor(async () => (await events(jobId)).find((event) => event.status === 'failed'));
    expect(failed).toMatchObject({ seq: 2002, error: { type: 'service_unavailable', detail: 'Temporarily unavailable.' } });
    expect((await lease(jobId)).attempts).toBe(2);
  });

  it('hands a job back when the worker stops mid-run', async () => {
    let started = false;
    const worker = await startWorker({
      run: (_job, { signal }) => {
        started = true;
        return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('x'))));
      },
    });
    const jobId = await newJob();
    await request(jobId);
    await waitFor(() => started, { what: 'the run to start' });
    await worker.stop();
    const after = await lease(jobId);
    expect(after.lease_owner).toBeNull();
    expect(after.lease_expires_at!.getTime()).toBeLessThanOrEqual(Date.now() + 1_000);
    expect((await events(jobId)).map((event) => event.status)).toEqual(['running']);
  });

  it('lets a job in flight finish when stopping within its drain time, and claims no new job meanwhile', async () => {
    const started: string[] = [];
    const { promise: finished, resolve: finish } = Promise.withResolvers<undefined>();
    const worker = await startWorker({
      drainTimeoutMs: 30_000,
      run: async (job) => {
        started.push(job.id);
        await finished;
        return { result: { news: ['drained'] } };
      },
    });
    const first = await newJob();
    await request(first);
    await waitFor(() => started.length === 1, { what: 'the run to start' });
    const stopping = worker.stop();
    const second = await newJob();
    await request(second);
    finish(undefined);
    await stopping;
    expect(await lease(first)).toMatchObject({ status: 'completed', result: { news: ['drained'] }, lease_owner: null });
    expect((await events(first)).map((event) => event.status)).toEqual(['running', 'completed']);
    // The request that arrived while draining is left to the next worker.
    expect(started).toEqual([first]);
    expect(await lease(second)).toMatchObject({ status: 'pending', attempts: 0 });
  });

  it('hands back a job still running when its drain time is over', async () => {
    let started = false;
    const worker = await startWorker({
      drainTimeoutMs: 200,
      run: (_job, { signal }) => {
        started = true;
        return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('stopped'))));
      },
    });
    const jobId = await newJob();
    await request(jobId);
    await waitFor(() => started, { what: 'the run to start' });
    await worker.stop();
    expect(await lease(jobId)).toMatchObject({ status: 'running', lease_owner: null });
    expect((await events(jobId)).map((event) => event.status)).toEqual(['running']);
  });

  it('keeps retrying a job request while the database is unreachable, and runs the job once it is back', async () => {
    const proxy = await startDatabaseProxy(db.url);
    const unreliable = createPool({ connectionString: proxy.url, applicationName: 'worker-test-proxied', max: 4 });
    const deadLetters: unknown[] = [];
    const watch = await bus.subscribeDeadLetters({
      topic: jobRequestTopics.news,
      groupId: 'dead-letter-watch',
      handler: async (letter) => void deadLetters.push(letter),
    });
    try {
      await startWorker({ pool: unreliable, requestBackoff: { initialMs: 10, maxMs: 20 } });
      const jobId = await newJob();
      proxy.down();
      await request(jobId);
      // Many more failed claims than a consumer's default attempts (5): the request is still being retried, not
      // dead-lettered (which would leave the job pending with nobody to run it).
      await waitFor(() => proxy.refused() >= 15, { what: 'the worker to keep trying to claim the job' });
      proxy.up();
      const list = await waitFor(async () => {
        const found = await events(jobId);
        return found.some((event) => event.status === 'completed') && found;
      });
      expect(list.map((event) => event.status)).toEqual(['running', 'completed']);
      expect(deadLetters).toEqual([]);
    } finally {
      await Promise.all(workers.splice(0).map((worker) => worker.stop()));
      await watch.stop();
      await unreliable.end();
      proxy.down();
      await proxy.close();
    }
  });
});
