-- Up Migration
-- What jobs and chat replies cost, shown to the account (issue 29).
--
-- jobs.usage: the job's usage over all of its attempts, as the API's JobUsage (model_calls, input_tokens,
-- cache_creation_input_tokens, cache_read_input_tokens, output_tokens, web_searches, and failed_attempts: the
-- part spent by attempts that failed); written with each attempt's end, null before the first. input_tokens and
-- output_tokens stay the totals of the same two fields, for readers written before usage existed.
ALTER TABLE jobs ADD COLUMN usage jsonb;
UPDATE jobs SET usage = jsonb_build_object('model_calls', 0, 'input_tokens', input_tokens, 'cache_creation_input_tokens', 0,
                                           'cache_read_input_tokens', 0, 'output_tokens', output_tokens, 'web_searches', 0)
 WHERE input_tokens > 0 OR output_tokens > 0;

-- usage_daily: an account's usage per product and UTC day, added to by every attempt's end (jobs) and every chat
-- reply's end, in the statement that records it. The portal's usage page reads it, and the gateway's daily token
-- budget sums the account's row of today. A row a day per product an account used: kept like invoices are.
CREATE TABLE usage_daily (
  tenant_id                   uuid    NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  day                         date    NOT NULL,
  product                     text    NOT NULL CHECK (product IN ('news', 'stock-report', 'analysis', 'chat')),
  runs                        integer NOT NULL DEFAULT 0 CHECK (runs >= 0),
  failed_runs                 integer NOT NULL DEFAULT 0 CHECK (failed_runs >= 0),
  model_calls                 bigint  NOT NULL DEFAULT 0 CHECK (model_calls >= 0),
  input_tokens                bigint  NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
  cache_creation_input_tokens bigint  NOT NULL DEFAULT 0 CHECK (cache_creation_input_tokens >= 0),
  cache_read_input_tokens     bigint  NOT NULL DEFAULT 0 CHECK (cache_read_input_tokens >= 0),
  output_tokens               bigint  NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
  web_searches                bigint  NOT NULL DEFAULT 0 CHECK (web_searches >= 0),
  PRIMARY KEY (tenant_id, day, product)
);

-- One run's usage (a job attempt or a chat reply) added to its account's row of today, in one statement.
CREATE FUNCTION usage_daily_add(p_tenant uuid, p_product text, p_usage jsonb, p_failed boolean) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO usage_daily AS u (tenant_id, day, product, runs, failed_runs, model_calls, input_tokens,
                                cache_creation_input_tokens, cache_read_input_tokens, output_tokens, web_searches)
  VALUES (p_tenant, (now() AT TIME ZONE 'UTC')::date, p_product, 1, CASE WHEN p_failed THEN 1 ELSE 0 END,
          COALESCE((p_usage ->> 'model_calls')::bigint, 0), COALESCE((p_usage ->> 'input_tokens')::bigint, 0),
          COALESCE((p_usage ->> 'cache_creation_input_tokens')::bigint, 0), COALESCE((p_usage ->> 'cache_read_input_tokens')::bigint, 0),
          COALESCE((p_usage ->> 'output_tokens')::bigint, 0), COALESCE((p_usage ->> 'web_searches')::bigint, 0))
  ON CONFLICT (tenant_id, day, product) DO UPDATE SET
    runs = u.runs + 1,
    failed_runs = u.failed_runs + EXCLUDED.failed_runs,
    model_calls = u.model_calls + EXCLUDED.model_calls,
    input_tokens = u.input_tokens + EXCLUDED.input_tokens,
    cache_creation_input_tokens = u.cache_creation_input_tokens + EXCLUDED.cache_creation_input_tokens,
    cache_read_input_tokens = u.cache_read_input_tokens + EXCLUDED.cache_read_input_tokens,
    output_tokens = u.output_tokens + EXCLUDED.output_tokens,
    web_searches = u.web_searches + EXCLUDED.web_searches
$$;

-- Down Migration
DROP FUNCTION usage_daily_add(uuid, text, jsonb, boolean);
DROP TABLE usage_daily;
ALTER TABLE jobs DROP COLUMN usage;
