// The lease reaper: no job stays with a dead worker. A worker holds a job by a lease it keeps renewing; when the
// lease runs out the job is requested again (next attempt) or, after the last attempt, failed with a reason.
import { setTimeout as delay } from 'node:timers/promises';
import { type JobError } from '@fin/contracts';
import { type Pool, type PoolClient, withTransaction } from '@fin/db';
import { JobRequestedPayload, JobType, SEQ_PER_ATTEMPT, appendToOutbox, decodeEnvelope, jobRequestTopics, jobsEventsTopic } from '@fin/events';
import { type Logger } from '@fin/log';
import { applyJobEvent } from './apply';

/** Advisory-lock namespace of the reaper (two-integer form): one replica sweeps at a time. */
export const REAPER_LOCK_CLASS = 0x6a726561; // "jrea"

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
  /**
   * A job whose worker committed its terminal event this long ago while the job is still pending or running never
   * had that event applied (it was dead-lettered): the reaper applies it from the outbox, or retries or fails the
   * job (default 2 minutes; applying is idempotent, so the consumer applying it meanwhile does no harm).
   */
  unappliedTimeoutMs?: number;
}

export interface SweepResult {
  /** False when another replica held the reaper lock, so this one did nothing. */
  ran: boolean;
  /** Jobs requested again for their next attempt. */
  requeued: number;
  /** Jobs failed because their last attempt's worker stopped responding, or no worker ever claimed them. */
  failed: number;
  /** Jobs whose terminal event was committed but never applied, settled by applying it from the outbox. */
  recovered: number;
}

export interface LeaseReaper {
  /** Sweeps every `intervalMs` in the background until stopped. */
  start(): void;
  /** Finishes the sweep in flight, then stops. */
  stop(): Promise<void>;
  /** One sweep now (what each tick does). */
  sweep(): Promise<SweepResult>;
}

