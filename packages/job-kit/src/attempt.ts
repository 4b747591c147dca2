// One attempt at a job, whoever runs it: a worker that consumed the job's request (worker.ts) or a process that
// runs the job in-process for its caller (inline.ts). Both hold the job's lease and write the job's state through
// job-store while holding it: each step and its job.state event in one statement, the terminal state with the
// lease release, its event and the cache entry in one transaction.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { ErrorType, Usage } from '@fin/contracts';
import type { Pool } from '@fin/db';
import { SEQ_PER_ATTEMPT, type JobType } from '@fin/events';
import { STARTING_PROGRESS, attemptRecorder, completedResult, type LeaseKeeper, type LeasedJob } from '@fin/job-store';
import type { Logger } from '@fin/log';
import { FIN_ATTRIBUTES, withSpan } from '@fin/tracing';

/** A job whose lease the runner holds for this attempt. */
export type JobToRun = LeasedJob;

export interface RunContext {
  /** Aborted when the time limit passes, the lease is lost or the runner is told to stop. */
  signal: AbortSignal;
  /** Reports progress (0–100, never backwards) with a sentence a user would understand. */
  progress: (percent: number, currentlyWorkingOn: string) => void;
  /**
   * Told when a model call starts and stops waiting for the organisation's model budget: the time limit does not run
   * meanwhile (the job is queued for the model, not running), so a backlog never fails jobs that never ran.
   */
  waitingForModel: (waiting: boolean) => void;
}

export interface RunOutcome {
  result: Record<string, unknown>;
  /** What the run cost; the result's meta.usage then gives the job's usage over every attempt. */
  usage?: Usage;
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
  /** What the failed run had cost before it failed, when known (recorded as a failed attempt's usage). */
  usage?: Usage;
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
  /**
   * The runner's lease keeper (a worker's: every held lease renewed in one statement a heartbeat). Absent: the
   * attempt renews its own lease every heartbeat (a single job run for its caller).
   */
  leases?: LeaseKeeper;
}

export type AttemptSettings = Required<Omit<AttemptOptions, 'leases'>> & Pick<AttemptOptions, 'leases'>;

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

/**
 * What a failed run had spent, when its error says: the AI engine's errors carry it (`usage`, the six counters), a
 * run aborted for its time limit, a stop or a lost lease included.
 */
function spentBy(error: unknown): Usage | undefined {
  const usage = typeof error === 'object' && error !== null ? (error as { usage?: unknown }).usage : undefined;
  return typeof usage === 'object' && usage !== null && typeof (usage as Usage).modelCalls === 'number' ? (usage as Usage) : undefined;
}

class Aborted extends Error {
  constructor(readonly why: 'time_limit' | 'lease_lost' | 'stopped') {
    super(why);
  }
}

/**
 * One attempt at a job whose lease this runner has just claimed: writes `running`, renews the lease while `run`
 * works, writes its progress (at most one step per progress interval), and commits the terminal state with the
 * lease release — only while it still holds the lease, so a runner that was paused or lost its lease cannot
 * overwrite a newer attempt. With traces exported, the attempt is a `job <type>` span of the trace that requested it.
 */
export function runAttempt(
  settings: AttemptSettings,
  job: JobToRun,
  run: (job: JobToRun, ctx: RunContext) => Promise<RunOutcome>,
  stop: StopPolicy,
): Promise<AttemptOutcome> {
  const attributes = {
    [FIN_ATTRIBUTES.jobId]: job.id,
    [FIN_ATTRIBUTES.jobType]: job.type,
    [FIN_ATTRIBUTES.tenantId]: job.tenantId,
    'fin.job.attempt': job.attempt,
  };
  return withSpan(`job ${job.type}`, { attributes }, async (span) => {
    const outcome = await attempt(settings, job, run, stop);
    span.setAttribute('fin.job.outcome', outcome.kind);
    return outcome;
  });
}

