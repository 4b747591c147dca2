// GET /api/filings, GET /api/filings/{accession}, GET /api/filings/{accession}/sections/{item}: a US company's SEC
// filings from EDGAR (or, offline, the bundled sample), one filing's sections, and one section's text: sections,
// never whole filings, which are far larger than a reader or a model's context needs. See docs/products.md#filings.
import { z } from 'zod';
import { StockSymbol } from './common';
import { fieldError, quote } from './internal';

/** An accession number as EDGAR writes it: filer id, year, sequence. */
export const ACCESSION_PATTERN = /^\d{10}-\d{2}-\d{6}$/;

/**
 * The forms a list may be narrowed to: what companies file about their business (annual and quarterly reports,
 * current reports, foreign issuers' reports, registrations, proxies, ownership). A closed list, so that a typo
 * such as `10K` is a 400 naming it instead of an empty list; without `forms` every form is listed.
 */
export const FILING_FORMS = [
  '10-K',
  '10-K/A',
  '10-KT',
  '10-Q',
  '10-Q/A',
  '8-K',
  '8-K/A',
  '20-F',
  '20-F/A',
  '40-F',
  '6-K',
  '11-K',
  'S-1',
  'S-1/A',
  'S-3',
  'S-4',
  'S-8',
  'F-1',
  '424B2',
  '424B4',
  'DEF 14A',
  'DEFA14A',
  'PRE 14A',
  'SC 13D',
  'SC 13D/A',
  'SC 13G',
  'SC 13G/A',
  '13F-HR',
  '3',
  '4',
  '5',
  '144',
  'SD',
  'ARS',
] as const;
export type FilingForm = (typeof FILING_FORMS)[number];

export const FILINGS_MAX_FORMS = 10;
export const FILINGS_DEFAULT_LIMIT = 20;
export const FILINGS_MAX_LIMIT = 100;

/** The forms asked for: one comma-separated list, each form upper-cased and trimmed, repeats dropped. */
const FilingForms = z
  .string({ error: fieldError('must be one comma-separated list of forms, e.g. 10-K,8-K (not the parameter repeated)') })
  .transform((list) => [...new Set(list.split(',').map((form) => form.trim().toUpperCase().replace(/\s+/g, ' ')))])
  .pipe(
    z
      .array(
        z.enum(FILING_FORMS, {
          error: (issue) =>
            issue.input === ''
              ? 'names an empty form (two commas in a row, or one at an end)'
              : `${quote(issue.input)} is not a form this API lists (e.g. 10-K, 10-Q, 8-K, 20-F, DEF 14A; see the parameter's description)`,
        }),
      )
      .max(FILINGS_MAX_FORMS, `at most ${FILINGS_MAX_FORMS} forms`),
  )
  .meta({
    description: `Only these forms, comma-separated (case-insensitive), at most ${FILINGS_MAX_FORMS}: ${FILING_FORMS.join(', ')}. An amendment is a form of its own (10-K/A). Default: every form.`,
    examples: ['10-K,10-Q,8-K'],
  });

/** Today's date in UTC, YYYY-MM-DD. */
function todayUtc(): string {
  return new Date().toISOString().slice(0, 10);
}

const Since = z
  .string({ error: fieldError('must be a date such as 2025-01-01') })
  .pipe(z.iso.date({ error: (issue) => `must be a date such as 2025-01-01 (YYYY-MM-DD), got ${quote(issue.input)}` }))
  .refine((date) => date <= todayUtc(), { error: () => `must not be in the future (today is ${todayUtc()} UTC)` })
  .meta({ description: 'Only filings filed on or after this date (YYYY-MM-DD; not in the future).', examples: ['2025-01-01'] });

export const FilingsQuery = z
  .object({
    symbol: StockSymbol.meta({
      description:
        "The company's ticker symbol (case-insensitive). A listing SEC EDGAR does not know (7203.T) gets an empty list and a `note`, not an error.",
      examples: ['AAPL'],
    }),
    forms: FilingForms.optional(),
    since: Since.optional(),
    limit: z.coerce
      .number({ error: 'must be an integer' })
      .int('must be an integer')
      .min(1, 'must be at least 1')
      .max(FILINGS_MAX_LIMIT, `must be at most ${FILINGS_MAX_LIMIT}`)
      .default(FILINGS_DEFAULT_LIMIT)
      .meta({ description: `How many filings to return, newest first (1-${FILINGS_MAX_LIMIT}, default ${FILINGS_DEFAULT_LIMIT}).` }),
  })
  .meta({ id: 'FilingsQuery', description: 'Query parameters of GET /api/filings.' });
