// Applying job state events: the one place that writes a job's status, progress, step, result and error, and the
// result cache. Events arrive at least once and, across attempts, in any order; applying them is idempotent
// (processOnce on the envelope id) and monotonic (seq, status rank, GREATEST progress), so a duplicate or late
// event never moves a job backwards.
import { ErrorType, type JobError } from '@fin/contracts';
import { type Pool, type PoolClient } from '@fin/db';
import { SEQ_PER_ATTEMPT, type EnvelopeOf, type JobStateEventPayload, type JobStatus, type jobsEventsTopic, processOnce } from '@fin/events';
import { describeCacheKey } from '@fin/job-kit';
import { type Logger } from '@fin/log';
import { jobDuration, jobsFinished } from '@fin/metrics';

/** The consumer name under which applied events are recorded (processed_events) and the Kafka group id. */
export const JOBS_CONSUMER = 'jobs-service';

export type JobEventEnvelope = EnvelopeOf<typeof jobsEventsTopic>;

function attemptOfSeq(seq: number): number {
  return Math.floor(seq / SEQ_PER_ATTEMPT);
}

/** How long a completed result is served from the cache. */
const RESULT_CACHE_TTL = '7 days';

/** What became of one event. Everything but `applied` left the job as it was. */
export type ApplyOutcome =
  /** The job row changed. */
  | 'applied'
  /** This envelope was processed before (a redelivery). */
  | 'duplicate'
  /** No job has this id. */
  | 'unknown_job'
  /** The event names another job type than the job's. */
  | 'wrong_job_type'
  /** The job is completed or failed; nothing changes it any more. */
  | 'job_finished'
  /** An event with this or a higher seq was applied already (a late event). */
  | 'superseded'
  /** From an attempt older than the job's current one: its worker lost the lease. */
  | 'stale_attempt'
  /** A `pending` event for a job that is already running. */
  | 'status_regression';

const STATUS_RANK: Record<JobStatus, number> = { pending: 0, running: 1, completed: 2, failed: 2 };

interface JobRow {
  type: string;
  status: JobStatus;
  event_seq: number;
  attempts: number;
  tenant_id: string;
  cache_key: string | null;
  age_seconds: number;
}

/** The job fields an event sets; null means "clear" for result/error. */
interface Change {
  status: JobStatus;
  progress: number;
  text: string | null;
  result: Record<string, unknown> | null;
  error: JobError | null;
}

/** A failure reason clients can read: its type is one of the API's error types, or internal_error. */
function clientError(error: { type: string; detail: string }): JobError {
  const type = ErrorType.safeParse(error.type);
  const detail = error.detail.trim();
  return { type: type.success ? type.data : 'internal_error', detail: detail === '' ? 'The job failed.' : detail };
}

function changeOf(event: JobStateEventPayload, logger: Logger | undefined): Change {
  const text = event.currently_working_on?.trim() || null;
  if (event.status === 'completed' && event.result === undefined) {
    // A worker bug. Leaving the job running would strand it (its worker released the lease), so it fails.
    logger?.error({ jobId: event.job_id, seq: event.seq }, 'completed job event without a result: the job is marked failed');
    return {
      status: 'failed',
      progress: event.progress,
      text: null,
      result: null,
      error: { type: 'internal_error', detail: 'The job finished without producing a result.' },
    };
  }
  switch (event.status) {
    case 'completed':
      return { status: 'completed', progress: 100, text, result: event.result ?? null, error: null };
    case 'failed':
      return {
        status: 'failed',
        progress: event.progress,
        text,
        result: null,
        error: clientError(event.error ?? { type: 'internal_error', detail: '' }),
      };
    default:
      return { status: event.status, progress: event.progress, text, result: null, error: null };
  }
}

/**
 * Where a completed job's result is cached, if anywhere. The key was chosen when the job was submitted, for the
 * customer tool set the tenant had then; the worker reports the set it actually offered. Only when the two agree
 * is the result cached under that key: a tool added, changed or removed in between would otherwise file a result
 * under a key that does not describe it (in the worst case, a shared key for a result that saw the tenant's tools).
 * The entry belongs to the tenant when the key does (custom data, a tool set, or a no-cache refresh).
 */
function cacheEntryOf(job: JobRow, event: JobStateEventPayload, logger: Logger | undefined): { key: string; tenantId: string | null } | undefined {
  if (job.cache_key === null) return undefined;
  const key = describeCacheKey(job.cache_key);
  if (event.customer_tool_set === undefined || event.customer_tool_set !== key.toolSet) {
    logger?.info(
      { jobId: event.job_id, reported: event.customer_tool_set ?? 'not reported', expected: key.toolSet },
      'the run offered another customer tool set than its cache key was made for: its result is not cached',
    );
    return undefined;
  }
  return { key: job.cache_key, tenantId: key.tenantScoped ? job.tenant_id : null };
}

/** Why `event` must not change `job`, or undefined when it may. */
function rejection(job: JobRow, event: JobStateEventPayload): ApplyOutcome | undefined {
  if (job.type !== event.job_type) return 'wrong_job_type';
  if (job.status === 'completed' || job.status === 'failed') return 'job_finished';
  // A worker only holds the lease (and so may only report) for the attempt it claimed; once another worker
  // claimed the job, `attempts` moved on and everything the older attempt still sends is stale, above all a
  // completion that would race the current attempt's result.
  if (attemptOfSeq(event.seq) < job.attempts) return 'stale_attempt';
  if (event.seq <= job.event_seq) return 'superseded';
  if (STATUS_RANK[event.status] < STATUS_RANK[job.status]) return 'status_regression';
  return undefined;
}

