// The statements of a job's attempt, whoever runs it (a worker that consumed the job's request, or a process
// running the job for its caller): claiming the lease, renewing it, and writing the job's state while holding it.
// Every write names the lease in its WHERE clause (lease_owner and attempts), so a runner that was paused or lost
// its lease to the reaper writes nothing: the lease is checked by the statement that writes, not before it. Each
// state change and its job.state event commit together, and the terminal change commits with the result cache.
import { ErrorType, addAttemptUsage, usageCounts, type JobError, type JobUsage, type Usage } from '@fin/contracts';
import { withTransaction, type Pool, type Queryable } from '@fin/db';
import { SEQ_PER_ATTEMPT, type JobStateEventPayload, type JobType } from '@fin/events';
import type { Logger } from '@fin/log';
import { jobDuration, jobsFinished } from '@fin/metrics';
import { describeCacheKey } from './cache-key';
import { outboxInsertFrom, outboxValues } from './events';

/** How long a completed result is served from the cache. */
const RESULT_CACHE_TTL = '7 days';
/** The progress an attempt starts at (its `running` write). */
export const STARTING_PROGRESS = 5;

/** A job whose lease a runner holds for one attempt. */
export interface LeasedJob {
  id: string;
  type: JobType;
  tenantId: string;
  request: Record<string, unknown>;
  attempt: number;
  maxAttempts: number;
  /** The result-cache key chosen at submission (null: the product is not cached). */
  cacheKey: string | null;
  /**
   * Events of this attempt already written with the claim (claimAndStart writes `running` as number 1); 0 or
   * absent when the runner still has to write `running`.
   */
  eventsWritten?: number;
  /** The job's progress when the claim was made (it never decreases). */
  progress?: number;
  /** What the job's earlier attempts cost (null or absent: nothing recorded). */
  usage?: JobUsage | null;
}

/** What a claim statement returns of the job it leased. */
export interface ClaimedRow {
  attempts: number;
  max_attempts: number;
  tenant_id: string;
  request: Record<string, unknown>;
  cache_key: string | null;
  usage: JobUsage | null;
}

/** A claim's job, as its runner sees it. */
function leasedJobOf(claim: { jobId: string; jobType: JobType }, row: ClaimedRow): LeasedJob {
  return {
    id: claim.jobId,
    type: claim.jobType,
    tenantId: row.tenant_id,
    request: row.request,
    attempt: row.attempts,
    maxAttempts: row.max_attempts,
    cacheKey: row.cache_key,
    usage: row.usage,
  };
}

/**
 * Takes the lease of a job that is pending or running with no live lease and attempts left, starting its next
 * attempt. Undefined when the job is finished, out of attempts, or leased by a live runner (a second delivery of
 * its request).
 */
export async function claimJob(
  db: Queryable,
  claim: { jobId: string; jobType: JobType; workerId: string; leaseMs: number },
): Promise<LeasedJob | undefined> {
  const { rows } = await db.query<ClaimedRow>({
    name: 'job-store-claim',
    text: `UPDATE jobs SET lease_owner = $2, lease_expires_at = now() + $3 * interval '1 millisecond', attempts = attempts + 1
            WHERE id = $1 AND type = $4 AND status IN ('pending', 'running') AND attempts < max_attempts
              AND (lease_expires_at IS NULL OR lease_expires_at < now())
            RETURNING attempts, max_attempts, tenant_id, request, cache_key, usage`,
    values: [claim.jobId, claim.workerId, claim.leaseMs, claim.jobType],
  });
  const row = rows[0];
  return row && leasedJobOf(claim, row);
}

/** The job id the claim event is built with when the statement chooses the job itself (claimNext): filled in by it. */
const CHOSEN_JOB_PLACEHOLDER = '00000000-0000-0000-0000-000000000000';

/**
 * The claim and the attempt's first write in one statement: the lease taken, `running` with the starting step and
 * event number 1 of the attempt, and its job.state event in the outbox. The event is built by the runner with
 * placeholders that only the claim knows (the job id when the statement chooses the job, seq, progress, the step's
 * text), which the statement fills in from the claimed row. Parameters: $2 worker, $3 lease ms, $4 job type, $5–$11
 * the event (outboxValues); `jobId` is the job's id in SQL ($1, or the choice a `choose` CTE makes), and `select`
 * what the statement returns, from `claimed`.
 */
