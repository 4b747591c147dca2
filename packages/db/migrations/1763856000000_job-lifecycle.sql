-- Up Migration
-- Job lifecycle: per-tenant coalescing, idempotency keys, cache-hit jobs.

-- Identical requests in flight share a job within a tenant. (Across tenants the completed-result cache is shared,
-- but a job id is only ever visible to the tenant that owns it.)
DROP INDEX jobs_inflight_cache_key_idx;
CREATE UNIQUE INDEX jobs_inflight_cache_key_idx ON jobs (tenant_id, cache_key) WHERE status IN ('pending', 'running');

-- A tenant's jobs by cache key, whatever their status: a cache hit reuses the tenant's completed job for the key.
CREATE INDEX jobs_tenant_cache_key_idx ON jobs (tenant_id, cache_key) WHERE cache_key IS NOT NULL;

-- A job answered from the cache is created completed, with the result copied from the cache entry; this names
-- the job whose run produced it.
ALTER TABLE jobs ADD COLUMN cached_from uuid;

-- Idempotency-Key on product POSTs: the same key and body from the same tenant returns the same job.
CREATE TABLE idempotency_keys (
  tenant_id    uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  key          text        NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
  -- SHA-256 of the route and the canonical JSON of the validated request body.
  request_hash bytea       NOT NULL,
  job_id       uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

-- Down Migration
DROP TABLE idempotency_keys;
ALTER TABLE jobs DROP COLUMN cached_from;
DROP INDEX jobs_tenant_cache_key_idx;
DROP INDEX jobs_inflight_cache_key_idx;
CREATE UNIQUE INDEX jobs_inflight_cache_key_idx ON jobs (cache_key) WHERE status IN ('pending', 'running');
