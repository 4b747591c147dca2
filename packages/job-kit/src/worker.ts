import { claimNext, createLeaseKeeper } from '@fin/job-store';
import { jobRequestTopics, type EventBus, type Subscription } from '@fin/events';
import { attemptSettings, runAttempt, type AttemptOptions, type JobToRun, type RunContext, type RunOutcome } from './attempt';

export type { FailureVerdict, JobToRun, RunContext, RunOutcome } from './attempt';

export interface JobWorkerOptions extends AttemptOptions {
  bus: EventBus;
  run: (job: JobToRun, ctx: RunContext) => Promise<RunOutcome>;
  /** Jobs run at once by this process (default 4). A slot mostly waits on the model, not on the CPU. */
  concurrency?: number;
  /**
   * Jobs of this type one tenant may have running at once, across every worker of the deployment (default
   * DEFAULT_TENANT_CAP). Counted from live leases when a job is claimed.
   */
  tenantCap?: number;
  /**
   * How often the worker looks for work it was not woken for (default 1,500 ms, each wait jittered by ±25 %): a
   * wake-up lost, or work that arrived while every slot was busy and no job of this process has ended since.
   */
  pollIntervalMs?: number;
  /** Delay between retries of a job request whose handling failed (default 200 ms doubling to 10 s). */
  requestBackoff?: { initialMs?: number; maxMs?: number };
  /**
   * On stop, how long jobs in flight may still finish (default 0: handed back at once). Their model calls are
   * paid for; a job that finishes is one the next worker does not run again.
   */
  drainTimeoutMs?: number;
}

/**
 * Attempts at handling one job request (a wake-up) before it is dead-lettered. Handling fails only when the database
 * is unreachable; the worker keeps retrying (backoff up to 10 s: several minutes, longer than a database restart or
 * failover), as the jobs service does with job events, so that the job is claimed as soon as the database is back
 * rather than at the next poll.
 */
const REQUEST_MAX_ATTEMPTS = 50;

/** Jobs of one type a tenant may have running at once across the deployment, unless configured otherwise. */
export const DEFAULT_TENANT_CAP = 200;

/**
 * Jobs one worker process runs at once unless configured (docs/deployment.md#capacity-planning). A job mostly waits
 * for the model, holding no connection and no CPU: a slot costs memory (about 0.1–0.5 MB a job in flight,
 * docs/benchmarks.md), and the leases of all of them are renewed in one statement. 200 holds what a deployment's
 * model allowance serves (Little's law: ~270 news jobs in flight at 4,000 requests a minute) on two replicas, with a
 * third for one lost, in ~100 MB over the idle process.
 */
export const DEFAULT_WORKER_CONCURRENCY = 200;

/** Claims in a row that found their tenant's job taken by another worker before one look for work gives up. */
const MAX_CONTENDED_CLAIMS = 20;

export interface JobWorker {
  readonly workerId: string;
  start(): Promise<void>;
  /**
   * Stops taking jobs at once, lets jobs in flight finish for up to `drainTimeoutMs`, then aborts those still
   * running and hands them back (their leases released for a quick retry by another worker).
   */
  stop(): Promise<void>;
}

/**
 * The worker role of a product service. The order of work is decided where the jobs are: each free slot takes the
 * next job in fair order (claimNext: the tenant with the least work of the type running, below its cap, oldest job
 * first), leased and marked `running` in one transaction. A job request from Kafka (consumed at least once) is a
 * wake-up, "there is work of this type": its handler claims jobs for the free slots and returns, without holding
 * the partition while they run. A job that ends frees its slot and claims again, and a jittered poll finds work whose
 * wake-up was lost or came while every slot was busy. Each job runs one attempt (attempt.ts): `running` and progress
 * written to the job with their events, the lease renewed while working, and the terminal state committed in the
 * same transaction as releasing the lease — only while it still holds it, so a worker that was paused or lost its
 * lease cannot overwrite a newer attempt.
 */
