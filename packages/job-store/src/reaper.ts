// The reaper's statements (services/jobs/src/reaper.ts decides; these write). A sweep runs in one transaction per
// batch that first try-locks the reaper's advisory lock (one replica sweeps at a time) and takes its rows with
// SKIP LOCKED; clearing a lease and writing the job's next request commit together, so a job is requeued exactly
// once per expired lease.
import type { JobError } from '@fin/contracts';
import type { PoolClient } from '@fin/db';
import { JobRequestedPayload, JobType, SEQ_PER_ATTEMPT, appendToOutbox, jobRequestTopics } from '@fin/events';
import { outboxInsertFrom, outboxValues } from './events';

/** Advisory-lock namespace of the reaper (two-integer form): one replica sweeps at a time. */
export const REAPER_LOCK_CLASS = 0x6a726561; // "jrea"

/** A pending or running job the reaper took (row-locked) in its transaction. */
export interface ReapableJob {
  id: string;
  tenant_id: string;
  type: string;
  attempts: number;
  max_attempts: number;
  progress: number;
}

const COLUMNS = 'id::text AS id, tenant_id::text AS tenant_id, type, attempts, max_attempts, progress';

/** Whether this transaction holds the reaper's lock (false: another replica is sweeping). */
export async function tryReaperLock(client: PoolClient): Promise<boolean> {
  const { rows } = await client.query<{ acquired: boolean }>('SELECT pg_try_advisory_xact_lock($1::int, 0) AS acquired', [
    REAPER_LOCK_CLASS,
  ]);
  return rows[0]?.acquired === true;
}

/** Unfinished jobs whose lease ran out (their runner died, hung, or asked for a retry later), oldest first. */
export async function expiredLeases(client: PoolClient, limit: number): Promise<ReapableJob[]> {
  const { rows } = await client.query<ReapableJob>(
    `SELECT ${COLUMNS} FROM jobs
      WHERE status IN ('pending', 'running') AND lease_expires_at < now()
      ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
    [limit],
  );
  return rows;
}

/**
 * Unfinished jobs no runner has claimed (no lease) for `timeoutMs` while no runner holds a job of their type either:
 * no worker of the type is taking jobs. A job waiting its turn behind others of its type (workers busy, or its
 * tenant at its cap) is not one of them, however long the queue.
 */
export async function unclaimedJobs(client: PoolClient, limit: number, timeoutMs: number): Promise<ReapableJob[]> {
  const { rows } = await client.query<ReapableJob>(
    `SELECT ${COLUMNS} FROM jobs
      WHERE status IN ('pending', 'running') AND lease_expires_at IS NULL
        AND updated_at < now() - $2::int * interval '1 millisecond'
        AND NOT EXISTS (SELECT 1 FROM jobs held WHERE held.type = jobs.type AND held.status IN ('pending', 'running')
                          AND held.lease_owner IS NOT NULL AND held.lease_expires_at >= now())
      LIMIT $1 FOR UPDATE SKIP LOCKED`,
    [limit, timeoutMs],
  );
  return rows;
}

/**
 * Requests the job's next attempt: the lease is cleared (the next runner claims at once, and attempts moves on
 * when it does) and the request written to the outbox. Raising event_seq past this attempt's numbers marks the
 * step as the reaper's. False when the job cannot be requested again (a type no product knows).
 */
export async function requeueJob(client: PoolClient, job: ReapableJob, currentlyWorkingOn: string): Promise<boolean> {
  const type = JobType.safeParse(job.type);
  const payload = JobRequestedPayload.safeParse({
    job_id: job.id,
    job_type: job.type,
    tenant_id: job.tenant_id,
    attempt: job.attempts + 1,
  });
  if (!type.success || !payload.success) return false;
  await client.query(
    `UPDATE jobs SET lease_owner = NULL, lease_expires_at = NULL, currently_working_on = $2, updated_at = now(),
       event_seq = GREATEST(event_seq, attempts * $3 + $3 - 1)
     WHERE id = $1`,
    [job.id, currentlyWorkingOn, SEQ_PER_ATTEMPT],
  );
  await appendToOutbox(client, jobRequestTopics[type.data], job.id, payload.data);
  return true;
}

/**
 * Fails the job with `error`, and tells observers with a `failed` job.state event numbered past every attempt's
 * (a runner that still believes it holds the job cannot write: the lease is gone). Returns the job's age in
 * seconds for the metrics, counted once the caller's transaction commits.
 */
export async function failJob(client: PoolClient, job: ReapableJob, error: JobError): Promise<number> {
  const seq = (job.attempts + 1) * SEQ_PER_ATTEMPT;
  const type = JobType.safeParse(job.type);
  const values = [job.id, JSON.stringify(error), seq];
  if (!type.success) {
    // Cannot happen for a row the product services wrote; such a job is failed without an event.
    const { rows } = await client.query<{ age_seconds: number }>(`${FAIL_UPDATE} RETURNING ${AGE}`, values);
    return rows[0]?.age_seconds ?? 0;
  }
  const payload = outboxValues({
    job_id: job.id,
    job_type: type.data,
    seq,
    status: 'failed',
    progress: job.progress,
    currently_working_on: 'Failed',
    error,
  });
  const { rows } = await client.query<{ age_seconds: number }>(
    `WITH failed AS (${FAIL_UPDATE} RETURNING id, ${AGE}),
       event AS (${outboxInsertFrom('failed', 4)}),
       settled AS (DELETE FROM token_reservations r USING failed f WHERE r.job_id = f.id)
     SELECT age_seconds FROM failed`,
    [...values, ...payload],
  );
  return rows[0]?.age_seconds ?? 0;
}

const AGE = 'EXTRACT(EPOCH FROM clock_timestamp() - created_at)::float8 AS age_seconds';
const FAIL_UPDATE = `UPDATE jobs SET status = 'failed', error = $2::jsonb, result = NULL, currently_working_on = NULL,
       lease_owner = NULL, lease_expires_at = NULL, finished_at = now(), updated_at = now(),
       event_seq = GREATEST(event_seq, $3::int)
     WHERE id = $1::uuid`;

/**
 * Deletes the daily-budget reservations nothing holds any more (token_reservations): those of jobs that have
 * finished (their end settles them; this catches a reservation attached while its job was ending) or no longer
 * exist, and those past their expiry (a gateway that died before it attached or released one). A bounded batch at
 * a time; returns how many went.
 */
export async function settleReservations(client: PoolClient): Promise<number> {
  const { rowCount } = await client.query(
    `DELETE FROM token_reservations WHERE id IN (
       SELECT r.id FROM token_reservations r LEFT JOIN jobs j ON j.id = r.job_id
        WHERE r.expires_at <= now() OR (r.job_id IS NOT NULL AND (j.id IS NULL OR j.status NOT IN ('pending', 'running')))
        LIMIT 10000)`,
  );
  return rowCount ?? 0;
}

/** Forgets handled event ids older than a week (duplicate deliveries arrive within minutes), a bounded batch at a time. */
export async function pruneProcessedEvents(client: PoolClient): Promise<void> {
  await client.query(
    `DELETE FROM processed_events WHERE ctid IN (
       SELECT ctid FROM processed_events WHERE processed_at < now() - interval '7 days' LIMIT 10000)`,
  );
}
