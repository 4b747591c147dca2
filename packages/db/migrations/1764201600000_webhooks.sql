-- Up Migration
-- Webhooks: endpoints a tenant registers to be told when its jobs finish, one-off callback URLs of product
-- requests, and the deliveries to both with every attempt. Signing secrets are sealed with the customer-tools
-- keyring (AES-256-GCM, bound to tenant and row) because signing needs the secret itself, not a hash.
-- Keys may carry the new `webhooks` scope.
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_check
  CHECK (scopes <@ ARRAY['news', 'stock-report', 'analysis', 'chat', 'tools', 'webhooks']::text[]);

CREATE TABLE webhook_endpoints (
  id                         uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id                  uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  url                        text        NOT NULL CHECK (length(url) <= 2048),
  description                text        NOT NULL DEFAULT '' CHECK (length(description) <= 256),
  events                     text[]      NOT NULL CHECK (events <@ ARRAY['job.completed', 'job.failed'] AND cardinality(events) > 0),
  enabled                    boolean     NOT NULL DEFAULT true,
  secret_ciphertext          bytea       NOT NULL,
  -- After a rotation the previous secret signs too, until it expires, so receivers can switch without a gap.
  previous_secret_ciphertext bytea,
  previous_secret_expires_at timestamptz,
  created_at                 timestamptz NOT NULL DEFAULT now(),
  updated_at                 timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_tenant_idx ON webhook_endpoints (tenant_id, created_at);

-- The secret a tenant's callback_url deliveries are signed with (one per tenant).
CREATE TABLE webhook_callback_secrets (
  tenant_id                  uuid        PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
  secret_ciphertext          bytea       NOT NULL,
  previous_secret_ciphertext bytea,
  previous_secret_expires_at timestamptz,
  created_at                 timestamptz NOT NULL DEFAULT now(),
  updated_at                 timestamptz NOT NULL DEFAULT now()
);

-- callback_url of product requests, per job: several requests sharing one job each leave their own.
CREATE TABLE webhook_callbacks (
  job_id     uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  url        text        NOT NULL CHECK (length(url) <= 2048),
  tenant_id  uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, url)
);

-- One event to one target (an endpoint or a callback URL). `event_key` names the event (`<job id>:<status>`, or
-- `test:<uuid>`): with the target it is unique, so an event consumed twice queues one delivery. The dispatcher
-- claims due rows with FOR UPDATE SKIP LOCKED under a lease; a process that dies mid-delivery leaves a lease that
-- expires, and the row is sent again.
CREATE TABLE webhook_deliveries (
  id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id        uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  endpoint_id      uuid        REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  callback_url     text        CHECK (length(callback_url) <= 2048),
  event_key        text        NOT NULL,
  event_type       text        NOT NULL CHECK (event_type IN ('job.completed', 'job.failed', 'webhook.test')),
  job_id           uuid,
  job_type         text        CHECK (job_type IN ('news', 'stock-report', 'analysis')),
  -- The exact JSON sent (and signed) on every attempt.
  body             text        NOT NULL,
  status           text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempt_count    integer     NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
  next_attempt_at  timestamptz DEFAULT now(),
  -- No 2xx by then: the delivery fails (24 h after it was queued, or after a manual redelivery).
  give_up_at       timestamptz NOT NULL,
  lease_owner      text,
  lease_expires_at timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  CHECK ((endpoint_id IS NULL) <> (callback_url IS NULL)),
  CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL))
);
CREATE UNIQUE INDEX webhook_deliveries_endpoint_event_idx ON webhook_deliveries (endpoint_id, event_key) WHERE endpoint_id IS NOT NULL;
CREATE UNIQUE INDEX webhook_deliveries_callback_event_idx ON webhook_deliveries (tenant_id, callback_url, event_key)
  WHERE callback_url IS NOT NULL;
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, created_at DESC);

-- Every attempt: never the request body or headers; at most 1,024 characters of the receiver's answer.
CREATE TABLE webhook_attempts (
  id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  delivery_id      uuid        NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempted_at     timestamptz NOT NULL DEFAULT now(),
  outcome          text        NOT NULL CHECK (outcome IN ('ok', 'http_error', 'blocked_address', 'redirect_refused', 'timeout',
                                                         'connection_failed', 'invalid_endpoint')),
  http_status      integer     CHECK (http_status BETWEEN 100 AND 599),
  duration_ms      integer     NOT NULL CHECK (duration_ms >= 0),
  error            text        CHECK (length(error) <= 500),
  response_excerpt text        CHECK (length(response_excerpt) <= 1024)
);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, attempted_at DESC);

-- Down Migration
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_callbacks;
DROP TABLE webhook_callback_secrets;
DROP TABLE webhook_endpoints;
UPDATE api_keys SET scopes = array_remove(scopes, 'webhooks');
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_check
  CHECK (scopes <@ ARRAY['news', 'stock-report', 'analysis', 'chat', 'tools']::text[]);
