-- Up Migration
-- The same digest as 1764028800000_tool-set-digest, as PL/pgSQL. A SQL function with an aggregate cannot be inlined
-- into the statement that calls it, so Postgres planned its query again on every call: about 85 µs of the
-- backend's CPU on each cache lookup (every cache hit) and every run's tool load. PL/pgSQL keeps the plan for the
-- session. What it returns is unchanged (the tests of both callers compare digests).
CREATE OR REPLACE FUNCTION customer_tool_set_digest(p_tenant uuid, p_product text) RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
  RETURN (
    SELECT left(encode(sha256(convert_to(
             string_agg(id::text || '@' || (extract(epoch FROM updated_at) * 1000000)::bigint::text, ',' ORDER BY id),
             'UTF8')), 'hex'), 32)
      FROM customer_tools
     WHERE tenant_id = p_tenant AND enabled AND p_product = ANY (products));
END
$$;

-- Down Migration
CREATE OR REPLACE FUNCTION customer_tool_set_digest(p_tenant uuid, p_product text) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT left(encode(sha256(convert_to(
           string_agg(id::text || '@' || (extract(epoch FROM updated_at) * 1000000)::bigint::text, ',' ORDER BY id),
           'UTF8')), 'hex'), 32)
    FROM customer_tools
   WHERE tenant_id = p_tenant AND enabled AND p_product = ANY (products)
$$;
