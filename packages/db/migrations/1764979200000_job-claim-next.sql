-- Up Migration
-- The choice of claimNext (@fin/job-store queue.ts, docs/jobs.md#fair-order-between-tenants) made inside the claim's
-- own statement, so that a worker takes its next job in one round trip rather than five (BEGIN, the tenant, the job,
-- the claim, COMMIT). The order is queue.ts's: the tenant below its cap ($2) with the least work of the type running
-- (live leases), then its oldest claimable job; the claim statement leases the job this returns.
--
-- Each query here takes a fresh snapshot (a volatile function's do), which the cap needs: the tenant's advisory
-- lock is taken first and held to the end of the claim's transaction, and the job is chosen and the cap counted by
-- the query after it, which sees the claims that other claimers of the tenant committed before it got the lock.
-- `next_tenant` without `next_job`: the tenant's job went to another claimer meanwhile (or the tenant reached its cap).
-- The claimable condition is claimAndStart's WHERE clause (lease.ts), as in queue.ts.
CREATE FUNCTION job_claim_next(p_type text, p_cap integer, OUT next_tenant uuid, OUT next_job uuid)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  -- The tenants with unfinished jobs of the type, one index probe each (a loose scan of jobs_queue_idx).
  WITH RECURSIVE tenants AS (
    (SELECT tenant_id FROM jobs WHERE type = p_type AND status IN ('pending', 'running') ORDER BY tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT j.tenant_id FROM jobs j WHERE j.type = p_type AND j.status IN ('pending', 'running') AND j.tenant_id > t.tenant_id
             ORDER BY j.tenant_id LIMIT 1)
      FROM tenants t WHERE t.tenant_id IS NOT NULL)
  SELECT t.tenant_id INTO next_tenant
    FROM tenants t
    CROSS JOIN LATERAL (SELECT count(*) AS running FROM jobs l
                         WHERE l.type = p_type AND l.tenant_id = t.tenant_id AND l.status IN ('pending', 'running')
                           AND l.lease_owner IS NOT NULL AND l.lease_expires_at >= now()) r
    CROSS JOIN LATERAL (SELECT j.created_at FROM jobs j
                         WHERE j.type = p_type AND j.tenant_id = t.tenant_id AND j.status IN ('pending', 'running')
                           AND j.attempts < j.max_attempts AND (j.lease_expires_at IS NULL OR j.lease_expires_at < now())
                         ORDER BY j.created_at LIMIT 1) w
   WHERE t.tenant_id IS NOT NULL AND r.running < p_cap
   ORDER BY r.running, w.created_at
   LIMIT 1;
  IF next_tenant IS NULL THEN
    RETURN;
  END IF;
  -- queue.ts's CLAIM_LOCK_CLASS ("jclm"): one claimer of a tenant's jobs of a type at a time, across replicas.
  PERFORM pg_advisory_xact_lock(1784900717, hashtext(p_type || ':' || next_tenant::text));
  SELECT j.id INTO next_job FROM jobs j
   WHERE j.type = p_type AND j.tenant_id = next_tenant AND j.status IN ('pending', 'running')
     AND j.attempts < j.max_attempts AND (j.lease_expires_at IS NULL OR j.lease_expires_at < now())
     AND (SELECT count(*) FROM jobs l
           WHERE l.type = p_type AND l.tenant_id = next_tenant AND l.status IN ('pending', 'running')
             AND l.lease_owner IS NOT NULL AND l.lease_expires_at >= now()) < p_cap
   ORDER BY j.created_at LIMIT 1 FOR UPDATE SKIP LOCKED;
END
$$;

-- Down Migration
DROP FUNCTION job_claim_next(text, integer);
