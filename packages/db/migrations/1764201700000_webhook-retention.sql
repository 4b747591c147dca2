-- Up Migration
-- Finished webhook deliveries (and their attempts) are kept 30 days, then deleted by the dispatcher's hourly sweep;
-- this index finds them without reading the pending ones.
CREATE INDEX webhook_deliveries_finished_idx ON webhook_deliveries (updated_at) WHERE status <> 'pending';

-- Down Migration
DROP INDEX webhook_deliveries_finished_idx;
