-- Up Migration
-- A product API keeps a tenant's cached answer to a request in memory while the database would answer it the same
-- (@fin/job-kit hot-results.ts). Two changes make it answer otherwise before the entry expires, and each notifies every
-- replica on commit, whoever wrote it: a cache entry written, replaced or removed (payload: its cache_key; a no-cache
-- refresh makes the caller's own entry the newer one), and a change of a tenant's customer tools (payload: the
-- tenant's id; the tool set digest in the cache key changes with any of them).
CREATE FUNCTION result_cache_changed_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('result_cache_changed', CASE WHEN TG_OP = 'DELETE' THEN OLD.cache_key ELSE NEW.cache_key END);
  RETURN NULL;
END;
$$;
CREATE TRIGGER result_cache_changed
  AFTER INSERT OR UPDATE OR DELETE ON result_cache
  FOR EACH ROW EXECUTE FUNCTION result_cache_changed_notify();

CREATE FUNCTION customer_tools_changed_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('customer_tools_changed', (CASE WHEN TG_OP = 'DELETE' THEN OLD.tenant_id ELSE NEW.tenant_id END)::text);
  RETURN NULL;
END;
$$;
CREATE TRIGGER customer_tools_changed
  AFTER INSERT OR UPDATE OR DELETE ON customer_tools
  FOR EACH ROW EXECUTE FUNCTION customer_tools_changed_notify();

-- Down Migration
DROP TRIGGER customer_tools_changed ON customer_tools;
DROP FUNCTION customer_tools_changed_notify();
DROP TRIGGER result_cache_changed ON result_cache;
DROP FUNCTION result_cache_changed_notify();