export function claimStatement({ jobId, choose, select }: { jobId: string; choose?: string; select: string }): string {
  return `WITH ${choose === undefined ? '' : `${choose},\n  `}claimed AS (
    UPDATE jobs SET lease_owner = $2, lease_expires_at = now() + $3 * interval '1 millisecond', attempts = attempts + 1,
           status = 'running', progress = GREATEST(progress, ${STARTING_PROGRESS}),
           currently_working_on = CASE WHEN attempts = 0 THEN 'Starting'
                                       ELSE 'Starting again (attempt ' || (attempts + 1) || ' of ' || max_attempts || ')' END,
           event_seq = (attempts + 1) * ${SEQ_PER_ATTEMPT} + 1, started_at = COALESCE(started_at, now()), updated_at = now()
     WHERE id = ${jobId} AND type = $4 AND status IN ('pending', 'running') AND attempts < max_attempts
       AND (lease_expires_at IS NULL OR lease_expires_at < now())
     RETURNING id, attempts, max_attempts, tenant_id, request, cache_key, usage, progress, currently_working_on, event_seq),
  event AS (${outboxInsertFrom(
    'claimed c',
    5,
    (envelope) => `jsonb_set(jsonb_set(jsonb_set(jsonb_set(${envelope}::jsonb, '{payload,job_id}', to_jsonb(c.id::text)),
                   '{payload,seq}', to_jsonb(c.event_seq)), '{payload,progress}', to_jsonb(c.progress)),
                   '{payload,currently_working_on}', to_jsonb(c.currently_working_on))`,
    (key) => `replace(${key}::text, '${CHOSEN_JOB_PLACEHOLDER}', c.id::text)`,
  )})
  ${select}`;
}

const CLAIM_AND_START_SQL = claimStatement({
  jobId: '$1',
  select: 'SELECT id::text AS id, attempts, max_attempts, tenant_id, request, cache_key, usage, progress FROM claimed',
});

/** The `running` event of a claim, with the placeholders its statement fills in (claimStatement). */
export function claimEventValues(claim: { jobId?: string; jobType: JobType; workerId: string }): unknown[] {
  return outboxValues({
    job_id: claim.jobId ?? CHOSEN_JOB_PLACEHOLDER,
    job_type: claim.jobType,
    seq: 1,
    status: 'running',
    progress: STARTING_PROGRESS,
    currently_working_on: 'Starting',
    worker_id: claim.workerId,
  });
}

/** A claim statement's job, as its runner sees it (claimAndStart, claimNext). */
export function startedJobOf(jobType: JobType, row: ClaimedRow & { id: string; progress: number }): LeasedJob {
  return { ...leasedJobOf({ jobId: row.id, jobType }, row), eventsWritten: 1, progress: row.progress };
}

/**
 * claimJob and the attempt's `running` write in one statement (one round trip, one commit): the job is leased to
 * `workerId` and marked `running` ("Starting", or "Starting again (attempt N of M)") with its event, numbered 1
 * within the attempt. Undefined, with nothing written, when claimJob would find nothing to claim.
 */
export async function claimAndStart(
  db: Queryable,
  claim: { jobId: string; jobType: JobType; workerId: string; leaseMs: number },
): Promise<LeasedJob | undefined> {
  const { rows } = await db.query<ClaimedRow & { id: string; progress: number }>({
    name: 'job-store-claim-and-start',
    text: CLAIM_AND_START_SQL,
    values: [claim.jobId, claim.workerId, claim.leaseMs, claim.jobType, ...claimEventValues(claim)],
  });
  const row = rows[0];
  return row && startedJobOf(claim.jobType, row);
}

/** What a completed attempt reports. */
export interface Completion {
  result: Record<string, unknown>;
  /** What this attempt cost (a runner that does not say records nothing, and its result gets no meta.usage). */
  usage?: Usage;
  /**
   * The digest of the customer tools the run offered the model (null: none; undefined: the runner does not say).
   * The result is cached only under a key made for exactly this set (see cacheEntryOf).
   */
  customerToolSet?: string | null;
}

/**
 * Where a completed job's result is cached, if anywhere. The key was chosen when the job was submitted, for the
 * customer tool set the tenant had then; the runner reports the set it actually offered. Only when the two agree
 * is the result cached under that key: a tool added, changed or removed in between would otherwise file a result
 * under a key that does not describe it (in the worst case, a shared key for a result that saw the tenant's tools).
 * The entry belongs to the tenant when the key does (custom data, a tool set, or a no-cache refresh).
 */
