-- Up Migration
-- An account's callback deliveries (endpoint_id NULL), newest first: GET /api/webhooks/callbacks/deliveries.
CREATE INDEX webhook_deliveries_callback_idx ON webhook_deliveries (tenant_id, created_at DESC) WHERE endpoint_id IS NULL;

-- Down Migration
DROP INDEX webhook_deliveries_callback_idx;
