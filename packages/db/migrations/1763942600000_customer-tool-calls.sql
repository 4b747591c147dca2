-- Up Migration
-- The audit of customer-tool calls: one row per call the AI (or the portal's "test" button) made to a customer's
-- API, so a customer can see what was called, when, for which job or conversation, and how it ended. Never a
-- header value, an argument or a response body: those may hold the customer's secrets and data.
CREATE TABLE customer_tool_calls (
  id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id       uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  -- Kept after the tool is deleted (the name says what it was); the per-tool audit endpoint then 404s.
  tool_id         uuid        REFERENCES customer_tools (id) ON DELETE SET NULL,
  tool_name       text        NOT NULL,
  -- What made the call: a product job, a chat conversation, or the portal's test button.
  source          text        NOT NULL CHECK (source IN ('job', 'conversation', 'portal_test')),
  product         text        CHECK (product IN ('news', 'stock-report', 'analysis', 'chat')),
  job_id          uuid,
  conversation_id uuid,
  outcome         text        NOT NULL CHECK (outcome IN ('ok', 'http_error', 'blocked_address', 'redirect_refused', 'timeout',
                                                        'response_too_large', 'connection_failed', 'invalid_endpoint', 'aborted')),
  http_status     integer     CHECK (http_status BETWEEN 100 AND 599),
  duration_ms     integer     NOT NULL CHECK (duration_ms >= 0),
  response_bytes  integer     NOT NULL DEFAULT 0 CHECK (response_bytes >= 0),
  -- A short reason written by our executor (never the customer's text or secrets) when the outcome is not ok.
  error           text        CHECK (length(error) <= 500),
  created_at      timestamptz NOT NULL DEFAULT now(),
  CHECK (source <> 'job' OR job_id IS NOT NULL),
  CHECK (source <> 'conversation' OR conversation_id IS NOT NULL)
);
CREATE INDEX customer_tool_calls_tool_idx ON customer_tool_calls (tool_id, created_at DESC);
CREATE INDEX customer_tool_calls_tenant_idx ON customer_tool_calls (tenant_id, created_at DESC);

-- Down Migration
DROP TABLE customer_tool_calls;
