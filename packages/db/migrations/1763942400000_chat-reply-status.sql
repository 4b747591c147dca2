-- Up Migration
-- Chat replies are written while they stream. A reply row exists from the moment its turn starts, so that a
-- second message for the same conversation can be refused (409) on every replica, a client can re-attach to
-- it, and a reply cut off by a disconnect or a shutdown is kept but never mistaken for a complete one: only
-- complete replies (and the user messages they answer) are context for the model.
ALTER TABLE messages
  ADD COLUMN status text NOT NULL DEFAULT 'complete' CHECK (status IN ('streaming', 'complete', 'interrupted', 'failed')),
  -- The reply's chat events in order (the data of each SSE event; its id is the position), so a finished
  -- reply can be replayed to a client that re-attaches with Last-Event-ID.
  ADD COLUMN events jsonb,
  -- The error body of the `error` event that ended an interrupted or failed reply.
  ADD COLUMN error jsonb,
  -- A streaming reply's owner renews this while it runs; a reply whose owner died (lease expired) is taken
  -- as interrupted, so its conversation is not blocked for ever.
  ADD COLUMN lease_expires_at timestamptz,
  ADD COLUMN finished_at timestamptz;

ALTER TABLE messages
  ADD CONSTRAINT messages_user_complete CHECK (role = 'assistant' OR status = 'complete'),
  ADD CONSTRAINT messages_streaming_lease CHECK ((status = 'streaming') = (lease_expires_at IS NOT NULL)),
  ADD CONSTRAINT messages_error_when_ended CHECK ((status IN ('interrupted', 'failed')) = (error IS NOT NULL));

-- At most one reply in progress per conversation, whichever replica writes it.
CREATE UNIQUE INDEX messages_one_streaming_idx ON messages (conversation_id) WHERE status = 'streaming';

-- Down Migration
DROP INDEX messages_one_streaming_idx;
ALTER TABLE messages
  DROP CONSTRAINT messages_error_when_ended,
  DROP CONSTRAINT messages_streaming_lease,
  DROP CONSTRAINT messages_user_complete,
  DROP COLUMN finished_at,
  DROP COLUMN lease_expires_at,
  DROP COLUMN error,
  DROP COLUMN events,
  DROP COLUMN status;
