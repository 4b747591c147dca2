// The order in which workers take jobs, fair between tenants: the next job of a type comes from the tenant with the
// least work of that type running (live leases, across every replica), its oldest claimable job first; ties go to
// the tenant whose oldest claimable job is older. A tenant at its cap of work running is passed over. One tenant's
// backlog thus delays another tenant's job by about one job's run (a slot has to free up), not by the backlog.
//
// A job is claimable exactly when claimAndStart's WHERE clause says so (pending, or running with no live lease, with
// attempts left), and the claim is claimAndStart's own statement, in the transaction that chose the job: the lease
// and its WHERE clause still guarantee that one runner holds a job at a time, whatever the order.
import type { JobType } from '@fin/events';
import { withTransaction, type Pool, type Queryable } from '@fin/db';
import { claimAndStart, type LeasedJob } from './lease';

/** Advisory-lock namespace (two-integer form) of a tenant's claims of one job type. */
const CLAIM_LOCK_CLASS = 0x6a636c6d; // "jclm"

/** Unfinished and not held by a live lease, with attempts left: claimAndStart's WHERE clause, on `alias`. */
const claimable = (alias: string) => `${alias}.status IN ('pending', 'running') AND ${alias}.attempts < ${alias}.max_attempts
  AND (${alias}.lease_expires_at IS NULL OR ${alias}.lease_expires_at < now())`;
const CLAIMABLE = claimable('j');

/** Jobs of type $1 that a runner holds with a live lease, per tenant `t` (jobs_leased_idx). */
const RUNNING_OF = (tenant: string) => `(SELECT count(*) FROM jobs l
    WHERE l.type = $1 AND l.tenant_id = ${tenant} AND l.status IN ('pending', 'running')
      AND l.lease_owner IS NOT NULL AND l.lease_expires_at >= now())::int`;

/**
 * The tenants with unfinished jobs of type $1, one index probe each (a loose scan of jobs_queue_idx): as cheap with
 * one tenant's 100,000 jobs queued as with one job.
 */
const TENANTS_WITH_WORK = `tenants AS (
    (SELECT tenant_id FROM jobs WHERE type = $1 AND status IN ('pending', 'running') ORDER BY tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT j.tenant_id FROM jobs j WHERE j.type = $1 AND j.status IN ('pending', 'running') AND j.tenant_id > t.tenant_id
             ORDER BY j.tenant_id LIMIT 1)
      FROM tenants t WHERE t.tenant_id IS NOT NULL)`;

// The tenant to claim for: below its cap ($2), least running, then oldest claimable job. The advisory lock of
// (type, tenant) is taken on it and held to the end of the transaction, so the cap is counted by one claimer of the
// tenant at a time (across replicas), in a statement that sees the claims committed before it.
const NEXT_TENANT_SQL = `WITH RECURSIVE ${TENANTS_WITH_WORK}
  SELECT c.tenant_id::text AS tenant_id, pg_advisory_xact_lock(${CLAIM_LOCK_CLASS}, hashtext($1 || ':' || c.tenant_id::text))::text AS locked
    FROM (SELECT t.tenant_id, r.running, w.created_at
            FROM tenants t
            CROSS JOIN LATERAL (SELECT ${RUNNING_OF('t.tenant_id')} AS running) r
            CROSS JOIN LATERAL (SELECT j.created_at FROM jobs j WHERE j.type = $1 AND j.tenant_id = t.tenant_id AND ${CLAIMABLE}
                                 ORDER BY j.created_at LIMIT 1) w
           WHERE t.tenant_id IS NOT NULL AND r.running < $2
           ORDER BY r.running, w.created_at
           LIMIT 1) c`;

// The tenant's oldest claimable job, row-locked, while the tenant is below its cap (counted now, under the lock).
const NEXT_JOB_SQL = `SELECT j.id::text AS id FROM jobs j
   WHERE j.type = $1 AND j.tenant_id = $2::uuid AND ${CLAIMABLE} AND ${RUNNING_OF('$2::uuid')} < $3
   ORDER BY j.created_at LIMIT 1 FOR UPDATE SKIP LOCKED`;

/** What claimNext found. */
export type NextClaim =
  /** The job leased to the claimer and marked `running`, with its event, as claimAndStart does. */
  | { kind: 'claimed'; job: LeasedJob }
  /** No tenant has a claimable job of the type below its cap. */
  | { kind: 'none' }
  /** The chosen tenant's job went to another claimer meanwhile (or its tenant reached the cap): ask again. */
  | { kind: 'contended' };