function cacheEntryOf(
  job: Pick<LeasedJob, 'cacheKey' | 'tenantId'>,
  reportedToolSet: string | null | undefined,
): { key: string; tenantId: string | null } | undefined {
  if (job.cacheKey === null) return undefined;
  const key = describeCacheKey(job.cacheKey);
  if (reportedToolSet === undefined || reportedToolSet !== key.toolSet) return undefined;
  return { key: job.cacheKey, tenantId: key.tenantScoped ? job.tenantId : null };
}

/** An attempt's usage with the job's over every attempt so far; undefined when the runner reported none. */
function attemptUsage(
  job: Pick<LeasedJob, 'usage'>,
  spent: Usage | undefined,
  failed: boolean,
): { attempt: Usage; job: JobUsage } | undefined {
  return spent && { attempt: spent, job: addAttemptUsage(job.usage ?? null, spent, failed) };
}

/**
 * A completed attempt's result as it is stored, cached and answered: its `meta.usage` says what the job cost over
 * every attempt. A result without `meta` (a runner's own shape) is left as it is.
 */
function resultWithUsage(result: Record<string, unknown>, usage: JobUsage): Record<string, unknown> {
  const { meta } = result;
  if (meta === null || typeof meta !== 'object' || Array.isArray(meta)) return result;
  return { ...result, meta: { ...meta, usage } };
}

/** A completed attempt's result as `complete` commits it (with meta.usage when the attempt reports its usage). */
export function completedResult(job: Pick<LeasedJob, 'usage'>, completion: Pick<Completion, 'result' | 'usage'>): Record<string, unknown> {
  const usage = attemptUsage(job, completion.usage, false);
  return usage ? resultWithUsage(completion.result, usage.job) : completion.result;
}

/** A failure reason clients can read: its type is one of the API's error types, or internal_error. */
function clientError(error: { type: string; detail: string }): JobError {
  const type = ErrorType.safeParse(error.type);
  const detail = error.detail.trim();
  return { type: type.success ? type.data : 'internal_error', detail: detail === '' ? 'The job failed.' : detail };
}

/** Counted once the final state has committed, by whoever wrote it (a runner or the reaper). */
export function countFinished(type: string, outcome: 'completed' | 'failed', seconds: number): void {
  jobsFinished.inc({ type, outcome });
  jobDuration.observe({ type, outcome }, seconds);
}

export interface AttemptRecorderOptions {
  pool: Pool;
  workerId: string;
  /** How long a retryable failure keeps the job before the reaper requests it again. */
  retryDelayMs: number;
  logger?: Logger;
}

/**
 * The CTE `counted`: the attempt's usage (`usage`, JSON of JobUsage's counters; null: the runner did not report any)
 * added to the account's row of today in usage_daily. A SELECT in a WITH runs only when the statement reads it, so
 * the statement ends with a LEFT JOIN on it.
 */
const USAGE_COUNTED = (from: string, usage: string, failed: string) =>
  `counted AS (SELECT usage_daily_add(r.tenant_id, r.type, ${usage}::jsonb, ${failed}) FROM ${from} r WHERE ${usage}::jsonb IS NOT NULL)`;

const PROGRESS_SQL = `WITH changed AS (
    UPDATE jobs SET status = 'running', progress = GREATEST(progress, $4::smallint), currently_working_on = $5::text,
           event_seq = $6, started_at = COALESCE(started_at, now()), updated_at = now()
     WHERE id = $1::uuid AND lease_owner = $2 AND attempts = $3 AND status IN ('pending', 'running') AND event_seq < $6
     RETURNING id)
  ${outboxInsertFrom('changed', 7)}`;

