// The order in which workers take jobs, fair between tenants: the next job of a type comes from the tenant with the
// least work of that type running (live leases, across every replica), its oldest claimable job first; ties go to
// the tenant whose oldest claimable job is older. A tenant at its cap of work running is passed over. One tenant's
// backlog thus delays another tenant's job by about one job's run (a slot has to free up), not by the backlog.
//
// A job is claimable exactly when claimAndStart's WHERE clause says so (pending, or running with no live lease, with
// attempts left), and the claim is claimAndStart's own statement, which also chooses the job: the lease and its WHERE
// clause still guarantee that one runner holds a job at a time, whatever the order.
//
// The choice is made by the database function job_claim_next (migration 1764979200000_job-claim-next.sql), called
// inside the claim statement, so that taking the next job is one round trip: the tenant (the order below), its
// advisory lock of (type, tenant), then its oldest claimable job, row-locked, while the tenant is below its cap —
// counted by a query of its own after the lock, which sees the claims committed before it, so the cap is counted by
// one claimer of the tenant at a time across replicas. The SQL below is the same order, for the queue position.
import type { JobType } from '@fin/events';
import type { Pool, Queryable } from '@fin/db';
import { claimEventValues, claimStatement, startedJobOf, type ClaimedRow, type LeasedJob } from './lease';

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

// The claim of the job job_claim_next chooses for the type ($4) and the tenant cap ($1): `found` says whether it found
// a tenant, the claimed row's columns what it claimed.
const CLAIM_NEXT_SQL = claimStatement({
  jobId: '(SELECT next_job FROM next)',
  choose: 'next AS MATERIALIZED (SELECT next_tenant, next_job FROM job_claim_next($4::text, $1::int))',
  select: `SELECT n.next_tenant IS NOT NULL AS found, c.id::text AS id, c.attempts, c.max_attempts, c.tenant_id, c.request,
                  c.cache_key, c.usage, c.progress
             FROM next n LEFT JOIN claimed c ON true`,
});

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
 * and its event), in one statement.
 */
export async function claimNext(pool: Pool, params: ClaimNextParams): Promise<NextClaim> {
  const { jobType, workerId, leaseMs, tenantCap } = params;
  // The claimed row's columns are null when nothing was claimed (the LEFT JOIN): read only when id is not.
  const { rows } = await pool.query<ClaimedRow & { found: boolean; id: string | null; progress: number }>({
    name: 'job-store-claim-next',
    text: CLAIM_NEXT_SQL,
    values: [tenantCap, workerId, leaseMs, jobType, ...claimEventValues({ jobType, workerId })],
  });
  const row = rows[0];
  if (row?.found !== true) return { kind: 'none' };
  const { id } = row;
  if (id === null) return { kind: 'contended' };
  return { kind: 'claimed', job: startedJobOf(jobType, { ...row, id }) };
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
