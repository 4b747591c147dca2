-- Up Migration
-- Every token counted, and the daily token budget held by reservations (issue 34).
--
-- job_usage_add: a job's usage (the API's JobUsage, jobs.usage) after one more attempt, as @fin/contracts'
-- addAttemptUsage computes it: the attempt's six counters added to the totals, and to failed_attempts when the
-- attempt failed. The statements that record an attempt add it to the row they update, so an attempt recorded by
-- a runner that lost its lease and the attempt that replaced it both stay in the job's usage, whatever their order.
CREATE FUNCTION job_usage_add(p_before jsonb, p_attempt jsonb, p_failed boolean) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_strip_nulls(jsonb_build_object(
    'model_calls', COALESCE((p_before ->> 'model_calls')::bigint, 0) + COALESCE((p_attempt ->> 'model_calls')::bigint, 0),
    'input_tokens', COALESCE((p_before ->> 'input_tokens')::bigint, 0) + COALESCE((p_attempt ->> 'input_tokens')::bigint, 0),
    'cache_creation_input_tokens', COALESCE((p_before ->> 'cache_creation_input_tokens')::bigint, 0)
                                   + COALESCE((p_attempt ->> 'cache_creation_input_tokens')::bigint, 0),
    'cache_read_input_tokens', COALESCE((p_before ->> 'cache_read_input_tokens')::bigint, 0)
                               + COALESCE((p_attempt ->> 'cache_read_input_tokens')::bigint, 0),
    'output_tokens', COALESCE((p_before ->> 'output_tokens')::bigint, 0) + COALESCE((p_attempt ->> 'output_tokens')::bigint, 0),
    'web_searches', COALESCE((p_before ->> 'web_searches')::bigint, 0) + COALESCE((p_attempt ->> 'web_searches')::bigint, 0),
    'failed_attempts', CASE WHEN p_failed THEN jsonb_build_object(
        'attempts', COALESCE((p_before #>> '{failed_attempts,attempts}')::int, 0) + 1,
        'model_calls', COALESCE((p_before #>> '{failed_attempts,model_calls}')::bigint, 0) + COALESCE((p_attempt ->> 'model_calls')::bigint, 0),
        'input_tokens', COALESCE((p_before #>> '{failed_attempts,input_tokens}')::bigint, 0) + COALESCE((p_attempt ->> 'input_tokens')::bigint, 0),
        'cache_creation_input_tokens', COALESCE((p_before #>> '{failed_attempts,cache_creation_input_tokens}')::bigint, 0)
                                       + COALESCE((p_attempt ->> 'cache_creation_input_tokens')::bigint, 0),
        'cache_read_input_tokens', COALESCE((p_before #>> '{failed_attempts,cache_read_input_tokens}')::bigint, 0)
                                   + COALESCE((p_attempt ->> 'cache_read_input_tokens')::bigint, 0),
        'output_tokens', COALESCE((p_before #>> '{failed_attempts,output_tokens}')::bigint, 0) + COALESCE((p_attempt ->> 'output_tokens')::bigint, 0),
        'web_searches', COALESCE((p_before #>> '{failed_attempts,web_searches}')::bigint, 0) + COALESCE((p_attempt ->> 'web_searches')::bigint, 0))
      ELSE p_before -> 'failed_attempts' END))
$$;

-- token_reservations: tokens of the daily budget held for work admitted and not finished yet. The gateway writes a
-- row when it admits a request (at most one estimate past the budget: the admission statement holds the account's
-- lock and sums its usage of today and its live reservations), attaches it to the job the request made (job_id) or
-- deletes it when the request made none; the job's end deletes it (the attempt's usage is in usage_daily by then),
-- and the jobs service's reaper deletes what is left: reservations of finished jobs, and expired ones (a gateway
-- that died before it attached or released its reservation).
CREATE TABLE token_reservations (
  id         uuid        PRIMARY KEY,
  tenant_id  uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  -- news | stock-report | analysis | chat
  product    text        NOT NULL,
  tokens     bigint      NOT NULL CHECK (tokens >= 0),
  -- The job that holds it (null: the request is still being answered, or holds it itself: a chat reply).
  job_id     uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX token_reservations_tenant_idx ON token_reservations (tenant_id, expires_at);
CREATE UNIQUE INDEX token_reservations_job_idx ON token_reservations (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX token_reservations_expires_idx ON token_reservations (expires_at);

-- The gateway's admission of one request of an account under a daily budget, in one statement: holding the
-- account's lock (a transaction-level advisory lock, so concurrent admissions of one account, from any number of
-- gateway replicas, take turns and each sees the previous one's reservation), it sums what the account used today
-- (usage_daily) and what its live reservations hold, and reserves `p_tokens` when the sum is below the budget. So
-- admissions stop once used + held reaches the budget, and the last one admitted can take it past by at most its
-- own estimate. Each statement of a plpgsql function reads the database as it is when the statement starts (under
-- READ COMMITTED), so the sums are read after the lock is held. A job's end adds its usage and deletes its
-- reservation in one transaction, so the two sums never count it twice or not at all.
CREATE FUNCTION token_budget_reserve(p_tenant uuid, p_budget bigint, p_tokens bigint, p_id uuid, p_product text, p_ttl_ms integer)
RETURNS TABLE (reserved boolean, used bigint, held bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_used bigint;
  v_held bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(1953194614, hashtext(p_tenant::text)); -- class 0x746b6276, "tkbv"
  SELECT COALESCE(sum(u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens + u.output_tokens), 0)::bigint
    INTO v_used FROM usage_daily u WHERE u.tenant_id = p_tenant AND u.day = (now() AT TIME ZONE 'UTC')::date;
  SELECT COALESCE(sum(r.tokens), 0)::bigint
    INTO v_held FROM token_reservations r WHERE r.tenant_id = p_tenant AND r.expires_at > clock_timestamp();
  IF v_used + v_held >= p_budget THEN
    RETURN QUERY SELECT false, v_used, v_held;
    RETURN;
  END IF;
  INSERT INTO token_reservations (id, tenant_id, product, tokens, expires_at)
  VALUES (p_id, p_tenant, p_product, p_tokens, clock_timestamp() + p_ttl_ms * interval '1 millisecond');
  RETURN QUERY SELECT true, v_used, v_held;
END
$$;

-- Down Migration
DROP FUNCTION token_budget_reserve(uuid, bigint, bigint, uuid, text, integer);
DROP TABLE token_reservations;
DROP FUNCTION job_usage_add(jsonb, jsonb, boolean);
