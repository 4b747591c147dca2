import { createHash, randomUUID } from 'node:crypto';
import { withTransaction, type Pool, type PoolClient, type Queryable } from '@fin/db';
import { appendToOutbox, jobRequestTopics, type JobType } from '@fin/events';
import { AppError } from '@fin/http';
import { jobSubmissions } from '@fin/metrics';
import { FIN_ATTRIBUTES, setSpanAttributes } from '@fin/tracing';
import { canonicalJson, withToolSet, type CacheKeys } from './cache-key';

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

/** What the cache holds for a request, and the key a new job for it is filed under. */
interface CacheLookup {
  /** The key a fresh run of this request fills (and identical jobs in flight share). */
  jobKey: string;
  /** A hit, already served under a job of the caller's own. */
  hit?: CachedOutcome;
}

/** One row whatever is found: the hit's columns are all null on a miss. */
interface LookupRow {
  tool_set: string | null;
  source_job: string | null;
  result: string | null;
  created_at: Date | null;
  expires_at: Date | null;
  job_id: string | null;
}

/**
 * Finds the key of a request and, unless `bypass`, its freshest cached result, and serves a hit, in one statement.
 * The tenant's customer tool set for the product decides the key: with tools, only the tenant's entry for exactly
 * that set; without, a shared entry or the tenant's own (the newer wins). A hit is answered with a job of the
 * caller's own, so the job id it returns is pollable by this tenant only: the tenant's earlier job for the entry
 * is reused, or (the first hit of a tenant) a completed job is created from it by the statement's INSERT, with no
 * event (there is no transition to report).
 */
