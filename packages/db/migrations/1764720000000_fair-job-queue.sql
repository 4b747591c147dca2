-- Up Migration
-- Jobs are taken fairly between tenants (issue 35): a worker's next job comes from the tenant with the least work of
-- that type running, oldest job first, and at most a cap of a tenant's jobs run at once (claimNext in
-- packages/job-store/src/queue.ts). The status endpoint counts the jobs ahead of a pending one the same way.
--
-- jobs_queue_idx: the unfinished jobs of a type by tenant and age. It serves the tenants that have work (a loose
-- index scan: one probe per tenant, however long a tenant's backlog is), each tenant's oldest claimable job (its
-- running jobs, at most its cap, are skipped first) and a pending job's place in its tenant's queue.
CREATE INDEX jobs_queue_idx ON jobs (type, tenant_id, created_at) WHERE status IN ('pending', 'running');
-- jobs_leased_idx: the jobs a runner holds (a live lease, or one whose runner died and the reaper has not cleared),
-- by type and tenant, with the lease's expiry: a tenant's work running is counted from this index alone.
CREATE INDEX jobs_leased_idx ON jobs (type, tenant_id, lease_expires_at)
  WHERE status IN ('pending', 'running') AND lease_owner IS NOT NULL;

-- Down Migration
DROP INDEX jobs_leased_idx;
DROP INDEX jobs_queue_idx;
