-- Up Migration
-- Webhooks one account cannot stall or turn into a weapon (issue 27).
--
-- products: the products whose job events an endpoint receives, those the API key that registered (or last
-- replaced) it could read; a job event of another product is not queued for it. Endpoints registered before keep
-- receiving every product, as they did.
-- failing_since: the first failed attempt since the endpoint's last 2xx (null while it answers). An endpoint whose
-- attempts all fail for 3 days is disabled by the dispatcher, which sets disabled_at and disabled_reason; both are
-- also set when the account disables it, and cleared when it is enabled again.
ALTER TABLE webhook_endpoints
  ADD COLUMN products        text[]      NOT NULL DEFAULT ARRAY['news', 'stock-report', 'analysis']
                                         CHECK (products <@ ARRAY['news', 'stock-report', 'analysis']),
  ADD COLUMN failing_since   timestamptz,
  ADD COLUMN disabled_at     timestamptz,
  ADD COLUMN disabled_reason text        CHECK (length(disabled_reason) <= 500);
ALTER TABLE webhook_endpoints ALTER COLUMN products DROP DEFAULT;
UPDATE webhook_endpoints SET disabled_at = updated_at, disabled_reason = 'Disabled by the account.' WHERE NOT enabled;

-- The claim counts the attempts in flight (leased rows) per target and per account, to bound both.
CREATE INDEX webhook_deliveries_leased_idx ON webhook_deliveries (tenant_id, endpoint_id, callback_url) WHERE lease_owner IS NOT NULL;

-- Down Migration
DROP INDEX webhook_deliveries_leased_idx;
ALTER TABLE webhook_endpoints DROP COLUMN products, DROP COLUMN failing_since, DROP COLUMN disabled_at, DROP COLUMN disabled_reason;
