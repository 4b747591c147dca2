import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { ErrorType } from '@fin/contracts';
import { withTransaction, type Pool, type Queryable } from '@fin/db';
import {
  appendToOutbox,
  jobRequestTopics,
  jobsEventsTopic,
  type EventBus,
  type JobRequestedPayload,
  type JobStateEventPayload,
  type JobType,
  type Subscription,
} from '@fin/events';
import type { Logger } from '@fin/log';

export interface JobToRun {
  id: string;
  type: JobType;
  tenantId: string;
  request: Record<string, unknown>;
  attempt: number;
  maxAttempts: number;
}

export interface RunContext {
  /** Aborted when the time limit passes, the lease is lost or the worker shuts down. */
  signal: AbortSignal;
  /** Reports progress (0–100, never backwards) with a sentence a user would understand. */
  progress(percent: number, currentlyWorkingOn: string): void;
}

export interface RunOutcome {
  result: Record<string, unknown>;
  usage?: { inputTokens: number; outputTokens: number };
}

/** How a failed run is reported: retried later (while attempts remain) or failed with a reason for the client. */
export interface FailureVerdict {
  retry: boolean;
  type: ErrorType;
  /** Shown to the client on the status endpoint. No internals. */
  detail: string;
}

export interface JobWorkerOptions {
  pool: Pool;
  bus: EventBus;
  logger: Logger;
  jobType: JobType;
  run(job: JobToRun, ctx: RunContext): Promise<RunOutcome>;
  classify(error: unknown): FailureVerdict;
  /** Whole-run limit; past it the job fails (not retried). */
  timeLimitMs: number;
  leaseMs?: number;
  heartbeatMs?: number;
  /** Delay before a retryable failure is retried (the lease is kept this long, then the reaper re-requests the job). */
  retryDelayMs?: number;
  /** Jobs run at once by this process. */
  concurrency?: number;
  /** At most one progress event per this interval (default 250 ms); 0 reports every step. */
  progressIntervalMs?: number;
  workerId?: string;
}

export interface JobWorker {
  readonly workerId: string;
  start(): Promise<void>;
  /** Stops taking jobs; jobs in flight are aborted and handed back (their leases released for a quick retry). */
  stop(): Promise<void>;
}

class Aborted extends Error {
  constructor(readonly why: 'time_limit' | 'lease_lost' | 'shutdown') {
    super(why);
  }
}

/**
 * The worker role of a product service. It consumes its product's job requests at least once and, per job:
 * claims a lease (a second delivery, or a job another live worker holds, is skipped), reports `running` and
 * progress through the outbox, renews the lease while working, and commits its terminal event in the same
 * transaction as releasing the lease — only while it still holds it, so a worker that was paused or lost its
 * lease cannot overwrite a newer attempt. Event `seq` is `attempt * 1000 + n`.
 */
