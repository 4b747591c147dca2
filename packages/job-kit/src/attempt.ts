// One attempt at a job, whoever runs it: a worker that consumed the job's request (worker.ts) or a process that
// runs the job in-process for its caller (inline.ts). Both hold the job's lease, report through the outbox with
// the same seq numbering, and commit the terminal event together with releasing the lease.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { ErrorType } from '@fin/contracts';
import { withTransaction, type Pool, type Queryable } from '@fin/db';
import { SEQ_PER_ATTEMPT, appendToOutbox, jobsEventsTopic, type JobStateEventPayload, type JobType } from '@fin/events';
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
  /** Aborted when the time limit passes, the lease is lost or the runner is told to stop. */
  signal: AbortSignal;
  /** Reports progress (0–100, never backwards) with a sentence a user would understand. */
  progress(percent: number, currentlyWorkingOn: string): void;
}

export interface RunOutcome {
  result: Record<string, unknown>;
  usage?: { inputTokens: number; outputTokens: number };
  /**
   * The digest of the customer tools the run offered the model (null: none). Reported with the result, which is
   * cached only under a key made for that set; a run that does not say is not cached.
   */
  customerToolSet?: string | null;
}

/** How a failed run is reported: retried later (while attempts remain) or failed with a reason for the client. */
export interface FailureVerdict {
  retry: boolean;
  type: ErrorType;
  /** Shown to the client on the status endpoint. No internals. */
  detail: string;
}

/** Settings shared by everything that runs attempts. */
export interface AttemptOptions {
  pool: Pool;
  logger: Logger;
  jobType: JobType;
  classify(error: unknown): FailureVerdict;
  /** Whole-run limit; past it the job fails (not retried). */
  timeLimitMs: number;
  leaseMs?: number;
  heartbeatMs?: number;
  /** Delay before a retryable failure is retried (the lease is kept this long, then the reaper re-requests the job). */
  retryDelayMs?: number;
  /** At most one progress event per this interval (default 250 ms); 0 reports every step. */
  progressIntervalMs?: number;
  workerId?: string;
}

export type AttemptSettings = Required<AttemptOptions>;

export function attemptSettings(options: AttemptOptions): AttemptSettings {
  const leaseMs = options.leaseMs ?? 15_000;
  return {
    ...options,
    leaseMs,
    heartbeatMs: options.heartbeatMs ?? Math.floor(leaseMs / 3),
    retryDelayMs: options.retryDelayMs ?? 2_000,
    progressIntervalMs: options.progressIntervalMs ?? 250,
    workerId: options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
  };
}

/**
 * What the runner does when its stop signal aborts a run: a worker hands the job back for another worker
 * (`handback`); an in-process run belongs to its caller and ends with it, failed with `classify(reason)` (`fail`).
 */
export interface StopPolicy {
  signal: AbortSignal;
  onStop: 'handback' | 'fail';
}

/** How an attempt ended, from the point of view of the process that ran it. */
export type AttemptOutcome =
  | { kind: 'completed'; result: Record<string, unknown> }
  | { kind: 'failed'; error: { type: ErrorType; detail: string } }
  /** A retryable failure with attempts left: the reaper requests the job again after the retry delay. */
  | { kind: 'retrying'; error: { type: ErrorType; detail: string } }
  | { kind: 'handed_back' }
  /** Another attempt owns the job now; nothing this one did after losing the lease counts. */
  | { kind: 'lease_lost' };

class Aborted extends Error {
  constructor(readonly why: 'time_limit' | 'lease_lost' | 'stopped') {
    super(why);
  }
}

type StateEvent = Omit<JobStateEventPayload, 'job_id' | 'job_type' | 'seq' | 'worker_id'>;

/**
 * Writes the attempt's job.state events through the outbox: seq = attempt × SEQ_PER_ATTEMPT + n, progress never
 * lower. n stays inside the attempt's range however long the attempt runs: a progress event that would take the
 * range's last number is not written (it returns false; the status keeps the step before it), and the last number
 * is kept for the terminal event, so an attempt can never number an event as if it were the next attempt's.
 */
function eventWriter(settings: AttemptSettings, job: JobToRun) {
  let n = 0;
  let lastProgress = 0;
  const last = SEQ_PER_ATTEMPT - 1;
  const write = (db: Queryable, event: StateEvent, number: number) => {
    lastProgress = Math.max(lastProgress, event.progress);
    return appendToOutbox(db, jobsEventsTopic, job.id, {
      ...event,
      progress: lastProgress,
      job_id: job.id,
      job_type: settings.jobType,
      seq: job.attempt * SEQ_PER_ATTEMPT + number,
      worker_id: settings.workerId,
    });
  };
  return {
    async progress(db: Queryable, event: StateEvent): Promise<boolean> {
      if (n + 1 >= last) return false;
      n += 1;
      await write(db, event, n);
      return true;
    },
    /** The attempt's last event (completed, failed, or the running event of a retry). */
    async final(db: Queryable, event: StateEvent): Promise<void> {
      n = Math.min(n + 1, last);
      await write(db, event, n);
    },
  };
}

/**
 * Runs `work` only while this runner still holds the job's lease for this attempt (false when it does not), and
 * releases the lease in the same transaction: `final` (the terminal event is written) keeps the job unclaimable
 * until the jobs service applies that event; `retry` lets the reaper re-request it after the retry delay;
 * `handback` lets it re-request at once.
 */
