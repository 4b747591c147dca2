-- Up Migration
-- The organisation's model allowance as the API keeps it: per model, a token bucket for each of its limits
-- (requests, input tokens, output tokens per minute), each holding up to a minute's limit and refilling at the limit
-- per minute, continuously (@fin/ai model-budget.ts). One row per model, so that a call takes its share of the three
-- in one statement under the row's lock, all or nothing. Levels are fractional (the refill is continuous) and may go
-- below zero after a 429 (the API said its bucket was short). It replaces the fixed windows of model_budget
-- (rate-limiter-flexible's store), which held half a bucket each.
CREATE TABLE model_allowance (
  model text PRIMARY KEY,
  requests double precision NOT NULL,
  input double precision NOT NULL,
  output double precision NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
DROP TABLE model_budget;

-- Down Migration
CREATE TABLE model_budget (
  key text PRIMARY KEY,
  points integer NOT NULL DEFAULT 0,
  expire bigint
);
DROP TABLE model_allowance;
