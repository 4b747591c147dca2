-- Up Migration
-- Customer tools named like one of the service's own tools (issue 34). The engine offers the model `market_data`
-- and the server-side `web_search` beside a tenant's tools, and the Messages API refuses a request whose tools list
-- one name twice: such a tool made every run that offered it fail. The API refuses these names from now on
-- (RESERVED_TOOL_NAMES in @fin/contracts, compared exactly as the Messages API does); the tools saved before are
-- disabled here, and disabled_reason says why, for the API's tool record and the portal's tools page. Saving the
-- tool under another name clears it; enabling it under this name is refused.
--
-- disabled_reason: why the service disabled a tool; null when it did not (the customer's own `enabled: false` has none).
ALTER TABLE customer_tools ADD COLUMN disabled_reason text;

UPDATE customer_tools
   SET enabled = false,
       disabled_reason = format('Disabled by the service: "%s" is the name of one of the service''s own tools, and the model cannot be '
                                'offered two tools with one name (runs that offered this tool failed). Rename the tool to enable it again.',
                                name),
       updated_at = now()
 WHERE name IN ('market_data', 'web_search');

-- Down Migration
-- The tools stay disabled: enabling them again would make their runs fail again.
ALTER TABLE customer_tools DROP COLUMN disabled_reason;
