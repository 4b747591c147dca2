// EDGAR's JSON into our shapes (types.ts). The schemas below read only the fields we use and ignore the rest, so an
// added field never breaks us, while a field we use that changes shape fails loudly (EdgarError invalid_response)
// instead of producing wrong filings or figures. The formats are documented at
// https://www.sec.gov/search-filings/edgar-application-programming-interfaces; the same parsers read the live
// answers and the bundled sample (sample.ts).
import { z } from 'zod';
import { EdgarError } from './errors';
import { AccessionNumber, type Cik, type Company, CompanyFacts, type Fact, Filing } from './types';

/** Where readers open filings: EDGAR's public archive (the live source) or the sample's reserved host. */
export interface Links {
  /** Origin of the archive pages, e.g. https://www.sec.gov. */
  archiveBase: string;
  sample: boolean;
}

export const padCik = (cik: number | string): Cik => String(cik).replace(/^0+/, '').padStart(10, '0');
const unpadded = (cik: Cik): string => cik.replace(/^0+/, '');
const folder = (links: Links, cik: Cik, accession: string) =>
  `${links.archiveBase}/Archives/edgar/data/${unpadded(cik)}/${accession.replaceAll('-', '')}`;

/** The filing's index page, which lists its documents (and is where a fact's filing is opened). */
const filingIndexUrl = (links: Links, cik: Cik, accession: string): string => `${folder(links, cik, accession)}/${accession}-index.htm`;

/** A document of the filing, e.g. its primary document. */
const documentUrl = (links: Links, cik: Cik, accession: string, file: string): string => `${folder(links, cik, accession)}/${file}`;

function invalid(what: string, error: z.ZodError): EdgarError {
  const issue = error.issues[0];
  const at = issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'unexpected shape';
  return new EdgarError('invalid_response', `EDGAR's ${what} is not in its documented shape (${at})`, { cause: error });
}

function parseWith<T extends z.ZodType>(schema: T, body: unknown, what: string): z.output<T> {
  const result = schema.safeParse(body);
  if (!result.success) throw invalid(what, result.error);
  return result.data;
}

// --- company_tickers.json --------------------------------------------------------------------------------------------

const TickerEntry = z.object({ cik_str: z.number().int().positive(), ticker: z.string().min(1), title: z.string() });
const CompanyTickers = z.record(z.string(), TickerEntry);

export interface TickerRecord {
  cik: Cik;
  title: string;
}

/** https://www.sec.gov/files/company_tickers.json (an object keyed "0", "1", …) → upper-case ticker → CIK and title. */
export function parseCompanyTickers(body: unknown): Map<string, TickerRecord> {
  const entries = parseWith(CompanyTickers, body, 'company_tickers.json');
  const map = new Map<string, TickerRecord>();
  for (const entry of Object.values(entries)) {
    const ticker = entry.ticker.toUpperCase();
    // The file lists a company's main listing first; a later duplicate ticker does not replace it.
    if (!map.has(ticker)) map.set(ticker, { cik: padCik(entry.cik_str), title: entry.title });
  }
  return map;
}

// --- submissions ---------------------------------------------------------------------------------------------------

const Recent = z
  .object({
    accessionNumber: z.array(z.string()),
    filingDate: z.array(z.string()),
    reportDate: z.array(z.string()),
    form: z.array(z.string()),
    // Older submissions files lack `items`; every value is "" for forms other than 8-K.
    items: z.array(z.string()).optional(),
    primaryDocument: z.array(z.string()),
  })
  .refine(
    (recent) =>
      [recent.filingDate, recent.reportDate, recent.form, recent.items ?? recent.form, recent.primaryDocument].every(
        (column) => column.length === recent.accessionNumber.length,
      ),
    'the columns of filings.recent differ in length',
  );

const Submissions = z.object({
  cik: z.union([z.string(), z.number()]),
  name: z.string(),
  filings: z.object({ recent: Recent }),
});

/** "2.02,9.01" → ["2.02", "9.01"]. */
export const splitItems = (items: string): string[] =>
  items
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');

/**
 * https://data.sec.gov/submissions/CIK##########.json → the company and its filings, newest first. Each filing's
 * url is its primary document in EDGAR's archive (its index page when it has none, as old paper filings do).
 */