// The terminal commit: status, result or error, the lease released, the event, the cache entry, the attempt's usage
// in the account's day and the job's budget reservation settled, one statement committing by itself (one round
// trip). The lease is checked by the statement, after any row lock it waited for, so what it commits is the lease
// holder's own outcome even when its runner died meanwhile. The attempt's usage ($9) is added to the job's as the row has it
// (job_usage_add), not as the runner read it when it claimed the job: an attempt that lost its lease may have
// recorded its own since. The result's meta.usage and the event's usage and result are the job's usage so added.
const FINISHED_USAGE = `job_usage_add(usage, $9::jsonb, $4::text = 'failed')`;
const FINISH_SQL = `WITH finished AS (
    UPDATE jobs SET status = $4::text, progress = CASE WHEN $4::text = 'completed' THEN 100 ELSE progress END,
           currently_working_on = $5::text, error = $7::jsonb, event_seq = $8,
           result = CASE WHEN $9::jsonb IS NULL OR jsonb_typeof($6::jsonb -> 'meta') IS DISTINCT FROM 'object' THEN $6::jsonb
                         ELSE jsonb_set($6::jsonb, '{meta,usage}', ${FINISHED_USAGE}) END,
           started_at = COALESCE(started_at, now()), finished_at = now(), lease_owner = NULL, lease_expires_at = NULL,
           usage = CASE WHEN $9::jsonb IS NULL THEN usage ELSE ${FINISHED_USAGE} END,
           input_tokens = input_tokens + COALESCE(($9::jsonb ->> 'input_tokens')::int, 0),
           output_tokens = output_tokens + COALESCE(($9::jsonb ->> 'output_tokens')::int, 0), updated_at = now()
     WHERE id = $1::uuid AND lease_owner = $2 AND attempts = $3 AND status IN ('pending', 'running')
     RETURNING id, type, tenant_id, result, usage, EXTRACT(EPOCH FROM clock_timestamp() - created_at)::float8 AS age_seconds),
  event AS (${outboxInsertFrom(
    'finished',
    12,
    (envelope) => `CASE WHEN $9::jsonb IS NULL THEN ${envelope}::jsonb
                        WHEN finished.result IS NULL THEN jsonb_set(${envelope}::jsonb, '{payload,usage}', finished.usage)
                        ELSE jsonb_set(jsonb_set(${envelope}::jsonb, '{payload,usage}', finished.usage), '{payload,result}', finished.result) END`,
  )}),
  ${USAGE_COUNTED('finished', '$9', "$4::text = 'failed'")},
  settled AS (DELETE FROM token_reservations r USING finished f WHERE r.job_id = f.id),
  cached AS (
    INSERT INTO result_cache (cache_key, job_type, tenant_id, job_id, result, created_at, expires_at)
    SELECT $10::text, f.type, $11::uuid, f.id, f.result, now(), now() + interval '${RESULT_CACHE_TTL}'
      FROM finished f WHERE $10::text IS NOT NULL AND f.result IS NOT NULL
    ON CONFLICT (cache_key) DO UPDATE SET
      job_type = EXCLUDED.job_type, tenant_id = EXCLUDED.tenant_id, job_id = EXCLUDED.job_id,
      result = EXCLUDED.result, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at)
  SELECT f.age_seconds FROM finished f LEFT JOIN counted ON true`;

const RETRY_SQL = `WITH released AS (
    UPDATE jobs SET status = 'running', currently_working_on = $4::text, event_seq = $5,
           lease_owner = NULL, lease_expires_at = now() + $6 * interval '1 millisecond',
           usage = CASE WHEN $7::jsonb IS NULL THEN usage ELSE job_usage_add(usage, $7::jsonb, true) END,
           input_tokens = input_tokens + COALESCE(($7::jsonb ->> 'input_tokens')::int, 0),
           output_tokens = output_tokens + COALESCE(($7::jsonb ->> 'output_tokens')::int, 0), updated_at = now()
     WHERE id = $1::uuid AND lease_owner = $2 AND attempts = $3 AND status IN ('pending', 'running')
     RETURNING id, type, tenant_id),
  event AS (${outboxInsertFrom('released', 8)}),
  ${USAGE_COUNTED('released', '$7', 'true')}
  SELECT 1 FROM released LEFT JOIN counted ON true`;

