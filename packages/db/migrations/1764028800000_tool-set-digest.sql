-- Up Migration
-- The identity of the customer tools a run offers the model: the tenant's enabled tools for a product, each as
-- its id and the microsecond of its last change, in id order, hashed. NULL when the tenant offers none. Tool
-- descriptions and schemas are tenant-written text in the prompt, so a result produced while any tool was offered
-- belongs to that tenant, and is cached under a key holding this digest. The product APIs (choosing the key to
-- look up) and the customer-tools runtime (loading the tools a run offers, in the same statement) both call this
-- one definition, so the two can never disagree about a set.
CREATE FUNCTION customer_tool_set_digest(p_tenant uuid, p_product text) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT left(encode(sha256(convert_to(
           string_agg(id::text || '@' || (extract(epoch FROM updated_at) * 1000000)::bigint::text, ',' ORDER BY id),
           'UTF8')), 'hex'), 32)
    FROM customer_tools
   WHERE tenant_id = p_tenant AND enabled AND p_product = ANY (products)
$$;

-- Before this migration a run that offered a tenant's customer tools could write a shared entry (only custom
-- `data` made an entry the tenant's own). Which shared entries were produced that way cannot be told apart, so all
-- shared entries are dropped; they are rebuilt by the next request for each key.
DELETE FROM result_cache WHERE tenant_id IS NULL;

-- Down Migration
DROP FUNCTION customer_tool_set_digest(uuid, text);
