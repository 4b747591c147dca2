import { createHash, randomUUID } from 'node:crypto';
import { withTransaction, type Pool, type PoolClient, type Queryable } from '@fin/db';
import { jobRequestTopics, withOutboxRow, type JobType, type PreparedOutboxRow } from '@fin/events';
import { AppError } from '@fin/http';
import { jobSubmissions } from '@fin/metrics';
import { FIN_ATTRIBUTES, setSpanAttributes } from '@fin/tracing';
import { canonicalJson, withToolSet, type CacheKeys } from './cache-key';
import { outboxInsertFrom } from './events';

export interface SubmitParams {
  tenantId: string;
  jobType: JobType;
  /** The validated product request, as the worker will receive it. */
  request: Record<string, unknown>;
  /** The request's result-cache keys (cacheKeysFor); undefined for products whose results are not cached. */
  cacheKeys?: CacheKeys;
  /** `Cache-Control: no-cache`: do not answer from the cache; the fresh run refreshes the caller's own entry. */
  bypassCache?: boolean;
  idempotencyKey?: string;
  maxAttempts?: number;
  /**
   * The source job of a cached result the caller already holds (a completed job's result never changes): a hit on
   * it comes without `resultJson`, so the database neither converts the stored result to text nor sends it.
   */
  heldResult?: string;
  /**
   * The caller runs the job itself (inline.ts): a new job is created already claimed by `workerId` for its first
   * attempt, and no job.requested event is written, so no worker ever picks it up.
   */
  claimedBy?: { workerId: string; leaseMs: number };
  /**
   * The caller may start no new work (its account's daily token budget is spent): a request that a cache hit, an
   * identical job in flight or a replayed Idempotency-Key answers is answered as usual, since it spends nothing;
   * one that would need a new job gets this error thrown instead, and nothing is written.
   */
  newWorkRefusal?: AppError;
}

export interface CachedOutcome {
  kind: 'cached';
  jobId: string;
  /**
   * The cached result as the database serialises it (jsonb text): a hit is answered without parsing it, from the
   * response already built for its source job (see the product API's cachedResponder). Absent when the source job
   * is the caller's `heldResult`.
   */
  resultJson?: string;
  /** The job that produced the cached result: the result's identity (a completed job's result never changes). */
  sourceJobId: string;
  /** When the cached result was produced (for the Age header). */
  producedAt: Date;
  expiresAt: Date;
  /**
   * How long the entry had left when the statement ran, by the database's clock: a copy kept in memory from the
   * moment the request was sent for this long never outlives the entry, however the process's clock differs.
   */
  ttlMs: number;
}

export interface JobOutcome {
  /** created: a new job; joined: an identical job of this tenant was already running; replayed: same Idempotency-Key. */
  kind: 'created' | 'joined' | 'replayed';
  jobId: string;
  status: 'pending' | 'running' | 'completed' | 'failed';
  /** Present when a replayed job has completed. */
  result?: Record<string, unknown>;
}

export type SubmitOutcome = CachedOutcome | JobOutcome;

/** One row whatever happened: the columns of the outcomes that did not happen are null. */
interface SubmitRow {
  /** A cache hit, served under a job of the caller's own (`job_id`). */
  source_job: string | null;
  result: string | null;
  created_at: Date | null;
  expires_at: Date | null;
  ttl_ms: number | null;
  job_id: string | null;
  /** An identical job of this tenant in flight, joined. */
  joined_id: string | null;
  joined_status: 'pending' | 'running' | null;
  /** The job this statement created. */
  created_id: string | null;
}

