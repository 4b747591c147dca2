// The lease reaper: no job stays with a dead worker. A worker holds a job by a lease it keeps renewing; when the
// lease runs out the job is requested again (next attempt) or, after the last attempt, failed with a reason. The
// decisions are here; the statements are job-store's.
import { setTimeout as delay } from 'node:timers/promises';
import { type JobError } from '@fin/contracts';
import { type Pool, type PoolClient, withTransaction } from '@fin/db';
import {
  countFinished,
  expiredLeases,
  failJob,
  pruneProcessedEvents,
  requeueJob,
  settleReservations,
  tryReaperLock,
  unclaimedJobs,
  type ReapableJob,
} from '@fin/job-store';
import { type Logger } from '@fin/log';
import { reaperActions } from '@fin/metrics';

export interface LeaseReaperOptions {
  pool: Pool;
  logger: Logger;
  /** Time between sweeps (default 2 s). */
  intervalMs?: number;
  /** Jobs handled per transaction (default 100). */
  batchSize?: number;
  /**
   * A job that no worker has claimed for this long (its request was never consumed: workers down, or the request
   * dead-lettered) is failed with a reason rather than left pending forever (default 5 minutes).
   */
  unclaimedTimeoutMs?: number;
}

interface SweepResult {
  /** False when another replica held the reaper lock, so this one did nothing. */
  ran: boolean;
  /** Jobs requested again for their next attempt. */
  requeued: number;
  /** Jobs failed because their last attempt's worker stopped responding, or no worker ever claimed them. */
  failed: number;
}

export interface LeaseReaper {
  /** Sweeps every `intervalMs` in the background until stopped. */
  start(): void;
  /** Finishes the sweep in flight, then stops. */
  stop(): Promise<void>;
  /** One sweep now (what each tick does). */
  sweep(): Promise<SweepResult>;
}

function retryingText(nextAttempt: number, maxAttempts: number): string {
  return `Retrying after an interrupted attempt (attempt ${nextAttempt} of ${maxAttempts})`;
}

function abandonedError(attempts: number): JobError {
  return {
    type: 'internal_error',
    detail:
      attempts <= 1
        ? 'The job did not finish: its worker stopped responding.'
        : `The job did not finish: its worker stopped responding on all ${attempts} attempts.`,
  };
}

function unclaimedError(timeoutMs: number): JobError {
  return {
    type: 'service_unavailable',
    detail: `The job could not be started: no worker picked it up within ${Math.round(timeoutMs / 60_000) || 1} minute(s). Please submit the request again.`,
  };
}

/** A job failed in the batch, counted in the metrics once the batch commits. */
interface Failed {
  type: string;
  seconds: number;
}

/** Requests the job's next attempt, or fails it after the last one. Returns which. */
async function reap(client: PoolClient, job: ReapableJob, logger: Logger, failed: Failed[]): Promise<'requeued' | 'failed'> {
  const nextAttempt = job.attempts + 1;
  if (job.attempts >= job.max_attempts) {
    logger.warn({ jobId: job.id, attempts: job.attempts }, 'lease expired on the last attempt: job failed');
    failed.push({ type: job.type, seconds: await failJob(client, job, abandonedError(job.attempts)) });
    return 'failed';
  }
  if (!(await requeueJob(client, job, retryingText(nextAttempt, job.max_attempts)))) {
    // Cannot happen for a row the product services wrote; failing beats retrying a broken sweep forever.
    logger.error({ jobId: job.id, type: job.type }, 'lease expired on a job that cannot be requested again: job failed');
    failed.push({
      type: job.type,
      seconds: await failJob(client, job, {
        type: 'internal_error',
        detail: 'The job did not finish: its worker stopped responding and it could not be retried.',
      }),
    });
    return 'failed';
  }
  logger.warn({ jobId: job.id, attempt: nextAttempt, maxAttempts: job.max_attempts }, 'lease expired: job requested again');
  return 'requeued';
}

/** fin_reaper_actions_total, for one committed batch (zero increments still create the series, so rates start at 0). */
function countActions({ ran, requeued, failed }: SweepResult, unclaimed: number): void {
  if (!ran) return;
  reaperActions.inc({ action: 'requeued' }, requeued);
  reaperActions.inc({ action: 'failed_expired' }, failed - unclaimed);
  reaperActions.inc({ action: 'failed_unclaimed' }, unclaimed);
}

/**
 * Every `intervalMs`, finds pending or running jobs whose lease has expired (their worker died or hung) and
 * requests them again, or fails them after `max_attempts`; fails jobs no worker claimed in time; and deletes the
 * daily-budget reservations of jobs that ended and those that expired (settleReservations). One replica
 * sweeps at a time (job-store's reaper lock); a job is requeued exactly once per expired lease.
 */
export function createLeaseReaper({
  pool,
  logger,
  intervalMs = 2_000,
  batchSize = 100,
  unclaimedTimeoutMs = 300_000,
}: LeaseReaperOptions): LeaseReaper {
  const log = logger.child({ component: 'lease-reaper' });
  const stopping = new AbortController();
  let running: Promise<void> | undefined;

  async function batch(): Promise<SweepResult> {
    const failed: Failed[] = [];
    let unclaimed = 0;
    const result = await withTransaction(pool, async (client) => {
      if (!(await tryReaperLock(client))) return { ran: false, requeued: 0, failed: 0 };
      const swept: SweepResult = { ran: true, requeued: 0, failed: 0 };
      for (const job of await expiredLeases(client, batchSize)) swept[await reap(client, job, log, failed)] += 1;
      for (const job of await unclaimedJobs(client, batchSize, unclaimedTimeoutMs)) {
        log.warn({ jobId: job.id }, 'no worker claimed the job in time: job failed');
        failed.push({ type: job.type, seconds: await failJob(client, job, unclaimedError(unclaimedTimeoutMs)) });
        unclaimed += 1;
      }
      swept.failed += unclaimed;
      const settled = await settleReservations(client);
      if (settled > 0) log.info({ reservations: settled }, 'daily-budget reservations settled: their jobs ended, or they expired');
      await pruneProcessedEvents(client);
      return swept;
    });
    // After the commit: what the metrics count has happened.
    for (const job of failed) countFinished(job.type, 'failed', job.seconds);
    countActions(result, unclaimed);
    return result;
  }

  async function sweep(): Promise<SweepResult> {
    const total: SweepResult = { ran: false, requeued: 0, failed: 0 };
    for (;;) {
      const result = await batch();
      if (!result.ran) return total;
      total.ran = true;
      total.requeued += result.requeued;
      total.failed += result.failed;
      if (result.requeued + result.failed < batchSize || stopping.signal.aborted) return total;
    }
  }

  async function run(): Promise<void> {
    while (!stopping.signal.aborted) {
      try {
        await sweep();
      } catch (error) {
        log.error({ err: error }, 'lease sweep failed; retrying at the next interval');
      }
      try {
        await delay(intervalMs, undefined, { signal: stopping.signal });
      } catch {
        // Aborted: stopping.
      }
    }
  }

  return {
    start() {
      running ??= run();
    },
    async stop() {
      stopping.abort();
      await running;
    },
    sweep,
  };
}
