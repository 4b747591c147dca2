// SEC EDGAR's JSON shapes as the bundled sample stores them and the test fakes serve them: only the fields the
// sample fills in, named and typed as EDGAR's own files have them
// (https://www.sec.gov/search-filings/edgar-application-programming-interfaces). @fin/edgar parses these with
// its own lenient schemas, exactly as it parses what data.sec.gov answers.

/** One entry of https://www.sec.gov/files/company_tickers.json, an object keyed "0", "1", … */
export interface EdgarTickerEntry {
  cik_str: number;
  ticker: string;
  title: string;
}

/** `filings.recent` of a submissions file: one array per field, index i of every array describes filing i. */
export interface EdgarRecentFilings {
  accessionNumber: string[];
  filingDate: string[];
  /** "" when the filing states no period. */
  reportDate: string[];
  acceptanceDateTime: string[];
  act: string[];
  form: string[];
  fileNumber: string[];
  filmNumber: string[];
  /** 8-K item numbers, comma-separated ("2.02,9.01"); "" for other forms. */
  items: string[];
  core_type: string[];
  size: number[];
  isXBRL: number[];
  isInlineXBRL: number[];
  primaryDocument: string[];
  primaryDocDescription: string[];
}

/** https://data.sec.gov/submissions/CIK##########.json */
export interface EdgarSubmissions {
  /** Unpadded, as a string ("320193"). */
  cik: string;
  entityType: string;
  sic: string;
  sicDescription: string;
  name: string;
  tickers: string[];
  exchanges: string[];
  fiscalYearEnd: string;
  stateOfIncorporation: string;
  filings: { recent: EdgarRecentFilings; files: Array<{ name: string; filingCount: number; filingFrom: string; filingTo: string }> };
}

/** One value of a concept: facts[taxonomy][concept].units[unit][i]. `start` only for durations, `frame` only on the value EDGAR chose for a calendar period. */
export interface EdgarFactValue {
  start?: string;
  end: string;
  val: number;
  accn: string;
  fy: number | null;
  fp: string | null;
  form: string;
  filed: string;
  frame?: string;
}

export interface EdgarConcept {
  label: string | null;
  description: string | null;
  units: Record<string, EdgarFactValue[]>;
}

/** https://data.sec.gov/api/xbrl/companyfacts/CIK##########.json; `cik` is a number here. */
export interface EdgarCompanyFacts {
  cik: number;
  entityName: string;
  facts: Record<string, Record<string, EdgarConcept>>;
}

export interface SampleEdgarData {
  sample: true;
  as_of: string;
  disclaimer: string;
  /** The body of /files/company_tickers.json. */
  companyTickers: Record<string, EdgarTickerEntry>;
  /** Keyed by the 10-digit CIK. */
  submissions: Record<string, EdgarSubmissions>;
  /** Keyed by the 10-digit CIK. */
  companyFacts: Record<string, EdgarCompanyFacts>;
  /** Primary documents (HTML) keyed by their path below /Archives/edgar/data/: `{cik unpadded}/{accession without dashes}/{file}`. */
  documents: Record<string, string>;
}
