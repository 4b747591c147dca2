-- Up Migration
-- `sec_filings` became the name of one of the service's own tools (issue 38: news and analysis read SEC filings'
-- sections through it), so it is reserved for customer tools as `market_data` and `web_search` are
-- (1764460800000_reserved-tool-names.sql): the Messages API refuses a request whose tools list one name twice, so a
-- customer tool of this name would make every run that offers it fail. The tools saved under it before are disabled,
-- and disabled_reason says why; saving the tool under another name clears it.
UPDATE customer_tools
   SET enabled = false,
       disabled_reason = format('Disabled by the service: "%s" is the name of one of the service''s own tools, and the model cannot be '
                                'offered two tools with one name (runs that offered this tool failed). Rename the tool to enable it again.',
                                name),
       updated_at = now()
 WHERE name = 'sec_filings';

-- Down Migration
-- The tools stay disabled: enabling them again would make their runs fail again.