function whileHoldingLease(
  settings: AttemptSettings,
  job: JobToRun,
  release: 'final' | 'retry' | 'handback',
  work: (db: Queryable) => Promise<void>,
): Promise<boolean> {
  const until = { final: "'infinity'::timestamptz", retry: "now() + $4 * interval '1 millisecond'", handback: 'now()' }[release];
  return withTransaction(settings.pool, async (client) => {
    // updated_at marks when the terminal event was committed: the reaper settles a job whose event never got
    // applied (dead-lettered) once it has waited long enough after this.
    const { rowCount } = await client.query(
      `UPDATE jobs SET lease_owner = NULL, lease_expires_at = ${until}, updated_at = now()
        WHERE id = $1 AND lease_owner = $2 AND attempts = $3`,
      release === 'retry' ? [job.id, settings.workerId, job.attempt, settings.retryDelayMs] : [job.id, settings.workerId, job.attempt],
    );
    if (rowCount !== 1) return false;
    await work(client);
    return true;
  });
}

/**
 * One attempt at a job whose lease this runner has just claimed: reports `running`, renews the lease while
 * `run` works, passes its progress on (at most one event per progress interval), and commits the terminal event
 * with the lease release — only while it still holds the lease, so a runner that was paused or lost its lease
 * cannot overwrite a newer attempt.
 */
export async function runAttempt(
  settings: AttemptSettings,
  job: JobToRun,
  run: (job: JobToRun, ctx: RunContext) => Promise<RunOutcome>,
  stop: StopPolicy,
): Promise<AttemptOutcome> {
  const { pool, timeLimitMs, leaseMs, heartbeatMs, progressIntervalMs, workerId } = settings;
  const jobLog = settings.logger.child({ jobId: job.id, tenantId: job.tenantId, attempt: job.attempt });
  const events = eventWriter(settings, job);
  await events.progress(pool, {
    status: 'running',
    progress: 5,
    currently_working_on: job.attempt > 1 ? `Starting again (attempt ${job.attempt} of ${job.maxAttempts})` : 'Starting',
  });

  const controller = new AbortController();
  const abort = (why: Aborted['why']) => !controller.signal.aborted && controller.abort(new Aborted(why));
  const onStop = () => abort('stopped');
  stop.signal.addEventListener('abort', onStop, { once: true });
  // The runner may have been told to stop while the job was being claimed.
  if (stop.signal.aborted) onStop();
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
  let progressCapped = false;
  let progressTimer: NodeJS.Timeout | undefined;
  const flushProgress = () => {
    progressTimer = undefined;
    const step = waiting;
    waiting = undefined;
    if (!step || controller.signal.aborted) return;
    lastProgressAt = Date.now();
    progressChain = progressChain
      .then(async () => {
        const written = await events.progress(pool, { status: 'running', progress: Math.min(99, Math.max(0, Math.round(step.percent))), currently_working_on: step.text });
        if (!written && !progressCapped) {
          progressCapped = true;
          jobLog.warn({ maxEvents: SEQ_PER_ATTEMPT - 2 }, 'This attempt reported more progress steps than one attempt can number; later steps are not recorded');
        }
      })
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
    const committed = await whileHoldingLease(settings, job, 'final', (db) =>
      events.final(db, {
        status: 'completed',
        progress: 100,
        currently_working_on: 'Completed',
        result: outcome.result,
        ...(outcome.customerToolSet !== undefined ? { customer_tool_set: outcome.customerToolSet } : {}),
        ...(outcome.usage ? { usage: { input_tokens: outcome.usage.inputTokens, output_tokens: outcome.usage.outputTokens } } : {}),
      }),
    );
    if (!committed) {
      jobLog.warn('Lease lost before the result was committed; the result is discarded (another attempt owns the job)');
      return { kind: 'lease_lost' };
    }
    jobLog.info('Job completed');
    return { kind: 'completed', result: outcome.result };
  } catch (caught) {
    dropWaitingProgress();
    await progressChain;
    const reason = controller.signal.aborted ? (controller.signal.reason as Aborted) : caught;
    const stopped = reason instanceof Aborted && reason.why === 'stopped';
    if (stopped && stop.onStop === 'handback') {
      // Hand the job back at once: the reaper re-requests it for another worker.
      await whileHoldingLease(settings, job, 'handback', async () => undefined);
      jobLog.info('Worker stopping: job handed back');
      return { kind: 'handed_back' };
    }
    if (reason instanceof Aborted && reason.why === 'lease_lost') {
      jobLog.warn('Lease lost while working; stopped');
      return { kind: 'lease_lost' };
    }
    let verdict: FailureVerdict;
    if (stopped) verdict = { ...settings.classify(stop.signal.reason), retry: false };
    else if (reason instanceof Aborted) verdict = { retry: false, type: 'gateway_timeout', detail: `The job took longer than its ${timeLimitMs / 1000} s time limit.` };
    else verdict = settings.classify(reason);
    const retry = verdict.retry && job.attempt < job.maxAttempts;
    const error = { type: verdict.type, detail: verdict.detail };
    jobLog.warn({ err: stopped ? stop.signal.reason : reason, retry }, 'Job attempt failed');
    const committed = await whileHoldingLease(settings, job, retry ? 'retry' : 'final', (db) =>
      events.final(db, retry
        ? { status: 'running', progress: 0, currently_working_on: `A temporary problem interrupted the work; retrying shortly (attempt ${job.attempt} of ${job.maxAttempts})` }
        : { status: 'failed', progress: 0, currently_working_on: 'Failed', error },
      ),
    );
    if (!committed) return { kind: 'lease_lost' };
    return retry ? { kind: 'retrying', error } : { kind: 'failed', error };
  } finally {
    dropWaitingProgress();
    clearTimeout(limit);
    clearInterval(heartbeat);
    stop.signal.removeEventListener('abort', onStop);
  }
}