// A runner stopping hands its job back at once (the reaper requests it for another runner); what the interrupted
// attempt had spent is a failed attempt's, in the job's usage and the account's day.
const HAND_BACK_SQL = `WITH released AS (
    UPDATE jobs SET lease_owner = NULL, lease_expires_at = now(), updated_at = now(),
           usage = CASE WHEN $4::jsonb IS NULL THEN usage ELSE job_usage_add(usage, $4::jsonb, true) END,
           input_tokens = input_tokens + COALESCE(($4::jsonb ->> 'input_tokens')::int, 0),
           output_tokens = output_tokens + COALESCE(($4::jsonb ->> 'output_tokens')::int, 0)
     WHERE id = $1::uuid AND lease_owner = $2 AND attempts = $3 AND status IN ('pending', 'running')
     RETURNING id, type, tenant_id),
  ${USAGE_COUNTED('released', '$4', 'true')}
  SELECT 1 FROM released LEFT JOIN counted ON true`;

// What an attempt spent after it lost its lease (another attempt owns the job, or the job has ended): the account's
// day counts it whatever became of the job, and the job's usage takes it while the job is unfinished (the attempt
// that finishes it adds its own to the row as it is then, so both stay). A job already finished keeps its result
// and usage as they were committed.
const LOST_ATTEMPT_SQL = `WITH job AS (SELECT id, type, tenant_id FROM jobs WHERE id = $1::uuid),
  added AS (
    UPDATE jobs SET usage = job_usage_add(usage, $2::jsonb, true),
           input_tokens = input_tokens + COALESCE(($2::jsonb ->> 'input_tokens')::int, 0),
           output_tokens = output_tokens + COALESCE(($2::jsonb ->> 'output_tokens')::int, 0)
     WHERE id = $1::uuid AND status IN ('pending', 'running')
     RETURNING id),
  ${USAGE_COUNTED('job', '$2', 'true')}
  SELECT (SELECT count(*) FROM added)::int AS added FROM job LEFT JOIN counted ON true`;

/**
 * Writes one attempt's state. Events are numbered seq = attempt × SEQ_PER_ATTEMPT + n: n stays inside the attempt's
 * range however long it runs (a progress step that would take the range's last number is not written, and the
 * last number is kept for the terminal event), so an attempt never numbers a write as if it were the next one's.
 * The row keeps the highest seq written (event_seq), and a write never lowers it. Progress never decreases.
 */