async function attempt(
  settings: AttemptSettings,
  job: JobToRun,
  run: (job: JobToRun, ctx: RunContext) => Promise<RunOutcome>,
  stop: StopPolicy,
): Promise<AttemptOutcome> {
  const { pool, timeLimitMs, leaseMs, heartbeatMs, progressIntervalMs, workerId } = settings;
  const jobLog = settings.logger.child({ jobId: job.id, tenantId: job.tenantId, attempt: job.attempt });
  const store = attemptRecorder({ pool, workerId, retryDelayMs: settings.retryDelayMs, logger: jobLog }, job);
  // A worker's claim has written `running` already (claimAndStart); a job created claimed (inline.ts) has not.
  if (!job.eventsWritten)
    await store.progress(STARTING_PROGRESS, job.attempt > 1 ? `Starting again (attempt ${job.attempt} of ${job.maxAttempts})` : 'Starting');

  const controller = new AbortController();
  const abort = (why: Aborted['why']) => !controller.signal.aborted && controller.abort(new Aborted(why));
  const onStop = () => abort('stopped');
  stop.signal.addEventListener('abort', onStop, { once: true });
  // The runner may have been told to stop while the job was being claimed.
  if (stop.signal.aborted) onStop();
  // The time limit counts running time: it stands still while the run waits for the model budget (waitingForModel).
  let limitLeftMs = timeLimitMs;
  let limitStartedAt = Date.now();
  let limit: NodeJS.Timeout | undefined = setTimeout(() => abort('time_limit'), timeLimitMs);
  let modelWaits = 0;
  const waitingForModel = (waiting: boolean) => {
    modelWaits = Math.max(0, modelWaits + (waiting ? 1 : -1));
    if (waiting && modelWaits === 1 && limit !== undefined) {
      clearTimeout(limit);
      limit = undefined;
      limitLeftMs -= Date.now() - limitStartedAt;
    } else if (!waiting && modelWaits === 0 && limit === undefined && !controller.signal.aborted) {
      limitStartedAt = Date.now();
      limit = setTimeout(() => abort('time_limit'), Math.max(0, limitLeftMs));
    }
  };
  const held = settings.leases?.hold(job, () => abort('lease_lost'));
  const heartbeat =
    held === undefined
      ? setInterval(() => {
          store.renew(leaseMs).then(
            (renewed) => !renewed && abort('lease_lost'),
            (error: unknown) => jobLog.warn({ err: error }, 'Renewing the lease failed'),
          );
        }, heartbeatMs)
      : undefined;
  // Progress is written in order, one step at a time, so steps never overtake each other, and at most one per
  // progressIntervalMs: a step reported sooner waits, and is replaced by a later one that arrives meanwhile. A
  // quick job thus writes just `running` and `completed`.
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
        const { numbersLeft } = await store.progress(Math.min(99, Math.max(0, Math.round(step.percent))), step.text);
        if (!numbersLeft && !progressCapped) {
          progressCapped = true;
          jobLog.warn(
            { maxEvents: SEQ_PER_ATTEMPT - 2 },
            'This attempt reported more progress steps than one attempt can number; later steps are not recorded',
          );
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

  // What the run spent, as its outcome or its error reports it: recorded however the attempt ends.
  let spent: Usage | undefined;
  /** The attempt lost its lease: what it spent is still recorded (the account's day; the job's usage, if unfinished). */
  const lost = async (): Promise<{ kind: 'lease_lost' }> => {
    if (spent) await store.lostLease(spent).catch((error: unknown) => jobLog.warn({ err: error }, 'Recording the usage failed'));
    return { kind: 'lease_lost' };
  };
  try {
    const outcome = await run(job, { signal: controller.signal, progress, waitingForModel });
    spent = outcome.usage;
    if (controller.signal.aborted) throw controller.signal.reason;
    dropWaitingProgress();
    await progressChain;
    const committed = await store.complete(outcome);
    if (!committed) {
      jobLog.warn('Lease lost before the result was committed; the result is discarded (another attempt owns the job)');
      return await lost();
    }
    jobLog.info('Job completed');
    return { kind: 'completed', result: completedResult(job, outcome) };
  } catch (caught) {
    dropWaitingProgress();
    await progressChain;
    const reason = controller.signal.aborted ? (controller.signal.reason as Aborted) : caught;
    // An aborted run (time limit, stop, lost lease) reports what it spent in its error, as a failed one does.
    spent = spentBy(caught) ?? spent;
    const stopped = reason instanceof Aborted && reason.why === 'stopped';
    if (stopped && stop.onStop === 'handback') {
      // Hand the job back at once: the reaper re-requests it for another worker.
      await store.handBack(spent);
      jobLog.info('Worker stopping: job handed back');
      return { kind: 'handed_back' };
    }
    if (reason instanceof Aborted && reason.why === 'lease_lost') {
      jobLog.warn('Lease lost while working; stopped');
      return await lost();
    }
    let verdict: FailureVerdict;
    if (stopped) verdict = { ...settings.classify(stop.signal.reason), retry: false };
    else if (reason instanceof Aborted)
      verdict = { retry: false, type: 'gateway_timeout', detail: `The job took longer than its ${timeLimitMs / 1000} s time limit.` };
    else verdict = settings.classify(reason);
    const usage = verdict.usage ?? spent;
    const retry = verdict.retry && job.attempt < job.maxAttempts;
    const error = { type: verdict.type, detail: verdict.detail };
    jobLog.warn({ err: stopped ? stop.signal.reason : reason, retry }, 'Job attempt failed');
    const committed = retry
      ? await store.retryLater(
          `A temporary problem interrupted the work; retrying shortly (attempt ${job.attempt} of ${job.maxAttempts})`,
          usage,
        )
      : await store.fail(error, usage);
    if (!committed) {
      spent = usage;
      return await lost();
    }
    return retry ? { kind: 'retrying', error } : { kind: 'failed', error };
  } finally {
    dropWaitingProgress();
    clearTimeout(limit);
    clearInterval(heartbeat);
    held?.release();
    stop.signal.removeEventListener('abort', onStop);
  }
}
