import { claimAndStart } from '@fin/job-store';
import { jobRequestTopics, type EventBus, type JobRequestedPayload, type Subscription } from '@fin/events';
import { attemptSettings, runAttempt, type AttemptOptions, type JobToRun, type RunContext, type RunOutcome } from './attempt';

export type { FailureVerdict, JobToRun, RunContext, RunOutcome } from './attempt';

export interface JobWorkerOptions extends AttemptOptions {
  bus: EventBus;
  run: (job: JobToRun, ctx: RunContext) => Promise<RunOutcome>;
  /** Jobs run at once by this process. */
  concurrency?: number;
  /** Delay between retries of a job request whose handling failed (default 200 ms doubling to 10 s). */
  requestBackoff?: { initialMs?: number; maxMs?: number };
  /**
   * On stop, how long jobs in flight may still finish (default 0: handed back at once). Their model calls are
   * paid for; a job that finishes is one the next worker does not run again.
   */
  drainTimeoutMs?: number;
}

/**
 * Attempts at handling one job request before it is dead-lettered. Handling fails only when the database is
 * unreachable (a run's own failures are reported through its attempt), and a dead-lettered request leaves its
 * job pending with nobody to run it; so, as the jobs service does with job events, the worker keeps retrying
 * (backoff up to 10 s: several minutes, longer than a database restart or failover) rather than give up.
 */
const REQUEST_MAX_ATTEMPTS = 50;

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
 * The worker role of a product service. It consumes its product's job requests at least once and, per job:
 * claims a lease (a second delivery, or a job another live worker holds, is skipped), then runs one attempt
 * (attempt.ts): `running` and progress written to the job with their events, the lease renewed while working,
 * and the terminal state committed in the same transaction as releasing the lease — only while it still holds
 * it, so a worker that was paused or lost its lease cannot overwrite a newer attempt.
 */
export function createJobWorker(options: JobWorkerOptions): JobWorker {
  const settings = attemptSettings(options);
  const { pool, jobType, workerId, leaseMs } = settings;
  const log = options.logger.child({ component: 'job-worker', jobType, workerId });
  const logged = { ...settings, logger: log };
  const drainTimeoutMs = options.drainTimeoutMs ?? 0;
  const stopping = new AbortController();
  let subscription: Subscription | undefined;
  /** Jobs claimed and not yet finished, for the drain's log lines. */
  const running = new Set<string>();

  async function handle(payload: JobRequestedPayload): Promise<void> {
    // The claim writes `running` (with its event) in the same statement.
    const job = await claimAndStart(pool, { jobId: payload.job_id, jobType, workerId, leaseMs });
    if (!job) {
      log.debug({ jobId: payload.job_id }, 'Job not claimable (finished, or leased by a live worker); skipped');
      return;
    }
    running.add(job.id);
    try {
      await runAttempt(logged, job, options.run, { signal: stopping.signal, onStop: 'handback' });
    } finally {
      running.delete(job.id);
    }
  }

  /**
   * Stopping the subscription pauses its partitions and waits for the handlers in flight, so nothing new is
   * claimed while the jobs already claimed run on (their leases renewed as usual). At the drain deadline the
   * jobs still running are aborted, which hands them back, and the subscription's wait ends with them.
   */
  async function drain(stopped: Promise<void>): Promise<void> {
    if (running.size > 0) log.info({ jobs: [...running], drainTimeoutMs }, 'Worker stopping: finishing the jobs in flight');
    const deadline = setTimeout(() => {
      if (running.size > 0) log.warn({ jobs: [...running], drainTimeoutMs }, 'Drain time over: handing back the jobs still running');
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
      subscription = await options.bus.subscribe({
        topic: jobRequestTopics[jobType],
        groupId: `${jobType}-workers`,
        concurrency: options.concurrency ?? 4,
        maxAttempts: REQUEST_MAX_ATTEMPTS,
        backoff: { initialMs: 200, maxMs: 10_000, ...options.requestBackoff },
        handler: (envelope) => handle(envelope.payload),
      });
      log.info('Worker consuming job requests');
    },
    async stop() {
      if (drainTimeoutMs === 0) stopping.abort();
      await drain(subscription?.stop() ?? Promise.resolve());
    },
  };
}