export function attemptRecorder({ pool, workerId, retryDelayMs, logger }: AttemptRecorderOptions, job: LeasedJob) {
  let n = job.eventsWritten ?? 0;
  let lastProgress = job.progress ?? 0;
  const last = SEQ_PER_ATTEMPT - 1;
  const lease = [job.id, workerId, job.attempt];
  const event = (fields: Omit<JobStateEventPayload, 'job_id' | 'job_type' | 'seq' | 'worker_id'>, number: number): JobStateEventPayload => {
    lastProgress = Math.max(lastProgress, fields.progress);
    return {
      ...fields,
      progress: lastProgress,
      job_id: job.id,
      job_type: job.type,
      seq: job.attempt * SEQ_PER_ATTEMPT + number,
      worker_id: workerId,
    };
  };
  const finalNumber = () => (n = Math.min(n + 1, last));

  async function finish(
    status: 'completed' | 'failed',
    fields: Omit<JobStateEventPayload, 'job_id' | 'job_type' | 'seq' | 'worker_id' | 'status'>,
    column: {
      result: string | null;
      error: JobError | null;
      /** The attempt's usage, and the job's over all attempts with it (absent: the runner reported none). */
      usage?: { attempt: Usage; job: JobUsage };
      cache?: { key: string; tenantId: string | null };
    },
  ): Promise<boolean> {
    const payload = event({ ...fields, status }, finalNumber());
    const { rows } = await pool.query<{ age_seconds: number }>({
      name: 'job-store-finish',
      text: FINISH_SQL,
      values: [
        ...lease,
        status,
        fields.currently_working_on ?? null,
        column.result,
        column.error === null ? null : JSON.stringify(column.error),
        payload.seq,
        column.usage ? JSON.stringify(usageCounts(column.usage.attempt)) : null,
        column.cache?.key ?? null,
        column.cache?.tenantId ?? null,
        ...outboxValues(payload),
      ],
    });
    const row = rows[0];
    if (row === undefined) return false;
    countFinished(job.type, status, row.age_seconds);
    return true;
  }

  return {
    /**
     * `running` with the step the runner is on. False when the step was not written: the lease is no longer this
     * runner's, or the attempt has used every number of its range.
     */
    async progress(percent: number, currentlyWorkingOn: string): Promise<{ written: boolean; numbersLeft: boolean }> {
      if (n + 1 >= last) return { written: false, numbersLeft: false };
      n += 1;
      const payload = event({ status: 'running', progress: percent, currently_working_on: currentlyWorkingOn }, n);
      const { rowCount } = await pool.query({
        name: 'job-store-progress',
        text: PROGRESS_SQL,
        values: [...lease, payload.progress, currentlyWorkingOn, payload.seq, ...outboxValues(payload)],
      });
      return { written: rowCount === 1, numbersLeft: true };
    },

    /** Keeps the lease for another `leaseMs`; false when it is no longer this runner's. */
    async renew(leaseMs: number): Promise<boolean> {
      const { rowCount } = await pool.query({
        name: 'job-store-renew',
        text: `UPDATE jobs SET lease_expires_at = now() + $4 * interval '1 millisecond'
                WHERE id = $1 AND lease_owner = $2 AND attempts = $3`,
        values: [...lease, leaseMs],
      });
      return rowCount === 1;
    },

    /** The result, committed with the lease release, the event and (by the tool-set rule) the cache entry. */
    complete(completion: Completion): Promise<boolean> {
      const usage = attemptUsage(job, completion.usage, false);
      const result = completedResult(job, completion);
      const cache = cacheEntryOf(job, completion.customerToolSet);
      if (!cache && job.cacheKey !== null) {
        logger?.info(
          { jobId: job.id, reported: completion.customerToolSet ?? 'not reported', expected: describeCacheKey(job.cacheKey).toolSet },
          'the run offered another customer tool set than its cache key was made for: its result is not cached',
        );
      }
      return finish(
        'completed',
        {
          progress: 100,
          currently_working_on: 'Completed',
          // Observers (an event stream, webhooks) get the result with the event, not by reading the job back.
          result,
          ...(completion.customerToolSet !== undefined ? { customer_tool_set: completion.customerToolSet } : {}),
          ...(usage ? { usage: usage.job } : {}),
        },
        {
          result: JSON.stringify(result),
          error: null,
          ...(usage ? { usage } : {}),
          ...(cache ? { cache } : {}),
        },
      );
    },

    /** Failed for good, with a reason a client may read. */
    fail(error: { type: string; detail: string }, spent?: Usage): Promise<boolean> {
      const readable = clientError(error);
      const usage = attemptUsage(job, spent, true);
      return finish(
        'failed',
        { progress: 0, currently_working_on: 'Failed', error: readable, ...(usage ? { usage: usage.job } : {}) },
        { result: null, error: readable, ...(usage ? { usage } : {}) },
      );
    },

    /** A retryable failure: the lease is kept `retryDelayMs` with nobody holding it, then the reaper requests the job again. */
    async retryLater(currentlyWorkingOn: string, spent?: Usage): Promise<boolean> {
      const payload = event({ status: 'running', progress: 0, currently_working_on: currentlyWorkingOn }, finalNumber());
      const usage = attemptUsage(job, spent, true);
      const { rowCount } = await withTransaction(pool, (client) =>
        client.query({
          name: 'job-store-retry',
          text: RETRY_SQL,
          values: [
            ...lease,
            currentlyWorkingOn,
            payload.seq,
            retryDelayMs,
            usage ? JSON.stringify(usageCounts(usage.attempt)) : null,
            ...outboxValues(payload),
          ],
        }),
      );
      return rowCount === 1;
    },

    /**
     * Gives the job back at once (this runner is stopping): the reaper requests it for another runner. `spent`, what
     * the interrupted attempt had cost, is recorded as a failed attempt's.
     */
    async handBack(spent?: Usage): Promise<boolean> {
      const { rowCount } = await pool.query({
        name: 'job-store-hand-back',
        text: HAND_BACK_SQL,
        values: [...lease, spent ? JSON.stringify(usageCounts(spent)) : null],
      });
      return rowCount === 1;
    },

    /**
     * Records what this attempt spent after it lost its lease (its result, if any, was discarded): in the account's
     * day, and in the job's usage as a failed attempt's while the job is unfinished. True when the job took it.
     */
    async lostLease(spent: Usage): Promise<boolean> {
      const { rows } = await pool.query<{ added: number }>({
        name: 'job-store-lost-attempt',
        text: LOST_ATTEMPT_SQL,
        values: [job.id, JSON.stringify(usageCounts(spent))],
      });
      return rows[0]?.added === 1;
    },
  };
}