export type FilingsQuery = z.infer<typeof FilingsQuery>;

/** The company's symbol, which one filing's routes need beside its accession number (EDGAR files them by company). */
export const FilingQuery = FilingsQuery.pick({ symbol: true }).meta({
  id: 'FilingQuery',
  description: 'Query parameters of the routes of one filing.',
});
export type FilingQuery = z.infer<typeof FilingQuery>;

const Accession = z
  .string()
  .regex(ACCESSION_PATTERN, {
    error: (issue) => `must be an accession number such as 0000320193-25-000079, got ${quote(issue.input)}`,
  })
  .meta({ description: "The filing's accession number, as EDGAR writes it.", examples: ['0000320193-25-000079'] });

export const FilingPathParams = z
  .object({ accession: Accession })
  .meta({ id: 'FilingPathParams', description: 'Path parameters of GET /api/filings/{accession}.' });
export type FilingPathParams = z.infer<typeof FilingPathParams>;

const SectionItem = z
  .string()
  .trim()
  .toUpperCase()
  .pipe(
    z.string().regex(/^[0-9A-Z]{1,4}(?:[.-][0-9A-Z]{1,4}){0,2}$/, {
      error: (issue) => `must be an item such as 1A, 7 or 2.02, got ${quote(issue.input)}`,
    }),
  )
  .meta({
    description:
      'The section: a 10-K item (1A risk factors, 7 MD&A), a 10-Q item (I-2 for Part I Item 2, II-1A for Part II Item 1A), an 8-K item (2.02). Case-insensitive.',
    examples: ['1A'],
  });

export const FilingSectionPathParams = FilingPathParams.extend({ item: SectionItem }).meta({
  id: 'FilingSectionPathParams',
  description: 'Path parameters of GET /api/filings/{accession}/sections/{item}.',
});
export type FilingSectionPathParams = z.infer<typeof FilingSectionPathParams>;

/** Where an answer's data came from: SEC EDGAR itself, or the bundled sample of offline mode (illustrative, not EDGAR's). */
export const FilingsSource = z.enum(['sec_edgar', 'sample']).meta({
  id: 'FilingsSource',
  description:
    "sec_edgar: read from SEC EDGAR (data.sec.gov, www.sec.gov). sample: the bundled sample of offline mode, EDGAR-shaped but illustrative: not a company's real filings.",
});
export type FilingsSource = z.infer<typeof FilingsSource>;

export const FilingCompany = z
  .object({
    cik: z
      .string()
      .regex(/^\d{10}$/)
      .meta({ description: "The company's Central Index Key, 10 digits.", examples: ['0000320193'] }),
    name: z.string().meta({ description: "The registrant's name as EDGAR states it.", examples: ['Apple Inc.'] }),
  })
  .meta({ id: 'FilingCompany', description: 'The company as SEC EDGAR knows it.' });
export type FilingCompany = z.infer<typeof FilingCompany>;

export const FilingSummary = z
  .object({
    accession: z.string().meta({ description: "The filing's accession number.", examples: ['0000320193-25-000079'] }),
    form: z.string().meta({ description: 'The form, as EDGAR states it (10-K, 10-Q, 8-K, 10-K/A, …).', examples: ['10-K'] }),
    filed: z.iso.date().meta({ description: 'When it was filed (YYYY-MM-DD).', examples: ['2025-10-31'] }),
    report_date: z.iso
      .date()
      .nullable()
      .meta({ description: 'The period it reports on; null when EDGAR states none (many 8-Ks).', examples: ['2025-09-27'] }),
    items: z
      .array(z.string())
      .meta({ description: "An 8-K's item numbers (2.02 results, 5.02 officers, …); empty for other forms.", examples: [[]] }),
    url: z.url().meta({
      description: 'The primary document on www.sec.gov: a page anyone can open, without a key.',
      examples: ['https://www.sec.gov/Archives/edgar/data/320193/000032019325000079/aapl-20250927.htm'],
    }),
    primary_document: z.string().meta({ description: "The primary document's file name.", examples: ['aapl-20250927.htm'] }),
  })
  .meta({ id: 'FilingSummary', description: 'One filing of a company.' });
export type FilingSummary = z.infer<typeof FilingSummary>;

const Note = z.string().meta({
  description:
    'Present when the answer needs a word of explanation: a listing SEC EDGAR does not cover (no filings for this market), or sample data (offline mode).',
});