export function createJobWorker(options: JobWorkerOptions): JobWorker {
  const { pool, bus, jobType, run, classify, timeLimitMs } = options;
  const leaseMs = options.leaseMs ?? 15_000;
  const heartbeatMs = options.heartbeatMs ?? Math.floor(leaseMs / 3);
  const retryDelayMs = options.retryDelayMs ?? 2_000;
  const progressIntervalMs = options.progressIntervalMs ?? 250;
  const workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const log = options.logger.child({ component: 'job-worker', jobType, workerId });
  const stopping = new AbortController();
  let subscription: Subscription | undefined;

  async function claim(jobId: string): Promise<JobToRun | undefined> {
    const { rows } = await pool.query<{ attempts: number; max_attempts: number; tenant_id: string; request: Record<string, unknown> }>(
      `UPDATE jobs SET lease_owner = $2, lease_expires_at = now() + $3 * interval '1 millisecond', attempts = attempts + 1
        WHERE id = $1 AND type = $4 AND status IN ('pending', 'running') AND attempts < max_attempts
          AND (lease_expires_at IS NULL OR lease_expires_at < now())
        RETURNING attempts, max_attempts, tenant_id, request`,
      [jobId, workerId, leaseMs, jobType],
    );
    const row = rows[0];
    return row && { id: jobId, type: jobType, tenantId: row.tenant_id, request: row.request, attempt: row.attempts, maxAttempts: row.max_attempts };
  }

  function eventWriter(job: JobToRun) {
    let n = 0;
    let lastProgress = 0;
    return (db: Queryable, event: Omit<JobStateEventPayload, 'job_id' | 'job_type' | 'seq' | 'worker_id'>) => {
      n += 1;
      lastProgress = Math.max(lastProgress, event.progress);
      return appendToOutbox(db, jobsEventsTopic, job.id, {
        ...event,
        progress: lastProgress,
        job_id: job.id,
        job_type: jobType,
        seq: job.attempt * 1000 + n,
        worker_id: workerId,
      });
    };
  }

  /**
   * Runs `work` only while this worker still holds the job's lease for this attempt (false when it does not), and
   * releases the lease in the same transaction: `final` (the terminal event is written) keeps the job unclaimable
   * until the jobs service applies that event; `retry` lets the reaper re-request it after the retry delay;
   * `handback` lets it re-request at once.
   */
  async function whileHoldingLease(job: JobToRun, release: 'final' | 'retry' | 'handback', work: (db: Queryable) => Promise<void>): Promise<boolean> {
    const until = { final: "'infinity'::timestamptz", retry: "now() + $4 * interval '1 millisecond'", handback: 'now()' }[release];
    return withTransaction(pool, async (client) => {
      const { rowCount } = await client.query(
        `UPDATE jobs SET lease_owner = NULL, lease_expires_at = ${until}
          WHERE id = $1 AND lease_owner = $2 AND attempts = $3`,
        release === 'retry' ? [job.id, workerId, job.attempt, retryDelayMs] : [job.id, workerId, job.attempt],
      );
      if (rowCount !== 1) return false;
      await work(client);
      return true;
    });
  }

  async function handle(payload: JobRequestedPayload): Promise<void> {
    const job = await claim(payload.job_id);
    if (!job) {
      log.debug({ jobId: payload.job_id }, 'Job not claimable (finished, or leased by a live worker); skipped');
      return;
    }
    const jobLog = log.child({ jobId: job.id, attempt: job.attempt });
    const emit = eventWriter(job);
    await emit(pool, {
      status: 'running',
      progress: 5,
      currently_working_on: job.attempt > 1 ? `Starting again (attempt ${job.attempt} of ${job.maxAttempts})` : 'Starting',
    });

    const controller = new AbortController();
    const abort = (why: Aborted['why']) => !controller.signal.aborted && controller.abort(new Aborted(why));
    const onStop = () => abort('shutdown');
    stopping.signal.addEventListener('abort', onStop, { once: true });
    // The worker may have been told to stop while the job was being claimed.
    if (stopping.signal.aborted) onStop();
    const limit = setTimeout(() => abort('time_limit'), timeLimitMs);
    const heartbeat = setInterval(() => {
      pool
        .query(
          `UPDATE jobs SET lease_expires_at = now() + $4 * interval '1 millisecond'
            WHERE id = $1 AND lease_owner = $2 AND attempts = $3`,
          [job.id, workerId, job.attempt, leaseMs],
        )
        .then(
          ({ rowCount }) => rowCount !== 1 && abort('lease_lost'),
          (error: unknown) => jobLog.warn({ err: error }, 'Renewing the lease failed'),
        );
    }, heartbeatMs);
    // Progress events are written in order, one at a time, so they never overtake each other, and at most one per
    // progressIntervalMs: a step reported sooner waits, and is replaced by a later one that arrives meanwhile. A
    // quick job thus reports just `running` and `completed`, and its events reach the jobs service sooner.
    let progressChain: Promise<unknown> = Promise.resolve();
    let lastProgressAt = Date.now();
    let waiting: { percent: number; text: string } | undefined;
    let progressTimer: NodeJS.Timeout | undefined;
    const flushProgress = () => {
      progressTimer = undefined;
      const step = waiting;
      waiting = undefined;
      if (!step || controller.signal.aborted) return;
      lastProgressAt = Date.now();
      progressChain = progressChain
        .then(() => emit(pool, { status: 'running', progress: Math.min(99, Math.max(0, Math.round(step.percent))), currently_working_on: step.text }))
        .catch((error: unknown) => jobLog.warn({ err: error }, 'Recording progress failed'));
    };
    const progress = (percent: number, text: string) => {
      waiting = { percent, text };
      if (progressTimer) return;
      const wait = lastProgressAt + progressIntervalMs - Date.now();
      if (wait <= 0) flushProgress();
      else progressTimer = setTimeout(flushProgress, wait);
    };
    const dropWaitingProgress = () => {
      clearTimeout(progressTimer);
      progressTimer = undefined;
      waiting = undefined;
    };

    try {
      const outcome = await run(job, { signal: controller.signal, progress });
      if (controller.signal.aborted) throw controller.signal.reason;
      dropWaitingProgress();
      await progressChain;
      const committed = await whileHoldingLease(job, 'final', (db) =>
        emit(db, {
          status: 'completed',
          progress: 100,
          currently_working_on: 'Completed',
          result: outcome.result,
          ...(outcome.usage ? { usage: { input_tokens: outcome.usage.inputTokens, output_tokens: outcome.usage.outputTokens } } : {}),
        }).then(() => undefined),
      );
      if (committed) jobLog.info('Job completed');
      else jobLog.warn('Lease lost before the result was committed; the result is discarded (another attempt owns the job)');
    } catch (caught) {
      dropWaitingProgress();
      await progressChain;
      const reason = controller.signal.aborted ? (controller.signal.reason as Aborted) : caught;
      if (reason instanceof Aborted && reason.why === 'shutdown') {
        // Hand the job back at once: the reaper re-requests it for another worker.
        await whileHoldingLease(job, 'handback', async () => undefined);
        jobLog.info('Worker stopping: job handed back');
        return;
      }
      if (reason instanceof Aborted && reason.why === 'lease_lost') {
        jobLog.warn('Lease lost while working; stopped');
        return;
      }
      const verdict: FailureVerdict =
        reason instanceof Aborted
          ? { retry: false, type: 'gateway_timeout', detail: `The job took longer than its ${timeLimitMs / 1000} s time limit.` }
          : classify(reason);
      const retry = verdict.retry && job.attempt < job.maxAttempts;
      jobLog.warn({ err: reason, retry }, 'Job attempt failed');
      await whileHoldingLease(job, retry ? 'retry' : 'final', (db) =>
        emit(db, retry
          ? { status: 'running', progress: 0, currently_working_on: `A temporary problem interrupted the work; retrying shortly (attempt ${job.attempt} of ${job.maxAttempts})` }
          : { status: 'failed', progress: 0, currently_working_on: 'Failed', error: { type: verdict.type, detail: verdict.detail } },
        ).then(() => undefined),
      );
    } finally {
      dropWaitingProgress();
      clearTimeout(limit);
      clearInterval(heartbeat);
      stopping.signal.removeEventListener('abort', onStop);
    }
  }

  return {
    workerId,
    async start() {
      subscription = await bus.subscribe({
        topic: jobRequestTopics[jobType],
        groupId: `${jobType}-workers`,
        concurrency: options.concurrency ?? 4,
        handler: (envelope) => handle(envelope.payload),
      });
      log.info('Worker consuming job requests');
    },
    async stop() {
      stopping.abort();
      await subscription?.stop();
    },
  };
}