/**
 * The submission of a request without an Idempotency-Key, in one statement (its own transaction): the request's
 * cache key (the tenant's customer tool set for the product decides it: with tools, only the tenant's entry for
 * exactly that set; without, a shared entry or the tenant's own, the newer wins), its freshest cached result unless
 * `bypass`, an identical job of the tenant in flight, or else (when `$17`, create, allows it) a new `pending` job
 * and its job.requested event. The event is built only for a miss: submitOnce runs the statement first without one
 * and creating nothing, and again with it when that found nothing.
 *
 * - A hit is answered with a job of the caller's own, so the job id it returns is pollable by this tenant only: the
 *   tenant's earlier job for the entry is reused, or (the first hit of a tenant) a completed job is created from it
 *   by `served`, with no event (there is no transition to report).
 * - The statement reads one snapshot, in which a job's completion and its cache entry (one transaction) are both
 *   visible or neither is: an identical job is therefore either found in flight (and joined) or its result is found
 *   in the cache, never missed by both.
 * - Two identical requests at once: the second's INSERT waits for the first's commit and then does nothing (the
 *   partial unique index on in-flight jobs); the statement returns no outcome and the caller runs it again, which
 *   then joins the first's job.
 * - The job row and its event commit together. The request itself stays in the job row, where the worker reads it
 *   when it claims the job: the event only says which job to run, so no request body (custom data included)
 *   travels through Kafka. A job created already claimed (inline.ts) gets no event, so no worker picks it up.
 *
 * Without cache keys (a product whose results are not cached) only the INSERTs run.
 */
function submitStatement(withEvent: boolean): { name: string; text: string } {
  return {
    // Prepared once per connection: a lookup, a claimed job or a miss's second run.
    name: withEvent ? 'job-store-submit' : 'job-store-submit-claimed',
    text: `WITH offered AS (SELECT CASE WHEN $9::boolean THEN customer_tool_set_digest($1::uuid, $2::text) END AS tool_set),
      job_key AS (
        SELECT CASE WHEN NOT $9::boolean THEN NULL WHEN o.tool_set IS NOT NULL THEN $5::text || o.tool_set ELSE $10::text END AS key
          FROM offered o),
      hit AS (
        SELECT c.job_id AS source_job, c.result, c.created_at, c.expires_at, c.cache_key AS hit_key
          FROM offered o, result_cache c
         WHERE $9::boolean AND NOT $6::boolean
           AND c.cache_key = ANY (CASE WHEN o.tool_set IS NULL THEN ARRAY[$3::text, $4::text] ELSE ARRAY[$5::text || o.tool_set] END)
           AND c.expires_at > now() AND (c.tenant_id IS NULL OR c.tenant_id = $1::uuid)
         ORDER BY c.created_at DESC LIMIT 1),
      own AS (
        SELECT j.id FROM hit, jobs j
         WHERE j.tenant_id = $1::uuid AND j.cache_key = hit.hit_key AND j.status = 'completed' AND j.finished_at >= hit.created_at
         ORDER BY j.finished_at DESC LIMIT 1),
      served AS (
        INSERT INTO jobs (id, tenant_id, type, status, progress, currently_working_on, request, result, cache_key,
                          cached_from, attempts, started_at, finished_at)
        SELECT gen_random_uuid(), $1::uuid, $2::text, 'completed', 100, 'Served from the cache', $7::jsonb, hit.result,
               hit.hit_key, hit.source_job, 0, now(), now()
          FROM hit WHERE NOT EXISTS (SELECT 1 FROM own)
        RETURNING id),
      in_flight AS (
        SELECT j.id, j.status FROM job_key k, jobs j
         WHERE NOT EXISTS (SELECT 1 FROM hit)
           AND j.tenant_id = $1::uuid AND j.cache_key = k.key AND j.status IN ('pending', 'running')
         LIMIT 1),
      created AS (
        INSERT INTO jobs (id, tenant_id, type, status, request, cache_key, max_attempts, currently_working_on,
                          lease_owner, lease_expires_at, attempts)
        SELECT $11::uuid, $1::uuid, $2::text, 'pending', $7::jsonb, k.key, $12::int, $13::text,
               $14::text, now() + $15::int * interval '1 millisecond', $16::int
          FROM job_key k
         WHERE $17::boolean AND NOT EXISTS (SELECT 1 FROM hit) AND NOT EXISTS (SELECT 1 FROM in_flight)
        ON CONFLICT (tenant_id, cache_key) WHERE status IN ('pending', 'running') DO NOTHING
        RETURNING id)${
          withEvent
            ? `,
      requested AS (${outboxInsertFrom('created', 18)})`
            : ''
        }
      SELECT hit.source_job, CASE WHEN hit.source_job = $8::uuid THEN NULL ELSE hit.result::text END AS result,
             hit.created_at, hit.expires_at, (EXTRACT(EPOCH FROM hit.expires_at - now()) * 1000)::float8 AS ttl_ms,
             COALESCE((SELECT id FROM own), (SELECT id FROM served)) AS job_id,
             (SELECT id FROM in_flight) AS joined_id, (SELECT status FROM in_flight) AS joined_status,
             (SELECT id FROM created) AS created_id
        FROM offered o LEFT JOIN hit ON true`,
  };
}

