-- Up Migration
-- SEC EDGAR (issue 38; @fin/edgar, docs/filings.md).
--
-- Fair access is one allowance for the whole deployment: EDGAR allows 10 requests a second per user, "regardless of
-- the number of machines used" (https://www.sec.gov/search-filings/edgar-search-assistance/accessing-edgar-data),
-- and blocks an address that exceeds it for 10 minutes. One row holds both: `next_at`, the earliest moment the next
-- request may leave (each request moves it on by one interval, so requests are spaced out and never burst at a
-- window's edge), and `blocked_until`, set when EDGAR answers with its rate-threshold page, which every replica
-- reads before its next request.
CREATE TABLE edgar_fair_access (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  next_at timestamptz NOT NULL DEFAULT now(),
  blocked_until timestamptz,
  block_reason text
);
INSERT INTO edgar_fair_access (id) VALUES (true);

-- EDGAR's JSON answers that change (a company's submissions, its XBRL company facts), gzipped, with when they were
-- fetched: submissions are used for an hour, company facts for a day.
CREATE TABLE edgar_responses (
  key text PRIMARY KEY,
  body bytea NOT NULL,
  fetched_at timestamptz NOT NULL
);

-- Filing documents never change once filed: the filing (as @fin/edgar describes it) and its primary document's
-- sections, extracted once per accession number and kept. A change of the extraction (sections_version) makes the
-- next read fetch and extract them again.
CREATE TABLE edgar_documents (
  accession text PRIMARY KEY,
  cik text NOT NULL,
  filing jsonb NOT NULL,
  sections jsonb NOT NULL,
  sections_version integer NOT NULL,
  fetched_at timestamptz NOT NULL
);

-- Down Migration
DROP TABLE edgar_documents;
DROP TABLE edgar_responses;
DROP TABLE edgar_fair_access;