const APPLE = { cik: '0000320193', name: 'Apple Inc.' };
const APPLE_10K = {
  accession: '0000320193-25-000079',
  form: '10-K',
  filed: '2025-10-31',
  report_date: '2025-09-27',
  items: [],
  url: 'https://www.sec.gov/Archives/edgar/data/320193/000032019325000079/aapl-20250927.htm',
  primary_document: 'aapl-20250927.htm',
};

export const FilingListResponse = z
  .object({
    symbol: z.string().meta({ description: 'The symbol asked for, upper case.', examples: ['AAPL'] }),
    company: FilingCompany.nullable().meta({ description: 'The company; null when SEC EDGAR does not know the symbol (see `note`).' }),
    filings: z
      .array(FilingSummary)
      .meta({ description: 'The filings, newest first; empty when none match (or EDGAR does not cover the listing).' }),
    source: FilingsSource,
    note: Note.optional(),
  })
  .meta({
    id: 'FilingListResponse',
    description: "A company's filings, newest first.",
    examples: [
      { symbol: 'AAPL', company: APPLE, filings: [APPLE_10K], source: 'sec_edgar' },
      {
        symbol: '7203.T',
        company: null,
        filings: [],
        source: 'sec_edgar',
        note: 'No SEC filings for this market: SEC EDGAR does not know 7203.T (a listing outside the US, or a company that files no reports with the SEC).',
      },
    ],
  });
export type FilingListResponse = z.infer<typeof FilingListResponse>;

export const FilingSectionSummary = z
  .object({
    item: z.string().meta({ description: 'The item, as the section route takes it.', examples: ['1A'] }),
    title: z.string().meta({ description: "The item's title as the filing states it.", examples: ['Risk Factors'] }),
    characters: z
      .int()
      .min(0)
      .meta({ description: "The length of the section's text, in characters.", examples: [68_412] }),
  })
  .meta({ id: 'FilingSectionSummary', description: 'One section of a filing, without its text.' });
export type FilingSectionSummary = z.infer<typeof FilingSectionSummary>;

export const FilingResponse = z
  .object({
    symbol: z.string().meta({ description: 'The symbol asked for, upper case.', examples: ['AAPL'] }),
    company: FilingCompany,
    filing: FilingSummary,
    sections: z.array(FilingSectionSummary).meta({
      description:
        "The primary document's sections, in document order; read one with GET /api/filings/{accession}/sections/{item}. Empty when the document could not be split into items.",
    }),
    source: FilingsSource,
    note: Note.optional(),
  })
  .meta({
    id: 'FilingResponse',
    description: 'One filing and the sections of its primary document (their items and titles, not their text).',
    examples: [
      {
        symbol: 'AAPL',
        company: APPLE,
        filing: APPLE_10K,
        sections: [
          { item: '1', title: 'Business', characters: 14_203 },
          { item: '1A', title: 'Risk Factors', characters: 68_412 },
          { item: '7', title: "Management's Discussion and Analysis of Financial Condition and Results of Operations", characters: 31_950 },
        ],
        source: 'sec_edgar',
      },
    ],
  });
export type FilingResponse = z.infer<typeof FilingResponse>;

export const FilingSection = z
  .object({
    item: z.string().meta({ description: 'The item.', examples: ['1A'] }),
    title: z.string().meta({ description: "The item's title.", examples: ['Risk Factors'] }),
    text: z.string().meta({
      description: "The section's text: tags removed, whitespace collapsed, paragraphs separated by blank lines.",
      examples: ['The Company’s operations and performance depend significantly on global and regional economic conditions…'],
    }),
  })
  .meta({ id: 'FilingSection', description: "One section of a filing's primary document, as plain text." });
export type FilingSection = z.infer<typeof FilingSection>;

export const FilingSectionResponse = z
  .object({
    symbol: z.string().meta({ description: 'The symbol asked for, upper case.', examples: ['AAPL'] }),
    company: FilingCompany,
    filing: FilingSummary,
    section: FilingSection,
    source: FilingsSource,
    note: Note.optional(),
  })
  .meta({
    id: 'FilingSectionResponse',
    description: 'One section of a filing, with its text: what a reader (or a model) quotes, never the whole filing.',
    examples: [
      {
        symbol: 'AAPL',
        company: APPLE,
        filing: APPLE_10K,
        section: {
          item: '1A',
          title: 'Risk Factors',
          text: 'The Company’s operations and performance depend significantly on global and regional economic conditions and adverse economic conditions can materially adversely affect the Company’s business, results of operations and financial condition.',
        },
        source: 'sec_edgar',
      },
    ],
  });
export type FilingSectionResponse = z.infer<typeof FilingSectionResponse>;
