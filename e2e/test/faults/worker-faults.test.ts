import { AsyncJobResponse, NewsResult } from '@fin/contracts';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { newsRequest, postNews, startLoad } from '../../src/load';
import {
  bySize,
  describeOutcomes,
  jobLedger,
  liveNewsWorkers,
  pidOfWorkerId,
  reportSurvival,
  settleJobs,
  startFaultSystem,
  type FaultSystem,
} from '../../src/reliability';
import { newRun, scriptedModel, tagNews, think, type ScriptedModel } from '../../src/scripted-model';
import type { ServiceProcess, System } from '../../src/system';

const SIZE = bySize({
  ci: { windowJobs: 4, randomJobs: 30, randomRate: 3, kills: 3, pauses: 3 },
  full: { windowJobs: 15, randomJobs: 240, randomRate: 4, kills: 20, pauses: 10 },
});
/** Hang guard for the jobs of one scenario to settle; a job unfinished by then counts as lost. */
const SETTLE_MS = bySize({ ci: 120_000, full: 300_000 });

/** A worker's terminal commit: the statement that writes the final state and releases the lease (job-store lease.ts). */
const FINAL_COMMIT = 'WITH finished AS (%UPDATE jobs SET status = %';
/**
 * A progress write (job-store lease.ts): the worker's writes on the job are in order, so one queued behind the lock
 * holds the terminal commit behind it. Either way the model has answered and nothing of the result is committed.
 */
const PROGRESS_WRITE = 'WITH changed AS (%UPDATE jobs SET status = %';

/**
 * Workers die (kill -9) or freeze (SIGSTOP) in the middle of jobs. Two news workers, short leases (2 s) and the
 * shortest Kafka session the config allows (6 s), so a dead worker's jobs move on within seconds.
 */