/** A job that reached its final state in this transaction, for the metrics once it commits. */
interface Finished {
  type: string;
  outcome: 'completed' | 'failed';
  seconds: number;
}

async function apply(client: PoolClient, event: JobStateEventPayload, logger: Logger | undefined, finished: (job: Finished) => void): Promise<ApplyOutcome> {
  // The row lock serialises events of one job that reach different consumers (e.g. during a rebalance).
  const { rows } = await client.query<JobRow>(
    `SELECT type, status, event_seq, attempts, tenant_id::text AS tenant_id, cache_key,
            EXTRACT(EPOCH FROM clock_timestamp() - created_at)::float8 AS age_seconds
     FROM jobs WHERE id = $1 FOR UPDATE`,
    [event.job_id],
  );
  const job = rows[0];
  if (job === undefined) return 'unknown_job';
  const rejected = rejection(job, event);
  if (rejected !== undefined) return rejected;

  const change = changeOf(event, logger);
  const terminal = change.status === 'completed' || change.status === 'failed';
  // Tokens are reported once per attempt, on its terminal event.
  const usage = terminal ? event.usage : undefined;
  await client.query(
    `UPDATE jobs SET
       status = $2::text,
       progress = GREATEST(progress, $3::smallint),
       currently_working_on = CASE WHEN $4::boolean THEN $5::text ELSE COALESCE($5::text, currently_working_on) END,
       result = $6::jsonb,
       error = $7::jsonb,
       event_seq = $8,
       started_at = CASE WHEN $2::text = 'pending' THEN started_at ELSE COALESCE(started_at, now()) END,
       finished_at = CASE WHEN $4::boolean THEN now() ELSE finished_at END,
       input_tokens = input_tokens + $9,
       output_tokens = output_tokens + $10,
       updated_at = now()
     WHERE id = $1`,
    [
      event.job_id,
      change.status,
      change.progress,
      terminal,
      change.text,
      change.result === null ? null : JSON.stringify(change.result),
      change.error === null ? null : JSON.stringify(change.error),
      event.seq,
      usage?.input_tokens ?? 0,
      usage?.output_tokens ?? 0,
    ],
  );

  const cache = change.status === 'completed' ? cacheEntryOf(job, event, logger) : undefined;
  if (cache) {
    await client.query(
      `INSERT INTO result_cache (cache_key, job_type, tenant_id, job_id, result, created_at, expires_at)
       VALUES ($1, $2, $3::uuid, $4, $5::jsonb, now(), now() + $6::interval)
       ON CONFLICT (cache_key) DO UPDATE SET
         job_type = EXCLUDED.job_type, tenant_id = EXCLUDED.tenant_id, job_id = EXCLUDED.job_id,
         result = EXCLUDED.result, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at`,
      [cache.key, job.type, cache.tenantId, event.job_id, JSON.stringify(change.result), RESULT_CACHE_TTL],
    );
  }
  if (change.status === 'completed' || change.status === 'failed') finished({ type: job.type, outcome: change.status, seconds: job.age_seconds });
  return 'applied';
}

export interface ApplyOptions {
  logger?: Logger;
}

/**
 * Applies one job state event, exactly once per envelope id: the processed mark, the job update and the cache
 * write commit together. Given a pool it runs its own transaction; given a client, that client must be inside
 * the caller's transaction. Returns what became of the event; only database errors throw.
 *
 * Rules: an event applies only while the job is pending or running, when its seq is above the last applied one
 * and its attempt (seq / 1000) is not older than the job's `attempts`. Progress never decreases, status never
 * goes backwards, `started_at` is set by the first running event and `finished_at` by the terminal one. A
 * completed job with a cache key fills the result cache for 7 days.
 */
export async function applyJobEvent(db: Pool | PoolClient, envelope: JobEventEnvelope, { logger }: ApplyOptions = {}): Promise<ApplyOutcome> {
  const event = envelope.payload;
  const final: { job?: Finished } = {};
  const processed = await processOnce(db, JOBS_CONSUMER, envelope.id, (client) => apply(client, event, logger, (job) => (final.job = job)));
  const outcome = processed.status === 'duplicate' ? 'duplicate' : processed.result;
  // Counted once, after the commit: this service is the one writer of job state, so every final state passes here.
  if (outcome === 'applied' && final.job) {
    const { type, outcome: result, seconds } = final.job;
    jobsFinished.inc({ type, outcome: result });
    jobDuration.observe({ type, outcome: result }, seconds);
  }
  const fields = { jobId: event.job_id, seq: event.seq, status: event.status, eventId: envelope.id, outcome };
  if (outcome === 'applied') logger?.debug(fields, 'applied job event');
  else if (outcome === 'unknown_job' || outcome === 'wrong_job_type') logger?.warn(fields, 'ignored a job event that matches no job');
  else logger?.debug(fields, 'ignored a job event');
  return outcome;
}