/** One try of the submission statement: its outcome, or undefined when an identical job was created meanwhile. */
async function submitOnce(db: Queryable, params: SubmitParams): Promise<SubmitOutcome | undefined> {
  const keys = params.cacheKeys;
  const bypass = params.bypassCache === true;
  const jobId = randomUUID();
  const claimed = params.claimedBy;
  const values: unknown[] = [
    params.tenantId,
    params.jobType,
    keys?.shared ?? null,
    keys?.own ?? null,
    keys ? withToolSet(keys.own, '') : null,
    bypass,
    JSON.stringify(params.request),
    params.heldResult ?? null,
    keys !== undefined,
    // The key without customer tools: a refresh (no-cache) or a request with data fills the tenant's own entry.
    keys ? (bypass || keys.shared === undefined ? keys.own : keys.shared) : null,
    jobId,
    params.maxAttempts ?? 3,
    claimed ? 'Starting' : 'Waiting for a worker',
    claimed?.workerId ?? null,
    claimed?.leaseMs ?? null,
    claimed ? 1 : 0,
  ];
  /** The statement; `create` lets it write a new job (with `event`, its job.requested row, unless the job is claimed). */
  const run = async (create: boolean, event?: PreparedOutboxRow) => {
    const statement = submitStatement(event !== undefined);
    const eventValues = event
      ? [event.topic, event.key, event.eventId, event.eventType, event.envelope, event.headers, event.lockClass]
      : [];
    const { rows } = await db.query<SubmitRow>({ ...statement, values: [...values, create, ...eventValues] });
    const row = rows[0];
    if (row === undefined) throw new Error('the submission statement returned no row');
    return row;
  };
  const refusal = params.newWorkRefusal;
  // A job created already claimed has no event: one statement, whatever it finds.
  if (claimed) {
    const outcome = outcomeOf(await run(refusal === undefined), params);
    if (outcome === undefined && refusal !== undefined) throw refusal;
    return outcome;
  }
  // A hit (or a job in flight joined) is answered by the statement without an event: only a miss builds the
  // job.requested event, and then runs the statement again with it, which looks the request up afresh in its own
  // snapshot (a result committed in between is served, not run again). Without cache keys nothing can be found.
  if (keys !== undefined) {
    const found = outcomeOf(await run(false), params);
    if (found !== undefined) return found;
  }
  if (refusal !== undefined) throw refusal;
  const row = await withOutboxRow(
    jobRequestTopics[params.jobType],
    jobId,
    { job_id: jobId, job_type: params.jobType, tenant_id: params.tenantId, attempt: 1 },
    (event) => run(true, event),
  );
  return outcomeOf(row, params);
}

/** What a row of the submission statement says happened, or undefined when nothing did (a miss not yet created). */
function outcomeOf(row: SubmitRow, params: SubmitParams): SubmitOutcome | undefined {
  const { source_job, result, created_at, expires_at, ttl_ms, job_id } = row;
  if (source_job !== null && created_at !== null && expires_at !== null && ttl_ms !== null && job_id !== null) {
    const hit: CachedOutcome = {
      kind: 'cached',
      jobId: job_id,
      sourceJobId: source_job,
      producedAt: created_at,
      expiresAt: expires_at,
      ttlMs: ttl_ms,
    };
    if (result !== null) hit.resultJson = result;
    else if (source_job !== params.heldResult) throw new Error('the submission returned a cache hit without its result');
    return hit;
  }
  if (row.joined_id !== null && row.joined_status !== null) return { kind: 'joined', jobId: row.joined_id, status: row.joined_status };
  if (row.created_id !== null) return { kind: 'created', jobId: row.created_id, status: 'pending' };
  return undefined;
}

