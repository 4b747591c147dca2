import { createHash, randomUUID } from 'node:crypto';
import { withTransaction, type Pool, type PoolClient, type Queryable } from '@fin/db';
import { appendToOutbox, jobRequestTopics, type JobType } from '@fin/events';
import { AppError } from '@fin/http';
import { jobSubmissions } from '@fin/metrics';
import { canonicalJson } from './cache-key';

export interface SubmitParams {
  tenantId: string;
  jobType: JobType;
  /** The validated product request, as the worker will receive it. */
  request: Record<string, unknown>;
  /** Result-cache key; undefined for products whose results are not cached. */
  cacheKey?: string;
  /** `Cache-Control: no-cache`: do not answer from the cache (a fresh run still refreshes it). */
  bypassCache?: boolean;
  idempotencyKey?: string;
  maxAttempts?: number;
  /**
   * The caller runs the job itself (inline.ts): a new job is created already claimed by `workerId` for its first
   * attempt, and no job.requested event is written, so no worker ever picks it up.
   */
  claimedBy?: { workerId: string; leaseMs: number };
}

export interface CachedOutcome {
  kind: 'cached';
  jobId: string;
  result: Record<string, unknown>;
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

interface CacheRow {
  source_job: string;
  result: Record<string, unknown>;
  created_at: Date;
  expires_at: Date;
  own_job: string | null;
}

/**
 * Looks the request up in the 7-day cache: a shared entry, or one of this tenant's. A hit is answered with a job of
 * the caller's own, so the job id it returns is pollable by this tenant only: the tenant's earlier job for the key
 * is reused, or a completed job is created from the cache entry.
 */
async function fromCache(db: Queryable, params: SubmitParams, cacheKey: string): Promise<CachedOutcome | undefined> {
  const { rows } = await db.query<CacheRow>({
    // Prepared once per connection: this is the hot path of every cache hit.
    name: 'job-kit-cache-lookup',
    text: `SELECT c.job_id AS source_job, c.result, c.created_at, c.expires_at, own.id AS own_job
       FROM result_cache c
       LEFT JOIN LATERAL (
         SELECT id FROM jobs WHERE tenant_id = $2 AND cache_key = $1 AND status = 'completed' AND finished_at >= c.created_at
         ORDER BY finished_at DESC LIMIT 1) own ON true
      WHERE c.cache_key = $1 AND c.expires_at > now() AND (c.tenant_id IS NULL OR c.tenant_id = $2)`,
    values: [cacheKey, params.tenantId],
  });
  const hit = rows[0];
  if (!hit) return undefined;
  let jobId = hit.own_job;
  if (!jobId) {
    jobId = randomUUID();
    // Created already completed: there is no transition to report, so no event; the result is the cache's.
    await db.query(
      `INSERT INTO jobs (id, tenant_id, type, status, progress, currently_working_on, request, result, cache_key,
                         cached_from, attempts, started_at, finished_at)
       VALUES ($1, $2, $3, 'completed', 100, 'Served from the cache', $4, $5, $6, $7, 0, now(), now())`,
      [jobId, params.tenantId, params.jobType, JSON.stringify(params.request), JSON.stringify(hit.result), cacheKey, hit.source_job],
    );
  }
  return { kind: 'cached', jobId, result: hit.result, sourceJobId: hit.source_job, producedAt: hit.created_at, expiresAt: hit.expires_at };
}

function requestHash(jobType: string, request: Record<string, unknown>): Buffer {
  return createHash('sha256').update(`${jobType}\n${canonicalJson(request)}`).digest();
}

async function replay(client: PoolClient, params: SubmitParams, key: string): Promise<JobOutcome | undefined> {
  // Serialises submissions with the same key, so two concurrent first uses cannot both create a job.
  await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1 || E\'\\n\' || $2, 0))', [params.tenantId, key]);
  const { rows } = await client.query<{ request_hash: Buffer; job_id: string; status: JobOutcome['status']; result: Record<string, unknown> | null }>(
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

async function createOrJoin(client: PoolClient, params: SubmitParams): Promise<SubmitOutcome> {
  for (let tries = 0; tries < 3; tries++) {
    if (params.cacheKey) {
      // An identical job of this tenant in flight is shared. FOR SHARE waits for a concurrent completion of that
      // job to commit (its status and its cache entry commit together), so the job is either still running
      // here, or finished and found in the cache just below: never missed by both.
      const { rows } = await client.query<{ id: string; status: JobOutcome['status'] }>(
        `SELECT id, status FROM jobs WHERE tenant_id = $1 AND cache_key = $2 AND status IN ('pending', 'running') FOR SHARE`,
        [params.tenantId, params.cacheKey],
      );
      if (rows[0]) return { kind: 'joined', jobId: rows[0].id, status: rows[0].status };
      if (!params.bypassCache) {
        const cached = await fromCache(client, params, params.cacheKey);
        if (cached) return cached;
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
        params.cacheKey ?? null,
        params.maxAttempts ?? 3,
        claimed ? 'Starting' : 'Waiting for a worker',
        claimed?.workerId ?? null,
        claimed?.leaseMs ?? null,
        claimed ? 1 : 0,
      ],
    );
    if (inserted.rowCount === 1 && claimed) return { kind: 'created', jobId, status: 'pending' };
    if (inserted.rowCount === 1) {
      await appendToOutbox(client, jobRequestTopics[params.jobType], jobId, {
        job_id: jobId,
        job_type: params.jobType,
        tenant_id: params.tenantId,
        request: params.request,
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
  return outcome;
}

async function submit(pool: Pool, params: SubmitParams): Promise<SubmitOutcome> {
  if (params.cacheKey && !params.bypassCache && !params.idempotencyKey) {
    const cached = await fromCache(pool, params, params.cacheKey);
    if (cached) return cached;
  }
  return withTransaction(pool, async (client) => {
    if (params.idempotencyKey) {
      const replayed = await replay(client, params, params.idempotencyKey);
      if (replayed) return replayed;
    }
    let outcome: SubmitOutcome | undefined;
    if (params.cacheKey && !params.bypassCache && params.idempotencyKey) outcome = await fromCache(pool, params, params.cacheKey);
    outcome ??= await createOrJoin(client, params);
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