interface ExpiredJob {
  id: string;
  tenant_id: string;
  type: string;
  attempts: number;
  max_attempts: number;
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

async function fail(client: PoolClient, job: ExpiredJob, error: JobError): Promise<void> {
  // The seq bump is belt and braces: a finished job ignores every event anyway.
  await client.query(
    `UPDATE jobs SET status = 'failed', error = $2::jsonb, result = NULL, currently_working_on = NULL,
       lease_owner = NULL, lease_expires_at = NULL, finished_at = now(), updated_at = now(),
       event_seq = GREATEST(event_seq, (attempts + 1) * $3)
     WHERE id = $1`,
    [job.id, JSON.stringify(error), SEQ_PER_ATTEMPT],
  );
}

/** Requests the job's next attempt, or fails it with `lastError` after the last one. Returns which. */
async function reap(client: PoolClient, job: ExpiredJob, logger: Logger, lastError: JobError = abandonedError(job.attempts)): Promise<'requeued' | 'failed'> {
  const nextAttempt = job.attempts + 1;
  if (job.attempts >= job.max_attempts) {
    logger.warn({ jobId: job.id, attempts: job.attempts }, 'lease expired on the last attempt: job failed');
    await fail(client, job, lastError);
    return 'failed';
  }
  const type = JobType.safeParse(job.type);
  const payload = JobRequestedPayload.safeParse({ job_id: job.id, job_type: job.type, tenant_id: job.tenant_id, attempt: nextAttempt });
  if (!type.success || !payload.success) {
    // Cannot happen for a row the product services wrote; failing beats retrying a broken sweep forever.
    logger.error({ jobId: job.id, type: job.type }, 'lease expired on a job that cannot be requested again: job failed');
    await fail(client, job, { type: 'internal_error', detail: 'The job did not finish: its worker stopped responding and it could not be retried.' });
    return 'failed';
  }
  // Clearing the lease lets the next worker claim at once; attempts moves on when it does. Raising event_seq
  // past this attempt's numbers keeps a late report of the lost worker from overwriting the retry text.
  await client.query(
    `UPDATE jobs SET lease_owner = NULL, lease_expires_at = NULL, currently_working_on = $2, updated_at = now(),
       event_seq = GREATEST(event_seq, attempts * $3 + $3 - 1)
     WHERE id = $1`,
    [job.id, retryingText(nextAttempt, job.max_attempts), SEQ_PER_ATTEMPT],
  );
  await appendToOutbox(client, jobRequestTopics[type.data], job.id, payload.data);
  logger.warn({ jobId: job.id, attempt: nextAttempt, maxAttempts: job.max_attempts }, 'lease expired: job requested again');
  return 'requeued';
}

const UNRECORDED_ERROR: JobError = {
  type: 'internal_error',
  detail: 'The job finished, but its outcome could not be recorded. Please submit the request again.',
};

/**
 * A job whose worker committed its terminal event (and released the lease for good) while the event was never
 * applied — the job-event consumer dead-lettered it — would stay running forever. The event is still in the
 * outbox (kept a day after publishing): applying it from there settles the job as the consumer would have.
 * Without it, or when it cannot be applied, the job gets its next attempt, or fails with a reason after the last.
 */
async function settleUnapplied(client: PoolClient, job: ExpiredJob, logger: Logger): Promise<'recovered' | 'requeued' | 'failed'> {
  const { rows } = await client.query<{ envelope: string }>(
    `SELECT envelope::text AS envelope FROM outbox
      WHERE topic = $1 AND message_key = $2 AND envelope->'payload'->>'status' IN ('completed', 'failed')
      ORDER BY id DESC LIMIT 1`,
    [jobsEventsTopic.name, job.id],
  );
  const stored = rows[0]?.envelope;
  if (stored !== undefined) {
    try {
      const outcome = await applyJobEvent(client, decodeEnvelope(jobsEventsTopic, stored), { logger });
      if (outcome === 'applied') {
        logger.warn({ jobId: job.id }, 'a job\'s terminal event was never applied: applied it from the outbox');
        return 'recovered';
      }
      logger.error({ jobId: job.id, outcome }, 'a job\'s unapplied terminal event cannot be applied');
    } catch (error) {
      // A stored event that does not parse is settled below. Anything else is a database error: the batch's
      // transaction is rolled back and the next sweep tries again.
      if (!(error instanceof Error && error.name === 'PoisonMessageError')) throw error;
      logger.error({ jobId: job.id, err: error }, 'a job\'s unapplied terminal event is malformed');
    }
  } else {
    logger.error({ jobId: job.id }, 'a job\'s terminal event was never applied and is no longer in the outbox');
  }
  // reap() ends the lease that the terminal commit made endless, so the retry can be claimed.
  return reap(client, job, logger, UNRECORDED_ERROR);
}

/**
 * Every `intervalMs`, finds pending or running jobs whose lease has expired (their worker died or hung) and
 * requests them again, or fails them after `max_attempts`. One replica sweeps at a time: each batch runs in a
 * transaction that first try-locks the reaper's advisory lock, and takes its rows with SKIP LOCKED. Clearing the
 * lease in the same transaction as the outbox write makes a job requeued exactly once per expired lease.
 */
function unclaimedError(timeoutMs: number): JobError {
  return {
    type: 'service_unavailable',
    detail: `The job could not be started: no worker picked it up within ${Math.round(timeoutMs / 60_000) || 1} minute(s). Please submit the request again.`,
  };
}

export function createLeaseReaper({
  pool,
  logger,
  intervalMs = 2_000,
  batchSize = 100,
  unclaimedTimeoutMs = 300_000,
  unappliedTimeoutMs = 120_000,
}: LeaseReaperOptions): LeaseReaper {
  const log = logger.child({ component: 'lease-reaper' });
  const stopping = new AbortController();
  let running: Promise<void> | undefined;

  const batch = (): Promise<SweepResult> =>
    withTransaction(pool, async (client) => {
      const { rows: lock } = await client.query<{ acquired: boolean }>('SELECT pg_try_advisory_xact_lock($1::int, 0) AS acquired', [REAPER_LOCK_CLASS]);
      if (lock[0]?.acquired !== true) return { ran: false, requeued: 0, failed: 0, recovered: 0 };
      const { rows } = await client.query<ExpiredJob>(
        `SELECT id::text AS id, tenant_id::text AS tenant_id, type, attempts, max_attempts
         FROM jobs
         WHERE status IN ('pending', 'running') AND lease_expires_at < now()
         ORDER BY lease_expires_at
         LIMIT $1
         FOR UPDATE SKIP LOCKED`,
        [batchSize],
      );
      const result: SweepResult = { ran: true, requeued: 0, failed: 0, recovered: 0 };
      for (const job of rows) result[await reap(client, job, log)] += 1;
      const { rows: unclaimed } = await client.query<ExpiredJob>(
        `SELECT id::text AS id, tenant_id::text AS tenant_id, type, attempts, max_attempts
         FROM jobs
         WHERE status IN ('pending', 'running') AND lease_expires_at IS NULL
           AND updated_at < now() - $2::int * interval '1 millisecond'
         LIMIT $1
         FOR UPDATE SKIP LOCKED`,
        [batchSize, unclaimedTimeoutMs],
      );
      for (const job of unclaimed) {
        log.warn({ jobId: job.id }, 'no worker claimed the job in time: job failed');
        await fail(client, job, unclaimedError(unclaimedTimeoutMs));
        result.failed += 1;
      }
      const { rows: unapplied } = await client.query<ExpiredJob>(
        `SELECT id::text AS id, tenant_id::text AS tenant_id, type, attempts, max_attempts
         FROM jobs
         WHERE status IN ('pending', 'running') AND lease_expires_at = 'infinity'
           AND updated_at < now() - $2::int * interval '1 millisecond'
         LIMIT $1
         FOR UPDATE SKIP LOCKED`,
        [batchSize, unappliedTimeoutMs],
      );
      for (const job of unapplied) result[await settleUnapplied(client, job, log)] += 1;
      // Duplicate deliveries arrive within minutes; a week of handled event ids is ample.
      await client.query(
        `DELETE FROM processed_events WHERE ctid IN (
           SELECT ctid FROM processed_events WHERE processed_at < now() - interval '7 days' LIMIT 10000)`,
      );
      return result;
    });

  async function sweep(): Promise<SweepResult> {
    const total: SweepResult = { ran: false, requeued: 0, failed: 0, recovered: 0 };
    for (;;) {
      const result = await batch();
      if (!result.ran) return total;
      total.ran = true;
      total.requeued += result.requeued;
      total.failed += result.failed;
      total.recovered += result.recovered;
      if (result.requeued + result.failed + result.recovered < batchSize || stopping.signal.aborted) return total;
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