export function createJobWorker(options: JobWorkerOptions): JobWorker {
  const settings = attemptSettings(options);
  const { pool, jobType, workerId, leaseMs } = settings;
  const log = options.logger.child({ component: 'job-worker', jobType, workerId });
  // One statement a heartbeat renews the leases of every job this worker runs (lease-keeper.ts).
  const leases = createLeaseKeeper({ pool, logger: log, workerId, leaseMs, heartbeatMs: settings.heartbeatMs });
  const logged = { ...settings, logger: log, leases };
  const drainTimeoutMs = options.drainTimeoutMs ?? 0;
  const concurrency = options.concurrency ?? DEFAULT_WORKER_CONCURRENCY;
  const tenantCap = options.tenantCap ?? DEFAULT_TENANT_CAP;
  const pollIntervalMs = options.pollIntervalMs ?? 1_500;
  const stopping = new AbortController();
  let subscription: Subscription | undefined;
  /** False from the moment stop() is called: nothing new is claimed. */
  let claiming = false;
  let pollTimer: NodeJS.Timeout | undefined;
  /** Jobs claimed and not yet finished, each with its run. */
  const running = new Map<string, Promise<void>>();
  /** The look for work under way (one at a time), and how many have been asked for. */
  let filling: Promise<void> | undefined;
  let fillRequests = 0;

  function startRun(job: JobToRun): void {
    const run = runAttempt(logged, job, options.run, { signal: stopping.signal, onStop: 'handback' })
      .then(
        () => undefined,
        // Only a database failure gets here (a run's own failures are its attempt's outcome): the lease runs out
        // and the job is taken again, by the reaper's request or a worker's poll.
        (error: unknown) =>
          log.error({ err: error, jobId: job.id }, 'Recording the job attempt failed; its lease will expire and it will be retried'),
      )
      .finally(() => {
        running.delete(job.id);
        // The slot is free: take the next job at once rather than at the next poll.
        if (claiming) fill().catch((error: unknown) => log.warn({ err: error }, 'Looking for the next job failed; the poll tries again'));
      });
    running.set(job.id, run);
  }

  /** Claims jobs in fair order while slots are free and there is work. */
  async function claimWhileFree(): Promise<void> {
    let contended = 0;
    while (claiming && running.size < concurrency) {
      const next = await claimNext(pool, { jobType, workerId, leaseMs, tenantCap });
      if (next.kind === 'none') return;
      if (next.kind === 'contended') {
        if (++contended >= MAX_CONTENDED_CLAIMS) return;
        continue;
      }
      contended = 0;
      startRun(next.job);
    }
  }

  /**
   * One look for work at a time: a wake-up, a freed slot or the poll arriving meanwhile joins the one under way and
   * has it look once more when it is done (so work committed after its last claim is not missed). Rejects when the
   * database cannot be reached, which makes a wake-up's delivery fail and be retried.
   */
  function fill(): Promise<void> {
    fillRequests += 1;
    if (filling) return filling;
    filling = (async () => {
      try {
        let handled = 0;
        while (claiming && handled !== fillRequests) {
          handled = fillRequests;
          await claimWhileFree();
        }
      } finally {
        filling = undefined;
      }
    })();
    return filling;
  }

  function schedulePoll(): void {
    if (!claiming) return;
    pollTimer = setTimeout(
      () => {
        fill()
          .catch((error: unknown) => log.warn({ err: error }, 'Looking for work failed; the next poll tries again'))
          .finally(schedulePoll);
      },
      pollIntervalMs * (0.75 + Math.random() * 0.5),
    );
  }

  /**
   * Stopping the subscription waits for the wake-ups in flight (each returns once it has claimed), so nothing new is
   * claimed while the jobs already claimed run on (their leases renewed as usual). At the drain deadline the jobs
   * still running are aborted, which hands them back, and the wait ends with them.
   */
  async function drain(stopped: Promise<void>): Promise<void> {
    if (running.size > 0) log.info({ jobs: [...running.keys()], drainTimeoutMs }, 'Worker stopping: finishing the jobs in flight');
    const deadline = setTimeout(() => {
      if (running.size > 0) log.warn({ jobs: [...running.keys()], drainTimeoutMs }, 'Drain time over: handing back the jobs still running');
      stopping.abort();
    }, drainTimeoutMs);
    try {
      await stopped;
    } finally {
      clearTimeout(deadline);
      stopping.abort();
    }
  }

  return {
    workerId,
    async start() {
      claiming = true;
      subscription = await options.bus.subscribe({
        topic: jobRequestTopics[jobType],
        groupId: `${jobType}-workers`,
        // A wake-up returns as soon as the free slots are claimed: one at a time is enough.
        concurrency: 1,
        maxAttempts: REQUEST_MAX_ATTEMPTS,
        backoff: { initialMs: 200, maxMs: 10_000, ...options.requestBackoff },
        handler: () => (claiming ? fill() : Promise.resolve()),
      });
      // Work queued while no worker ran is taken now, not at the first poll.
      fill().catch((error: unknown) => log.warn({ err: error }, 'Looking for work failed; the poll tries again'));
      schedulePoll();
      log.info({ concurrency, tenantCap, pollIntervalMs }, 'Worker taking jobs');
    },
    async stop() {
      claiming = false;
      clearTimeout(pollTimer);
      if (drainTimeoutMs === 0) stopping.abort();
      await drain(
        (async () => {
          await subscription?.stop();
          await filling?.catch(() => undefined);
          // No run starts after the last look for work has ended.
          await Promise.all(running.values());
        })(),
      );
      leases.close();
    },
  };
}
