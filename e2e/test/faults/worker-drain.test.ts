import { AsyncJobResponse } from '@fin/contracts';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { newsRequest, postNews } from '../../src/load';
import { jobLedger, liveNewsWorkers, startFaultSystem, type FaultSystem } from '../../src/reliability';
import { marker, newRun, scriptedModel, think, type ScriptedModel } from '../../src/scripted-model';
import type { ServiceProcess, System } from '../../src/system';

/** Longest a held model call waits for its gate: a call whose worker gave up on it must not hang the fake. */
const HOLD_LIMIT_MS = 30_000;

/**
 * A news worker gets SIGTERM with a job in flight (its model call held open by the fake Claude). With drain time
 * left, it claims nothing new, finishes the job, commits the result and exits 0, so the model's work is paid for
 * once; when the drain time runs out first, it hands the job back and another worker completes it.
 */
describe('fault: a worker stopped (SIGTERM) with a job in flight', () => {
  let db: TestDatabase;
  let model: ScriptedModel;
  let fault: FaultSystem | undefined;
  let system: System;
  let key: string;
  let client: pg.Client;
  let release: () => void = () => undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    model = scriptedModel();
    fault = await startFaultSystem({
      databaseUrl: db.url,
      tenant: 'drain',
      model: model.handler,
      workerEnv: { NEWS_LEASE_MS: '2000', KAFKA_SESSION_TIMEOUT_MS: '6000', WORKER_DRAIN_TIMEOUT_MS: '30000' },
    });
    ({ system, key } = fault);
    client = new pg.Client(db.url);
    await client.connect();
  }, 120_000);

  afterEach(() => {
    release();
    model.setHook(undefined);
  });

  afterAll(async () => {
    await fault?.stop();
    await client?.end();
    await db?.drop();
  });

  const liveWorkers = () => liveNewsWorkers(system);

  /** Holds the first model call of `held` (its first attempt) until `release()`; every other call is answered. */
  function holdFirstCall(held: string): void {
    let timer: NodeJS.Timeout | undefined;
    const gate = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, HOLD_LIMIT_MS);
      release = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    model.setHook(async (turn) => {
      if (turn.marker === held && turn.call === 1) await gate;
      return undefined;
    });
  }

  async function submit(body: unknown): Promise<string> {
    const res = await postNews(system.gatewayUrl, key, body);
    expect(res.status).toBe(202);
    return AsyncJobResponse.parse(await res.json()).job_id;
  }

  async function job(id: string) {
    const entry = (await jobLedger(client, [id])).get(id);
    if (!entry) throw new Error(`job ${id} has no row`);
    return entry;
  }

  it('finishes the job in flight, commits its result once and exits 0', async () => {
    const [worker] = liveWorkers() as [ServiceProcess];
    const run = newRun();
    const held = marker(run, 0);
    holdFirstCall(held);
    const id = await submit(newsRequest(run, 0));
    await waitFor(() => model.calls(held) >= 1, { timeoutMs: 30_000, what: 'the worker to call the model' });

    worker.child.kill('SIGTERM');
    // Draining: the process waits for its job rather than handing it back and exiting.
    await think(1_500);
    expect(worker.child.exitCode).toBeNull();
    expect(await job(id)).toMatchObject({ status: 'running', attempts: 1 });

    release();
    expect(await worker.exited).toBe(0);
    // Committed by the stopping worker before it exited (no other worker runs), on its one attempt.
    expect(await job(id)).toMatchObject({ status: 'completed', attempts: 1, hasResult: true, completions: 1 });
    const callsOnce = model.calls(held);
    // Nothing re-runs it afterwards.
    const replacement = system.startWorker();
    await think(3_000);
    expect(model.calls(held)).toBe(callsOnce);
    expect(await job(id)).toMatchObject({ status: 'completed', attempts: 1, completions: 1 });
    expect(liveWorkers()).toEqual([replacement]);
  }, 120_000);

  it('hands the job back when its drain time runs out, and another worker completes it', async () => {
    const impatient = system.startWorker({ WORKER_DRAIN_TIMEOUT_MS: '1000' });
    // Only the impatient worker consumes while the job is claimed.
    const others = liveWorkers().filter((worker) => worker !== impatient);
    for (const other of others) await other.stop();
    const run = newRun();
    const held = marker(run, 1);
    holdFirstCall(held);
    const id = await submit(newsRequest(run, 1));
    await waitFor(() => model.calls(held) >= 1, { timeoutMs: 60_000, what: 'the impatient worker to call the model' });
    const next = system.startWorker();

    impatient.child.kill('SIGTERM');
    expect(await impatient.exited).toBe(0);
    // Handed back, not completed: its lease released for the next worker.
    const handedBack = await job(id);
    expect(handedBack.status).not.toBe('completed');
    expect(handedBack.completions).toBe(0);

    const done = await waitFor(
      async () => {
        const entry = await job(id);
        return entry.status === 'completed' && entry;
      },
      { timeoutMs: 60_000, what: 'the other worker to complete the job' },
    );
    expect(done).toMatchObject({ attempts: 2, hasResult: true, completions: 1 });
    expect(liveWorkers()).toEqual([next]);
  }, 180_000);
});