export function parseSubmissions(body: unknown, symbol: string, links: Links): { company: Company; filings: Filing[] } {
  const submissions = parseWith(Submissions, body, 'submissions file');
  const cik = padCik(submissions.cik);
  const recent = submissions.filings.recent;
  const filings = recent.accessionNumber.map((accession, index) => {
    const primaryDocument = recent.primaryDocument[index] ?? '';
    const reportDate = recent.reportDate[index] ?? '';
    return parseWith(
      Filing,
      {
        cik,
        accession,
        form: recent.form[index],
        filed: recent.filingDate[index],
        reportDate: reportDate === '' ? null : reportDate,
        items: splitItems(recent.items?.[index] ?? ''),
        primaryDocument,
        url: primaryDocument === '' ? filingIndexUrl(links, cik, accession) : documentUrl(links, cik, accession, primaryDocument),
        sample: links.sample,
      },
      `filing ${accession}`,
    );
  });
  filings.sort((a, b) => b.filed.localeCompare(a.filed) || b.accession.localeCompare(a.accession));
  return { company: { cik, symbol: symbol.toUpperCase(), name: submissions.name, sample: links.sample }, filings };
}

// --- companyfacts --------------------------------------------------------------------------------------------------

// Strict for what we use (dates, the accession number, a finite value), as each becomes a field of Fact; the links
// are then built from validated parts, so the facts need no second validation (a company's facts run to 100,000
// values, and checking each value's URL again would cost about a second).
const FactValue = z.object({
  start: z.iso.date().optional(),
  end: z.iso.date(),
  val: z.number(),
  accn: AccessionNumber,
  fy: z.number().int().nullable().optional(),
  fp: z.string().nullable().optional(),
  form: z.string(),
  filed: z.iso.date(),
});
const Concept = z.object({
  label: z.string().nullable().optional(),
  units: z.record(z.string(), z.array(FactValue)),
});
const CompanyFactsBody = z.object({
  cik: z.union([z.number(), z.string()]),
  entityName: z.string(),
  // A company without XBRL filings has an empty `facts` object.
  facts: z.record(z.string(), z.record(z.string(), Concept)),
});

const FISCAL_PERIODS = new Set(['FY', 'Q1', 'Q2', 'Q3', 'Q4']);

/** "EarningsPerShareDiluted" → "Earnings Per Share Diluted", for the rare concept EDGAR gives no label. */
const conceptWords = (concept: string): string => concept.replace(/([a-z0-9])([A-Z])/g, '$1 $2');

/**
 * https://data.sec.gov/api/xbrl/companyfacts/CIK##########.json → every value with its provenance, grouped by
 * concept, newest filing first within a concept. A value EDGAR states without a fiscal year or with a fiscal
 * period other than FY/Q1–Q4 cannot be placed in a report and is left out.
 */
export function parseCompanyFacts(body: unknown, company: Company, links: Links, fetchedAt: Date): CompanyFacts {
  const parsed = parseWith(CompanyFactsBody, body, 'company facts');
  const facts: Fact[] = [];
  for (const [taxonomy, concepts] of Object.entries(parsed.facts)) {
    for (const [name, concept] of Object.entries(concepts)) {
      const group: Fact[] = [];
      for (const [unit, values] of Object.entries(concept.units)) {
        for (const value of values) {
          if (value.fy === null || value.fy === undefined || !value.fp || !FISCAL_PERIODS.has(value.fp)) continue;
          group.push({
            concept: `${taxonomy}:${name}`,
            label: concept.label ?? conceptWords(name),
            unit,
            value: value.val,
            start: value.start ?? null,
            end: value.end,
            fiscalYear: value.fy,
            fiscalPeriod: value.fp as Fact['fiscalPeriod'],
            form: value.form,
            filed: value.filed,
            accession: value.accn,
            url: filingIndexUrl(links, company.cik, value.accn),
          });
        }
      }
      group.sort((a, b) => b.filed.localeCompare(a.filed) || b.end.localeCompare(a.end) || (b.start ?? '').localeCompare(a.start ?? ''));
      facts.push(...group);
    }
  }
  const envelope = parseWith(
    CompanyFacts,
    { company, facts: facts.slice(0, 1), fetchedAt: fetchedAt.toISOString(), sample: links.sample },
    'company facts',
  );
  return { ...envelope, facts };
}