/** The submission, tried again when an identical job was created meanwhile (the next try joins it). */
async function createOrJoin(db: Queryable, params: SubmitParams): Promise<SubmitOutcome> {
  for (let tries = 0; tries < 3; tries++) {
    const outcome = await submitOnce(db, params);
    if (outcome) return outcome;
  }
  throw new Error('Could not create or join a job for this request');
}

function requestHash(jobType: string, request: Record<string, unknown>): Buffer {
  return createHash('sha256')
    .update(`${jobType}\n${canonicalJson(request)}`)
    .digest();
}

async function replay(client: PoolClient, params: SubmitParams, key: string): Promise<JobOutcome | undefined> {
  // Serialises submissions with the same key, so two concurrent first uses cannot both create a job.
  await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1 || E'\\n' || $2, 0))", [params.tenantId, key]);
  const { rows } = await client.query<{
    request_hash: Buffer;
    job_id: string;
    status: JobOutcome['status'];
    result: Record<string, unknown> | null;
  }>(
    `SELECT k.request_hash, k.job_id, j.status, j.result
       FROM idempotency_keys k JOIN jobs j ON j.id = k.job_id
      WHERE k.tenant_id = $1 AND k.key = $2`,
    [params.tenantId, key],
  );
  const previous = rows[0];
  if (!previous) return undefined;
  if (!previous.request_hash.equals(requestHash(params.jobType, params.request))) {
    throw new AppError(
      'unprocessable_entity',
      'This Idempotency-Key was already used with a different request. Use a new key for a different request.',
    );
  }
  return {
    kind: 'replayed',
    jobId: previous.job_id,
    status: previous.status,
    ...(previous.status === 'completed' && previous.result ? { result: previous.result } : {}),
  };
}

/**
 * A product request → its job. In order: an Idempotency-Key seen before returns its job (or 422 for a different
 * body); a cache hit returns the cached result under a job of the caller's own; an identical job of the tenant in
 * flight is shared; otherwise a `pending` job row and its `job.requested` event are written in one transaction
 * (or, with `newWorkRefusal`, that error is thrown).
 */
export async function submitJob(pool: Pool, params: SubmitParams): Promise<SubmitOutcome> {
  const outcome = await submit(pool, params);
  // After the commit: what the metric counts has happened (cache hit ratio, coalescing, replays).
  recordSubmission(params.jobType, params.tenantId, outcome.kind, outcome.jobId);
  return outcome;
}

/**
 * A hit the product API answered from its copy in memory, without submitJob: counted and traced as a hit is, so the
 * cache hit ratio counts every hit.
 */
export function recordCachedAnswer(jobType: JobType, tenantId: string, jobId: string): void {
  recordSubmission(jobType, tenantId, 'cached', jobId);
}

function recordSubmission(jobType: JobType, tenantId: string, kind: SubmitOutcome['kind'], jobId: string): void {
  jobSubmissions.inc({ type: jobType, result: kind });
  // The request's span (when traces are exported) names the job it made, joined or answered from the cache.
  setSpanAttributes({
    [FIN_ATTRIBUTES.jobId]: jobId,
    [FIN_ATTRIBUTES.jobType]: jobType,
    [FIN_ATTRIBUTES.tenantId]: tenantId,
    'fin.job.submission': kind,
  });
}

async function submit(pool: Pool, params: SubmitParams): Promise<SubmitOutcome> {
  // The common case, a request without an Idempotency-Key, is one statement whatever its outcome.
  const key = params.idempotencyKey;
  if (key === undefined) return createOrJoin(pool, params);
  return withTransaction(pool, async (client) => {
    const replayed = await replay(client, params, key);
    if (replayed) return replayed;
    // Everything from here runs on the transaction's connection: the idempotency key, the job it names and a job
    // created from a cache hit commit together, and a request holds one connection, not two.
    const outcome = await createOrJoin(client, params);
    await client.query('INSERT INTO idempotency_keys (tenant_id, key, request_hash, job_id) VALUES ($1, $2, $3, $4)', [
      params.tenantId,
      key,
      requestHash(params.jobType, params.request),
      outcome.jobId,
    ]);
    return outcome;
  });
}
