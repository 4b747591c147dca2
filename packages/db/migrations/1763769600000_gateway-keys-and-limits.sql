-- Up Migration
-- The gateway's API-key cache invalidation, chat-stream concurrency slots, and cheaper rate-limit counters.

-- Counters are written on every limited request and matter for one minute. Unlogged, a hit commits without
-- waiting for a WAL flush: measured here, about 2x faster per hit and 3x the throughput on one hot key. The
-- price: after a database crash, or on a promoted standby, the table starts empty, so every key gets a fresh
-- window once. Nothing else is lost (chat_stream_slots and everything else stay logged).
ALTER TABLE rate_limit_counters SET UNLOGGED;

-- One row per live chat stream. A key may hold at most 10 rows (or its tenant's `chat` override) whose lease
-- has not expired. The gateway takes a slot under a per-key advisory transaction lock (count, then insert)
-- and renews the lease while the stream lives, so the slots of a replica that died expire on their own.
CREATE TABLE chat_stream_slots (
  slot_id          uuid        PRIMARY KEY,
  key_id           uuid        NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  -- Which gateway process holds the slot (host:pid:instance), for operators reading the table.
  holder           text        NOT NULL,
  acquired_at      timestamptz NOT NULL DEFAULT now(),
  lease_expires_at timestamptz NOT NULL
);
CREATE INDEX chat_stream_slots_key_idx ON chat_stream_slots (key_id, lease_expires_at);
CREATE INDEX chat_stream_slots_lease_idx ON chat_stream_slots (lease_expires_at);

-- Overrides are read as {product: requests per minute}; anything but an object is a mistake.
ALTER TABLE tenants
  ADD CONSTRAINT tenants_rate_limit_overrides_object CHECK (jsonb_typeof(rate_limit_overrides) = 'object');

-- Every gateway replica caches verified keys briefly and LISTENs on api_key_changed to evict them. The
-- notification comes from triggers, so every writer (admin CLI, portal, a manual UPDATE) sends it, and only
-- when the change commits. Payload: `key:<api_keys.id>` or `tenant:<tenants.id>`. last_used_at updates do not
-- notify (the UPDATE OF column lists leave it out).
CREATE FUNCTION api_key_changed_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'api_keys' THEN
    PERFORM pg_notify('api_key_changed', 'key:' || OLD.id::text);
  ELSE
    PERFORM pg_notify('api_key_changed', 'tenant:' || OLD.id::text);
  END IF;
  RETURN NULL;
END;
$$;
CREATE TRIGGER api_keys_changed
  AFTER UPDATE OF tenant_id, key_hash, scopes, expires_at, revoked_at OR DELETE ON api_keys
  FOR EACH ROW EXECUTE FUNCTION api_key_changed_notify();
CREATE TRIGGER tenants_changed
  AFTER UPDATE OF name, rate_limit_overrides, disabled_at OR DELETE ON tenants
  FOR EACH ROW EXECUTE FUNCTION api_key_changed_notify();

-- Down Migration
DROP TRIGGER tenants_changed ON tenants;
DROP TRIGGER api_keys_changed ON api_keys;
DROP FUNCTION api_key_changed_notify();
ALTER TABLE tenants DROP CONSTRAINT tenants_rate_limit_overrides_object;
DROP TABLE chat_stream_slots;
ALTER TABLE rate_limit_counters SET LOGGED;
