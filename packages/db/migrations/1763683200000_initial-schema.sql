-- Up Migration
-- The initial schema. Conventions: snake_case names; timestamps are timestamptz; every tenant-owned row
-- carries tenant_id so that a query for another tenant's row finds nothing (the API answers 404).

CREATE TABLE tenants (
  id                   uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  name                 text        NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 100),
  -- Per-product request-per-minute overrides arranged with the account manager, e.g. {"news": 500}.
  rate_limit_overrides jsonb       NOT NULL DEFAULT '{}'::jsonb,
  created_at           timestamptz NOT NULL DEFAULT now(),
  disabled_at          timestamptz
);

-- Only the SHA-256 of a key is stored; the key itself is shown once at creation.
CREATE TABLE api_keys (
  id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id    uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  name         text,
  -- The key's public, non-secret start (prefix and a few characters), shown in listings to tell keys apart.
  display_prefix text      NOT NULL,
  key_hash     bytea       NOT NULL UNIQUE CHECK (length(key_hash) = 32),
  scopes       text[]      NOT NULL CHECK (scopes <@ ARRAY['news', 'stock-report', 'analysis', 'chat', 'tools']::text[]),
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz,
  revoked_at   timestamptz,
  last_used_at timestamptz
);
CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id);

-- Fixed-window request counters shared by every gateway replica: one row per (key, product) window,
-- incremented by a single atomic upsert.
CREATE TABLE rate_limit_counters (
  counter_key text        PRIMARY KEY,
  hits        integer     NOT NULL CHECK (hits >= 0),
  reset_at    timestamptz NOT NULL
);
CREATE INDEX rate_limit_counters_reset_idx ON rate_limit_counters (reset_at);

CREATE TABLE jobs (
  id                   uuid        PRIMARY KEY,
  tenant_id            uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  type                 text        NOT NULL CHECK (type IN ('news', 'stock-report', 'analysis')),
  status               text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'completed', 'failed')),
  progress             smallint    NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
  currently_working_on text,
  request              jsonb       NOT NULL,
  result               jsonb,
  -- {type, detail} of the failure a client may read; internals are logged, never stored here.
  error                jsonb,
  -- Key of the result cache this job fills (null when the product is not cached).
  cache_key            text,
  attempts             integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  max_attempts         integer     NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
  -- The worker holding the job and until when; an expired lease lets another worker retry it.
  lease_owner          text,
  lease_expires_at     timestamptz,
  -- Sequence number of the last job event applied, so that late or duplicate events are ignored.
  event_seq            integer     NOT NULL DEFAULT 0,
  input_tokens         integer     NOT NULL DEFAULT 0,
  output_tokens        integer     NOT NULL DEFAULT 0,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  started_at           timestamptz,
  finished_at          timestamptz,
  CONSTRAINT jobs_result_when_completed CHECK ((status = 'completed') = (result IS NOT NULL)),
  CONSTRAINT jobs_error_when_failed CHECK ((status = 'failed') = (error IS NOT NULL))
);
CREATE INDEX jobs_tenant_created_idx ON jobs (tenant_id, created_at DESC);
CREATE INDEX jobs_unfinished_lease_idx ON jobs (lease_expires_at) WHERE status IN ('pending', 'running');
-- At most one unfinished job per cache key: identical requests in flight share it.
CREATE UNIQUE INDEX jobs_inflight_cache_key_idx ON jobs (cache_key) WHERE status IN ('pending', 'running');

-- Transactional outbox: events are written in the same transaction as the state they describe and
-- published to Kafka by the relay, which marks them published. Rows are read by "not yet published",
-- never by "id greater than the last one seen", so a row whose transaction commits late is not skipped.
CREATE TABLE outbox (
  id           bigserial   PRIMARY KEY,
  topic        text        NOT NULL,
  message_key  text        NOT NULL,
  event_id     uuid        NOT NULL UNIQUE,
  event_type   text        NOT NULL,
  envelope     jsonb       NOT NULL,
  headers      jsonb       NOT NULL DEFAULT '{}'::jsonb,
  created_at   timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz,
  attempts     integer     NOT NULL DEFAULT 0,
  last_error   text
);
CREATE INDEX outbox_unpublished_idx ON outbox (id) WHERE published_at IS NULL;
CREATE INDEX outbox_published_at_idx ON outbox (published_at) WHERE published_at IS NOT NULL;

CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('outbox', NEW.topic);
  RETURN NULL;
END;
$$;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION outbox_notify();

-- Events a consumer has already handled, for idempotent processing of at-least-once deliveries.
CREATE TABLE processed_events (
  consumer     text        NOT NULL,
  event_id     uuid        NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, event_id)
);
CREATE INDEX processed_events_processed_at_idx ON processed_events (processed_at);

-- Completed product results, served for 7 days. tenant_id is set when the request carried custom data:
-- such entries are keyed per tenant and never served to another.
CREATE TABLE result_cache (
  cache_key  text        PRIMARY KEY,
  job_type   text        NOT NULL CHECK (job_type IN ('news', 'stock-report', 'analysis')),
  tenant_id  uuid        REFERENCES tenants (id) ON DELETE CASCADE,
  job_id     uuid        NOT NULL,
  result     jsonb       NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL DEFAULT now() + interval '7 days'
);
CREATE INDEX result_cache_expires_idx ON result_cache (expires_at);

-- External APIs a customer lets the AI call. Header values are secrets: stored encrypted, never returned.
CREATE TABLE customer_tools (
  id                 uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id          uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  name               text        NOT NULL CHECK (name ~ '^[a-zA-Z][a-zA-Z0-9_]{0,63}$'),
  description        text        NOT NULL,
  endpoint           text        NOT NULL,
  method             text        NOT NULL DEFAULT 'POST' CHECK (method IN ('GET', 'POST')),
  input_schema       jsonb       NOT NULL,
  header_names       text[]      NOT NULL DEFAULT '{}',
  headers_ciphertext bytea,
  enabled            boolean     NOT NULL DEFAULT true,
  timeout_ms         integer     NOT NULL DEFAULT 10000 CHECK (timeout_ms BETWEEN 100 AND 30000),
  products           text[]      NOT NULL DEFAULT ARRAY['news', 'stock-report', 'analysis', 'chat']::text[],
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, name)
);

CREATE TABLE conversations (
  id         uuid        PRIMARY KEY,
  tenant_id  uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX conversations_tenant_idx ON conversations (tenant_id, updated_at DESC);

CREATE TABLE messages (
  id              uuid        PRIMARY KEY,
  conversation_id uuid        NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  -- Order within the conversation; (conversation_id, seq) is unique, so two replies cannot interleave.
  seq             integer     NOT NULL,
  role            text        NOT NULL CHECK (role IN ('user', 'assistant')),
  content         text        NOT NULL,
  input_tokens    integer     NOT NULL DEFAULT 0,
  output_tokens   integer     NOT NULL DEFAULT 0,
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (conversation_id, seq)
);

-- Down Migration
DROP TABLE messages;
DROP TABLE conversations;
DROP TABLE customer_tools;
DROP TABLE result_cache;
DROP TABLE processed_events;
DROP TRIGGER outbox_notify ON outbox;
DROP FUNCTION outbox_notify();
DROP TABLE outbox;
DROP TABLE jobs;
DROP TABLE rate_limit_counters;
DROP TABLE api_keys;
DROP TABLE tenants;
