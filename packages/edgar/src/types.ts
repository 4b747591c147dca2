// Our shapes for what SEC EDGAR serves, whatever the source (the live API or the bundled sample): camelCase, ISO
// dates, CIKs as 10-digit strings, accession numbers as EDGAR writes them (0000320193-25-000079), and the provenance
// (`sample`) that lets every answer say whether it came from EDGAR or from the bundled sample. The live client parses
// EDGAR's JSON (https://www.sec.gov/search-filings/edgar-application-programming-interfaces) into these; nothing
// downstream sees EDGAR's columnar arrays.
import { z } from 'zod';

/** A Central Index Key, zero-padded to 10 digits as data.sec.gov's paths want it. */
export const Cik = z.string().regex(/^\d{10}$/, 'a CIK is 10 digits, zero-padded');
export type Cik = z.infer<typeof Cik>;

/** An accession number as EDGAR writes it: filer id, year, sequence (0000320193-25-000079). */
export const AccessionNumber = z.string().regex(/^\d{10}-\d{2}-\d{6}$/, 'an accession number looks like 0000320193-25-000079');
export type AccessionNumber = z.infer<typeof AccessionNumber>;

const Provenance = {
  /** True for the bundled sample (offline mode): illustrative figures and text that must be labelled as such. */
  sample: z.boolean(),
};

export const Company = z.object({
  cik: Cik,
  /** The ticker asked for, upper case. */
  symbol: z.string(),
  /** The registrant's name as EDGAR states it. */
  name: z.string(),
  ...Provenance,
});
export type Company = z.infer<typeof Company>;

/** One filing of a company's submissions (data.sec.gov/submissions/CIK##########.json, `filings.recent`). */
export const Filing = z.object({
  cik: Cik,
  accession: AccessionNumber,
  /** 10-K, 10-Q, 8-K, 10-K/A, … as EDGAR states it. */
  form: z.string(),
  filed: z.iso.date(),
  /** The period the filing reports on; null when EDGAR states none (many 8-Ks). */
  reportDate: z.iso.date().nullable(),
  /** 8-K item numbers ("2.02", "5.02"); empty for other forms. */
  items: z.array(z.string()),
  /** The primary document's file name in the filing's folder. */
  primaryDocument: z.string(),
  /** The primary document on www.sec.gov: a page a reader can open without a key. */
  url: z.url({ protocol: /^https$/ }),
  ...Provenance,
});
export type Filing = z.infer<typeof Filing>;

/** A section of a filing's primary document, as plain text: an Item of a 10-K/10-Q, or an item of an 8-K. */
export const FilingSection = z.object({
  /** "1A", "7", "2.02", … (10-K Item 1A risk factors, Item 7 MD&A; 10-Q Part I Item 2 is "I-2", Part II Item 1A "II-1A"). */
  item: z.string(),
  title: z.string(),
  /** The section's text: tags removed, whitespace collapsed, paragraphs separated by blank lines. */
  text: z.string(),
});
export type FilingSection = z.infer<typeof FilingSection>;

export const FilingDocument = z.object({
  filing: Filing,
  sections: z.array(FilingSection),
});
export type FilingDocument = z.infer<typeof FilingDocument>;

/**
 * One reported value of an XBRL concept (data.sec.gov/api/xbrl/companyfacts/CIK##########.json,
 * facts[taxonomy][concept].units[unit][]), with everything needed to trace it to the filing that states it.
 */
export const Fact = z.object({
  /** taxonomy:concept, e.g. us-gaap:Revenues, dei:EntityCommonStockSharesOutstanding. */
  concept: z.string(),
  /** The concept's label as the taxonomy gives it. */
  label: z.string(),
  /** USD, shares, USD/shares, pure, … */
  unit: z.string(),
  value: z.number().refine(Number.isFinite, 'must be a finite number'),
  /** The period's start for a duration (income, cash flow); null for an instant (balance sheet, shares). */
  start: z.iso.date().nullable(),
  end: z.iso.date(),
  /** The fiscal year and period of the filing that reported it (FY, Q1, Q2, Q3). */
  fiscalYear: z.number().int(),
  fiscalPeriod: z.enum(['FY', 'Q1', 'Q2', 'Q3', 'Q4']),
  form: z.string(),
  filed: z.iso.date(),
  accession: AccessionNumber,
  /** The filing's index page on www.sec.gov, where a reader finds the document that states the value. */
  url: z.url({ protocol: /^https$/ }),
});
export type Fact = z.infer<typeof Fact>;

export const CompanyFacts = z.object({
  company: Company,
  /** Every value EDGAR holds for the company, newest filing first within each concept. */
  facts: z.array(Fact),
  /** When these facts were fetched from EDGAR (they are refreshed daily). */
  fetchedAt: z.iso.datetime(),
  ...Provenance,
});
export type CompanyFacts = z.infer<typeof CompanyFacts>;

export interface FilingsQuery {
  /** Only these forms (exact match, e.g. ["10-K", "8-K"]); all forms when absent. */
  forms?: readonly string[];
  /** Only filings filed on or after this date (YYYY-MM-DD). */
  since?: string;
  /** At most this many, newest first. */
  limit?: number;
}

/**
 * SEC EDGAR behind one interface: the live client (data.sec.gov and www.sec.gov, one request budget for the
 * deployment, documents cached by accession number) and the bundled sample for offline mode. Every method answers
 * `null` for a symbol EDGAR does not know (a non-US listing, a fund without filings): callers say "no filings for
 * this market", never an error. Failures of EDGAR itself throw EdgarError.
 */
export interface FilingsSource {
  /** Whether answers come from the bundled sample (offline mode). */
  readonly sample: boolean;
  company(symbol: string): Promise<Company | null>;
  /** The company's filings, newest first. */
  filings(symbol: string, query?: FilingsQuery): Promise<{ company: Company; filings: Filing[] } | null>;
  /** One filing of the company with its primary document split into sections; null when unknown. */
  document(symbol: string, accession: AccessionNumber): Promise<FilingDocument | null>;
  /** The company's XBRL facts; null when EDGAR has none for it. */
  facts(symbol: string): Promise<CompanyFacts | null>;
}
