-- Up Migration
-- Keys may carry the new `filings` scope (GET /api/filings and one filing's sections). Existing keys keep their
-- scopes: a key is given a product only by whoever manages it (the admin CLI, the portal), never by a migration.
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_check
  CHECK (scopes <@ ARRAY['news', 'stock-report', 'analysis', 'chat', 'tools', 'webhooks', 'filings']::text[]);

-- Down Migration
UPDATE api_keys SET scopes = array_remove(scopes, 'filings');
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_check
  CHECK (scopes <@ ARRAY['news', 'stock-report', 'analysis', 'chat', 'tools', 'webhooks']::text[]);
