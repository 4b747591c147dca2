-- Up Migration
-- The organisation's model allowance, shared by every replica (issue 35). The Messages API limits requests, input
-- tokens and output tokens per minute per model for the whole organisation; each process that calls the model takes
-- its calls from these windows (@fin/ai model-budget.ts, rate-limiter-flexible's Postgres store, whose table this
-- is, in the shape that library reads and writes (its key a text here): a counter per key, `expire` in epoch milliseconds).
CREATE TABLE model_budget (
  key text PRIMARY KEY,
  points integer NOT NULL DEFAULT 0,
  expire bigint
);

-- Down Migration
DROP TABLE model_budget;