async function lookUp(db: Queryable, params: SubmitParams, keys: CacheKeys, bypass: boolean): Promise<CacheLookup> {
  const { rows } = await db.query<LookupRow>({
    // Prepared once per connection: this is the hot path of every cache hit.
    name: 'job-store-cache-lookup',
    text: `WITH offered AS (SELECT customer_tool_set_digest($1::uuid, $2::text) AS tool_set),
      hit AS (
        SELECT c.job_id AS source_job, c.result, c.created_at, c.expires_at, c.cache_key AS hit_key
          FROM offered o, result_cache c
         WHERE NOT $6::boolean
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
        RETURNING id)
      SELECT o.tool_set, hit.source_job, CASE WHEN hit.source_job = $8::uuid THEN NULL ELSE hit.result::text END AS result,
             hit.created_at, hit.expires_at,
             COALESCE((SELECT id FROM own), (SELECT id FROM served)) AS job_id
        FROM offered o LEFT JOIN hit ON true`,
    values: [
      params.tenantId,
      params.jobType,
      keys.shared ?? null,
      keys.own,
      withToolSet(keys.own, ''),
      bypass,
      JSON.stringify(params.request),
      params.heldResult ?? null,
    ],
  });
  const row = rows[0];
  if (row === undefined) throw new Error('the cache lookup returned no row');
  const toolSet = row.tool_set;
  const jobKey = toolSet !== null ? withToolSet(keys.own, toolSet) : bypass || keys.shared === undefined ? keys.own : keys.shared;
  const { source_job, result, created_at, expires_at, job_id } = row;
  if (source_job === null || created_at === null || expires_at === null || job_id === null) return { jobKey };
  const hit: CachedOutcome = { kind: 'cached', jobId: job_id, sourceJobId: source_job, producedAt: created_at, expiresAt: expires_at };
  if (result !== null) hit.resultJson = result;
  else if (source_job !== params.heldResult) throw new Error('the cache lookup returned a hit without its result');
  return { jobKey, hit };
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

/** `missed`: the lookup the caller just made (and missed) outside the transaction, so the first round skips it. */
async function createOrJoin(client: PoolClient, params: SubmitParams, missed?: CacheLookup): Promise<SubmitOutcome> {
  const bypass = params.bypassCache === true;
  for (let tries = 0; tries < 3; tries++) {
    let cacheKey: string | undefined;
    if (params.cacheKeys) {
      const found = tries === 0 && missed ? missed : await lookUp(client, params, params.cacheKeys, bypass);
      if (found.hit) return found.hit;
      cacheKey = found.jobKey;
      // An identical job of this tenant in flight is shared. FOR SHARE waits for a concurrent completion of that
      // job to commit (its status and its cache entry commit together), so the job is either still running
      // here, or finished and found in the cache just below: never missed by both.
      const { rows } = await client.query<{ id: string; status: JobOutcome['status'] }>(
        `SELECT id, status FROM jobs WHERE tenant_id = $1 AND cache_key = $2 AND status IN ('pending', 'running') FOR SHARE`,
        [params.tenantId, cacheKey],
      );
      if (rows[0]) return { kind: 'joined', jobId: rows[0].id, status: rows[0].status };
      if (!bypass) {
        const finished = await lookUp(client, params, params.cacheKeys, false);
        if (finished.hit) return finished.hit;
      }
    }
    const jobId = randomUUID();
    const claimed = params.claimedBy;
    const inserted = await client.query(
      `INSERT INTO jobs (id, tenant_id, type, status, request, cache_key, max_attempts, currently_working_on,
                         lease_owner, lease_expires_at, attempts)
       VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $8::text, now() + $9::int * interval '1 millisecond', $10)
       ON CONFLICT (tenant_id, cache_key) WHERE status IN ('pending', 'running') DO NOTHING`,
      [
        jobId,
        params.tenantId,
        params.jobType,
        JSON.stringify(params.request),
        cacheKey ?? null,
        params.maxAttempts ?? 3,
        claimed ? 'Starting' : 'Waiting for a worker',
        claimed?.workerId ?? null,
        claimed?.leaseMs ?? null,
        claimed ? 1 : 0,
      ],
    );
    if (inserted.rowCount === 1 && claimed) return { kind: 'created', jobId, status: 'pending' };
    if (inserted.rowCount === 1) {
      // The request itself stays in the job row, where the worker reads it when it claims the job: the event
      // only says which job to run, so no request body (custom data included) travels through Kafka.
      await appendToOutbox(client, jobRequestTopics[params.jobType], jobId, {
        job_id: jobId,
        job_type: params.jobType,
        tenant_id: params.tenantId,
        attempt: 1,
      });
      return { kind: 'created', jobId, status: 'pending' };
    }
    // Another request created the identical job a moment ago: join it on the next round.
  }
  throw new Error('Could not create or join a job for this request');
}

/**
 * A product request → its job. In order: an Idempotency-Key seen before returns its job (or 422 for a different
 * body); a cache hit returns the cached result under a job of the caller's own; an identical job of the tenant in
 * flight is shared; otherwise a `pending` job row and its `job.requested` event are written in one transaction.
 */
export async function submitJob(pool: Pool, params: SubmitParams): Promise<SubmitOutcome> {
  const outcome = await submit(pool, params);
  // After the commit: what the metric counts has happened (cache hit ratio, coalescing, replays).
  jobSubmissions.inc({ type: params.jobType, result: outcome.kind });
  // The request's span (when traces are exported) names the job it made, joined or answered from the cache.
  setSpanAttributes({
    [FIN_ATTRIBUTES.jobId]: outcome.jobId,
    [FIN_ATTRIBUTES.jobType]: params.jobType,
    [FIN_ATTRIBUTES.tenantId]: params.tenantId,
    'fin.job.submission': outcome.kind,
  });
  return outcome;
}

async function submit(pool: Pool, params: SubmitParams): Promise<SubmitOutcome> {
  let missed: CacheLookup | undefined;
  if (params.cacheKeys && !params.bypassCache && !params.idempotencyKey) {
    // The common case, a hit, takes one statement outside any transaction.
    const found = await lookUp(pool, params, params.cacheKeys, false);
    if (found.hit) return found.hit;
    missed = found;
  }
  return withTransaction(pool, async (client) => {
    if (params.idempotencyKey) {
      const replayed = await replay(client, params, params.idempotencyKey);
      if (replayed) return replayed;
    }
    // Everything from here runs on the transaction's connection: the idempotency key, the job it names and a job
    // created from a cache hit commit together, and a request holds one connection, not two.
    const outcome = await createOrJoin(client, params, missed);
    if (params.idempotencyKey) {
      await client.query('INSERT INTO idempotency_keys (tenant_id, key, request_hash, job_id) VALUES ($1, $2, $3, $4)', [
        params.tenantId,
        params.idempotencyKey,
        requestHash(params.jobType, params.request),
        outcome.jobId,
      ]);
    }
    return outcome;
  });
}