describe('fault: worker processes killed or paused mid-job', () => {
  let db: TestDatabase;
  let model: ScriptedModel;
  let fault: FaultSystem | undefined;
  let system: System;
  let key: string;
  let client: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    model = scriptedModel();
    fault = await startFaultSystem({
      databaseUrl: db.url,
      tenant: 'faults',
      model: model.handler,
      workerEnv: { NEWS_LEASE_MS: '2000', KAFKA_SESSION_TIMEOUT_MS: '6000' },
    });
    ({ system, key } = fault);
    system.startWorker();
    client = new pg.Client(db.url);
    await client.connect();
  }, 120_000);

  afterEach(() => model.setHook(undefined));

  afterAll(async () => {
    await fault?.stop();
    await client?.end();
    await db?.drop();
  });

  const liveWorkers = () => liveNewsWorkers(system);
  const processOf = (pid: number): ServiceProcess => {
    const found = system.services.find((service) => service.child.pid === pid);
    if (!found) throw new Error(`No service process has pid ${pid}`);
    return found;
  };
  /** kill -9, then a replacement worker (as an orchestrator would restart it). */
  const killWorker = async (worker: ServiceProcess): Promise<void> => {
    worker.child.kill('SIGKILL');
    await worker.exited;
    system.startWorker();
  };
  const submit = async (body: unknown): Promise<string> => {
    const res = await postNews(system.gatewayUrl, key, body);
    expect(res.status).toBe(202);
    return AsyncJobResponse.parse(await res.json()).job_id;
  };

  it(`kills the worker between the model's answer and the result commit, deterministically (${SIZE.windowJobs} jobs)`, async () => {
    const run = newRun();
    // The first answer turn of each job takes a row lock on the job before the model answers: the worker gets
    // its answer, and its commit then waits on the lock. That is the window killed here, every time.
    const locks = new Map<string, { holder: pg.Client; pid: number }>();
    model.setHook(async (turn) => {
      if (!turn.marker?.includes(run) || !turn.answer || turn.answerTurn !== 1) return undefined;
      const holder = new pg.Client(db.url);
      await holder.connect();
      const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM jobs WHERE request->'data'->>'marker' = $1 FOR UPDATE", [turn.marker]);
      locks.set(turn.marker, { holder, pid: rows[0]!.pid });
      return undefined;
    });
    const ids = await Promise.all(Array.from({ length: SIZE.windowJobs }, (_, i) => submit(newsRequest(run, i))));

    let killedInWindow = 0;
    let kills = 0;
    try {
      for (;;) {
        // A phase: once every job a worker holds is waiting in its commit (and at least one is), kill those workers.
        // What the last poll saw, for the failure message: a phase that never comes must say which job held it up.
        let lastSeen = '';
        const phase = await waitFor(
          async () => {
            const { rows } = await client.query<{ status: string; lease_owner: string | null; marker: string; live: boolean }>(
              `SELECT status, lease_owner, request->'data'->>'marker' AS marker, lease_expires_at > now() AS live FROM jobs WHERE id = ANY($1::uuid[])`,
              [ids],
            );
            if (rows.every((row) => row.status === 'completed' || row.status === 'failed'))
              return { done: true, blocked: [] as { marker: string; owner: string }[] };
            const blocked: { marker: string; owner: string }[] = [];
            for (const [held, { pid }] of locks) {
              // Waiters on one row queue behind each other (a heartbeat may be first), so "behind the lock" is transitive.
              const waiting = await client.query(
                `WITH RECURSIVE behind(pid) AS (
                   SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))
                   UNION SELECT a.pid FROM pg_stat_activity a JOIN behind b ON b.pid = ANY(pg_blocking_pids(a.pid)))
                 SELECT 1 FROM pg_stat_activity a JOIN behind USING (pid) WHERE a.query LIKE $2 OR a.query LIKE $3`,
                [pid, FINAL_COMMIT, PROGRESS_WRITE],
              );
              const row = rows.find((candidate) => candidate.marker === held);
              if ((waiting.rowCount ?? 0) > 0 && row?.lease_owner) blocked.push({ marker: held, owner: row.lease_owner });
            }
            const working = rows.filter(
              (row) => row.lease_owner !== null && row.live && row.status !== 'completed' && row.status !== 'failed',
            );
            const ready = blocked.length > 0 && working.every((row) => blocked.some((entry) => entry.marker === row.marker));
            if (!ready) {
              const { rows: activity } = await client.query<{ pid: number; state: string; wait: string | null; query: string }>(
                `SELECT pid, state, wait_event_type || ':' || wait_event AS wait, left(regexp_replace(query, '\\s+', ' ', 'g'), 60) AS query
                   FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'`,
              );
              lastSeen = JSON.stringify({ jobs: rows, locks: [...locks.keys()], blocked, activity });
            }
            return ready && { done: false, blocked };
          },
          { timeoutMs: 60_000, intervalMs: 100, what: 'every running job to wait in its result commit' },
        ).catch((error: unknown) => {
          throw new Error(`${(error as Error).message}; last seen: ${lastSeen}`);
        });
        if (phase.done) break;
        const owners = new Set(phase.blocked.map((entry) => pidOfWorkerId(entry.owner)));
        for (const pid of owners) {
          await killWorker(processOf(pid));
          kills += 1;
        }
        killedInWindow += phase.blocked.length;
        // The lock released: each dead worker's completion, still waiting on the server, now runs. It commits when the
        // worker's lease still holds, and matches no row when another attempt has the job (docs/jobs.md).
        for (const { marker } of phase.blocked) {
          const { holder } = locks.get(marker)!;
          locks.delete(marker);
          await holder.query('ROLLBACK');
          await holder.end();
        }
      }
    } finally {
      for (const { holder } of locks.values()) await holder.end();
    }

    const outcomes = await settleJobs(client, ids, { timeoutMs: SETTLE_MS });
    const ledger = await jobLedger(client, ids);
    reportSurvival({
      scenario: "kill -9 between the model's answer and the result commit",
      n: ids.length,
      survived: outcomes.survived,
      lost: outcomes.lost,
      details: { 'workers killed': kills, 'jobs killed in the window': killedInWindow, ...describeOutcomes(outcomes) },
      problems: outcomes.problems,
    });
    // Every job was killed once with its answer in hand, and completed exactly once, with one result: on a later
    // attempt, or by the killed worker's own completion, a single statement already on the server (waiting for the
    // lock) when the process died, which commits without its client while the worker's lease still covers it.
    expect(killedInWindow).toBe(ids.length);
    expect([...ledger.values()].every((job) => job.status === 'completed' && job.attempts >= 1 && job.completions === 1)).toBe(true);
  }, 240_000);

  it(`kills workers at random points of jobs under load (${SIZE.randomJobs} jobs, ${SIZE.kills} kills)`, async () => {
    const run = newRun();
    // Each model turn takes 20–400 ms, so a kill lands anywhere: claiming, calling the model, calling tools,
    // between the answer and the commit, or just after.
    model.setHook(async () => {
      await think(20 + Math.random() * 380);
      return undefined;
    });
    const load = startLoad({
      ratePerSecond: SIZE.randomRate,
      send: (index, signal) => postNews(system.gatewayUrl, key, newsRequest(run, index), signal),
    });
    let kills = 0;
    let killedAfterAnswer = 0;
    const chaos = async () => {
      while (kills < SIZE.kills) {
        await think(1_000 + Math.random() * 2_000);
        const workers = liveWorkers();
        const victim = workers[Math.floor(Math.random() * workers.length)];
        if (!victim?.child.pid) continue;
        // Which of its jobs already had the model's answer (the window between the answer and the commit).
        const { rows } = await client.query<{ marker: string; attempts: number }>(
          `SELECT request->'data'->>'marker' AS marker, attempts FROM jobs WHERE status IN ('pending', 'running') AND lease_owner LIKE $1`,
          [`%:${victim.child.pid}:%`],
        );
        killedAfterAnswer += rows.filter((row) => model.answerTurns(row.marker) >= row.attempts).length;
        await killWorker(victim);
        kills += 1;
      }
      while (load.accepted.length < SIZE.randomJobs) await think(100);
    };
    const result = await chaos().then(
      () => load.stop(),
      async (error: unknown) => {
        await load.stop();
        throw error;
      },
    );
    const ids = result.accepted;
    const outcomes = await settleJobs(client, ids, { timeoutMs: SETTLE_MS });
    reportSurvival({
      scenario: 'kill -9 of a worker at random points',
      n: ids.length,
      survived: outcomes.survived,
      lost: outcomes.lost,
      details: {
        'workers killed': kills,
        'jobs held by a worker after its model answer when killed': killedAfterAnswer,
        ...describeOutcomes(outcomes),
        'requests refused': Object.values(result.refused).reduce((a, b) => a + b, 0),
      },
      problems: outcomes.problems,
    });
    expect(ids.length).toBeGreaterThanOrEqual(SIZE.randomJobs);
    expect(kills).toBe(SIZE.kills);
  }, 300_000);

  it(`rejects the stale completion of a worker paused past its lease (${SIZE.pauses} pauses)`, async () => {
    const run = newRun();
    let heldAnswer: { marker: string; release: () => void } | undefined;
    // The first answer turn of a job is held until the test has paused its worker, then answered ("stale"); any
    // later answer turn (the next attempt's) is answered "fresh".
    model.setHook(async (turn) => {
      if (!turn.marker?.includes(run) || !turn.answer) return undefined;
      if (turn.answerTurn === 1) {
        await new Promise<void>((release) => (heldAnswer = { marker: turn.marker!, release }));
        return tagNews('stale');
      }
      return tagNews('fresh');
    });

    const ids: string[] = [];
    let stale = 0;
    for (let i = 0; i < SIZE.pauses; i++) {
      const jobId = await submit(newsRequest(run, i));
      ids.push(jobId);
      const held = await waitFor(() => heldAnswer?.marker.endsWith(`x${i}`) && heldAnswer, {
        timeoutMs: 30_000,
        what: 'the first attempt to wait for its answer',
      });
      heldAnswer = undefined;
      const { rows } = await client.query<{ lease_owner: string }>('SELECT lease_owner FROM jobs WHERE id = $1', [jobId]);
      const owner = rows[0]!.lease_owner;
      const paused = processOf(pidOfWorkerId(owner));
      const lostLeases = () => paused.output().split('Lease lost').length - 1;
      const lostBefore = lostLeases();
      paused.child.kill('SIGSTOP');
      try {
        // The answer arrives while the worker is frozen; its lease runs out and the reaper requests the job again.
        held.release();
        await waitFor(
          async () => {
            const { rows: now } = await client.query<{ lease_owner: string | null }>('SELECT lease_owner FROM jobs WHERE id = $1', [jobId]);
            return now[0]?.lease_owner !== owner;
          },
          { timeoutMs: 30_000, intervalMs: 50, what: 'the paused worker to lose its lease' },
        );
      } finally {
        paused.child.kill('SIGCONT');
      }
      const [outcome] = (await settleJobs(client, [jobId], { timeoutMs: 60_000 })).problems;
      expect(outcome).toBeUndefined();

      // The database: the result is the newer attempt's; the paused attempt committed nothing.
      const { rows: job } = await client.query<{ status: string; attempts: number; event_seq: number; result: unknown }>(
        'SELECT status, attempts, event_seq, result FROM jobs WHERE id = $1',
        [jobId],
      );
      expect(job[0]).toMatchObject({ status: 'completed' });
      expect(job[0]!.attempts).toBeGreaterThanOrEqual(2);
      const titles = NewsResult.parse(job[0]!.result).news.map((item) => item.title);
      expect(titles.length).toBeGreaterThan(0);
      expect(titles.every((title) => title.endsWith('[fresh]'))).toBe(true);
      // The events: one completion was committed, by attempt 2 or later, and it is the one the job row holds.
      const { rows: events } = await client.query<{ seq: number; status: string }>(
        `SELECT (o.envelope->'payload'->>'seq')::int AS seq, o.envelope->'payload'->>'status' AS status
           FROM outbox o WHERE o.topic = 'jobs.events' AND o.message_key = $1 ORDER BY o.id`,
        [jobId],
      );
      const completions = events.filter((event) => event.status === 'completed');
      expect(completions).toHaveLength(1);
      expect(completions[0]!.seq).toBeGreaterThanOrEqual(2000);
      expect(job[0]!.event_seq).toBe(completions[0]!.seq);
      // The paused worker lives on and noticed it had lost the job.
      expect(paused.child.exitCode).toBeNull();
      await waitFor(() => lostLeases() > lostBefore, { what: 'the paused worker to report its lost lease' });
      stale += 1;
    }
    const outcomes = await settleJobs(client, ids, { timeoutMs: SETTLE_MS });
    reportSurvival({
      scenario: 'worker paused (SIGSTOP) past its lease, then resumed',
      n: ids.length,
      survived: outcomes.survived,
      lost: outcomes.lost,
      details: { 'stale completions rejected': stale, ...describeOutcomes(outcomes) },
    });
  }, 240_000);
});