export interface ClaimNextParams {
  jobType: JobType;
  workerId: string;
  leaseMs: number;
  /** Jobs of this type one tenant may have running at once, across every runner. */
  tenantCap: number;
}

/**
 * Claims the next job of `jobType` in fair order (see above) and starts it (claimAndStart: the lease, `running`
 * and its event in one statement), all in one transaction.
 */
export function claimNext(pool: Pool, params: ClaimNextParams): Promise<NextClaim> {
  const { jobType, workerId, leaseMs, tenantCap } = params;
  return withTransaction(pool, async (client): Promise<NextClaim> => {
    const tenant = await client.query<{ tenant_id: string }>({
      name: 'job-store-next-tenant',
      text: NEXT_TENANT_SQL,
      values: [jobType, tenantCap],
    });
    const tenantId = tenant.rows[0]?.tenant_id;
    if (tenantId === undefined) return { kind: 'none' };
    const next = await client.query<{ id: string }>({
      name: 'job-store-next-job',
      text: NEXT_JOB_SQL,
      values: [jobType, tenantId, tenantCap],
    });
    const jobId = next.rows[0]?.id;
    if (jobId === undefined) return { kind: 'contended' };
    const job = await claimAndStart(client, { jobId, jobType, workerId, leaseMs });
    return job ? { kind: 'claimed', job } : { kind: 'contended' };
  });
}

// How many jobs of its type are ahead of a pending job, in the order claimNext takes them if no other job arrives
// and running work ends at an even pace. A tenant U whose level (jobs running) is r_U has its m-th queued job taken
// at level r_U + m − 1; the job asked about is its tenant T's k-th, taken at level r_T + k − 1. So U's m-th is ahead
// when r_U + m − 1 < r_T + k − 1, or at the same level when it is older (the tie-break). Ahead of it:
//   (k − 1) + Σ over the other tenants U of #{ m ≤ queued_U : m < L_U, or m = L_U and older }, L_U = r_T + k − r_U.
// With every tenant at the same level this is round robin: (k − 1) + Σ_U min(queued_U, k) (less U's k-th when newer).
// Each U's count reads at most L_U index entries, so the answer costs about k entries per tenant with work queued.
// The CTEs are materialized: each is read several times below and must be computed once.
const QUEUE_POSITION_SQL = `WITH RECURSIVE ${TENANTS_WITH_WORK},
  levels AS MATERIALIZED (SELECT t.tenant_id, ${RUNNING_OF('t.tenant_id')} AS running FROM tenants t WHERE t.tenant_id IS NOT NULL),
  job AS MATERIALIZED (
    SELECT j.tenant_id, j.created_at FROM jobs j
     WHERE j.id = $2 AND j.tenant_id::text = $3 AND j.type = $1 AND j.status = 'pending' AND ${CLAIMABLE}),
  me AS MATERIALIZED (
    SELECT job.tenant_id, job.created_at, l.running,
           1 + (SELECT count(*) FROM jobs o
                 WHERE o.type = $1 AND o.tenant_id = job.tenant_id AND o.created_at < job.created_at AND ${claimable('o')})::int AS k
      FROM job JOIN levels l ON l.tenant_id = job.tenant_id)
  SELECT (me.k - 1 + COALESCE((
           SELECT sum(a.ahead) FROM levels u
            CROSS JOIN LATERAL (
              SELECT count(*) AS ahead FROM (
                SELECT q.created_at, row_number() OVER (ORDER BY q.created_at) AS m FROM jobs q
                 WHERE q.type = $1 AND q.tenant_id = u.tenant_id AND ${claimable('q')}
                 ORDER BY q.created_at LIMIT GREATEST(me.running + me.k - u.running, 0)) queued
               WHERE queued.m < me.running + me.k - u.running OR queued.created_at < me.created_at) a
            WHERE u.tenant_id <> me.tenant_id), 0))::int AS ahead
    FROM me`;

/**
 * How many jobs are ahead of a pending job in the fair order (see above), or undefined when the job is not waiting
 * for a worker (not pending, held by a runner, or not the caller's). An estimate: a job submitted later by a tenant
 * with less work running can still go ahead of it, and tenant caps are not counted.
 */
export async function readQueuePosition(
  db: Queryable,
  ref: { tenantId: string; jobType: JobType; jobId: string },
): Promise<number | undefined> {
  const { rows } = await db.query<{ ahead: number }>({
    name: 'job-store-queue-position',
    text: QUEUE_POSITION_SQL,
    values: [ref.jobType, ref.jobId, ref.tenantId.toLowerCase()],
  });
  return rows[0]?.ahead;
}
