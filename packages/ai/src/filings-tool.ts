// The `sec_filings` tool: a US company's filings with the SEC as sources the model reads and cites (issue 38 item 3).
// The model lists a company's recent filings, then reads one section at a time (10-K Item 1A risk factors, Item 7
// MD&A; 10-Q Part I Item 2 and Part II Item 1A; an 8-K's items), never a whole filing: a 10-K runs to hundreds of
// thousands of words and would flood the context. A section longer than a page is read in pages. Every page read is
// registered as a document of the run with the filing's identity, so a citation quoting it resolves to a
// `sec_filing` citation naming the filing and the item, and a quote the page does not contain is dropped.
import type { CitedFiling } from '@fin/contracts';
import { AccessionNumber, EdgarError, type Company, type Filing, type FilingsSource } from '@fin/edgar';
import { z } from 'zod';
import type { RetrievedDocument } from './citations';
import { allowedSource, type NewsLookup } from './market-data-tool';
import { defineTool, type ToolDefinition, type ToolOutput } from './tools';

/** The forms a listing shows: annual and quarterly reports and current reports, with their amendments. */
const LISTED_FORMS = ['10-K', '10-K/A', '10-Q', '10-Q/A', '8-K', '8-K/A'];
/** How many filings a listing shows, newest first: about a year of a large filer's reports. */
const LISTED_FILINGS = 20;
/** How many filings of one form the latest one with an item is looked for among (an 8-K with item 2.02). */
const LATEST_SEARCHED = 20;
/** The sections worth reading first in each kind of report; any other item of a filing can be asked for too. */
const KEY_ITEMS: Record<string, readonly string[]> = { '10-K': ['1A', '7'], '10-Q': ['I-2', 'II-1A'] };

/** Largest serialized result handed to the model. */
const MAX_RESULT_BYTES = 24 * 1024;
/** Largest page of a section's text, as JSON (escapes counted): the rest of a result stays under MAX_RESULT_BYTES. */
const PAGE_BYTES = 16 * 1024;

/** Who publishes every filing: the registrant files it, EDGAR serves it. */
const PUBLISHER = 'U.S. Securities and Exchange Commission (EDGAR)';

const SECTION_ITEMS =
  '10-K: "1A" risk factors, "7" MD&A. 10-Q items carry their part: "I-2" MD&A, "II-1A" risk factors. 8-K: "2.02" results of operations, "5.02" officers and directors, "1.01" material agreements, "8.01" other events.';

export const SecFilingsInput = z.object({
  symbol: z.string().min(1).max(12).describe('Ticker symbol of the company, e.g. AAPL.'),
  item: z
    .string()
    .min(1)
    .max(12)
    .optional()
    .describe(`The section to read. Without it the company's recent filings are listed. ${SECTION_ITEMS}`),
  accession: z
    .string()
    .regex(/^\d{10}-\d{2}-\d{6}$/)
    .optional()
    .describe('The accession number of the filing to read the item of, as the listing gives it (0000320193-25-000079).'),
  form: z
    .string()
    .min(1)
    .max(10)
    .optional()
    .describe(
      'With item and no accession: read the item of the latest filing of this form that has it (e.g. form "10-K", item "1A"). Without item: list only filings of this form.',
    ),
  page: z.int().min(1).max(100).optional().describe('A long section is read in pages: the page to read (default 1).'),
});
type SecFilingsInput = z.infer<typeof SecFilingsInput>;

const noFilings = (symbol: string) =>
  `No SEC filings for this market: SEC EDGAR does not know ${symbol} (a listing outside the US, or a company that files no reports with the SEC).`;

/** "Item 1A", "item 1a.", " 2.02 " → "1A", "2.02". */
const normaliseItem = (item: string): string =>
  item
    .trim()
    .replace(/^item\s*/i, '')
    .replace(/\.$/, '')
    .toUpperCase();

/** The filing a citation of one of its sections names. */
function citedFiling(filing: Filing, item: string): CitedFiling {
  return { cik: filing.cik, accession: filing.accession, form: filing.form, filed: filing.filed, item, concept: null };
}

/** The JSON size of a string, escapes included (what it adds to the serialized result). */
const jsonBytes = (text: string): number => Buffer.byteLength(JSON.stringify(text), 'utf8');

/**
 * A section's text in pages of at most PAGE_BYTES, cut between paragraphs (a paragraph longer than a page between
 * sentences, or words): the same text always gives the same pages, so "page 2" means one thing across calls.
 */
export function sectionPages(text: string, pageBytes: number = PAGE_BYTES): string[] {
  if (jsonBytes(text) <= pageBytes) return [text];
  const pieces = text.split('\n\n').flatMap((paragraph) => splitLong(paragraph, pageBytes));
  const pages: string[] = [];
  let current = '';
  for (const piece of pieces) {
    const joined = current === '' ? piece : `${current}\n\n${piece}`;
    if (current !== '' && jsonBytes(joined) > pageBytes) {
      pages.push(current);
      current = piece;
    } else current = joined;
  }
  if (current !== '') pages.push(current);
  return pages;
}

/** A paragraph in pieces that each fit a page: between sentences where it can, else between words, else anywhere. */
function splitLong(paragraph: string, pageBytes: number): string[] {
  if (jsonBytes(paragraph) <= pageBytes) return [paragraph];
  const pieces: string[] = [];
  let rest = paragraph;
  while (jsonBytes(rest) > pageBytes) {
    // The longest prefix that fits (binary search on characters), then back to a sentence or word end inside it.
    let low = 1;
    let high = rest.length;
    while (low < high) {
      const middle = Math.ceil((low + high) / 2);
      if (jsonBytes(rest.slice(0, middle)) <= pageBytes) low = middle;
      else high = middle - 1;
    }
    const fits = rest.slice(0, low);
    const sentence = fits.search(/[.!?]\s[^.!?]*$/);
    const word = fits.lastIndexOf(' ');
    const cut = sentence > low / 2 ? sentence + 2 : word > low / 2 ? word + 1 : low;
    pieces.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut);
  }
  if (rest !== '') pieces.push(rest);
  return pieces;
}

export interface FilingsToolOptions {
  /** The news request's sources: a filing whose URL they do not allow is not read. */
  sources?: NewsLookup['sources'];
  /** The largest page of a section (tests). */
  pageBytes?: number;
}

/**
 * The `sec_filings` tool over a FilingsSource (EDGAR, or the bundled sample offline). A symbol EDGAR does not know
 * is answered as content ("no SEC filings for this market"), as are an unknown accession or item and EDGAR being
 * unavailable, so the model can carry on without filings.
 */
export function filingsTool(source: FilingsSource, options: FilingsToolOptions = {}): ToolDefinition<typeof SecFilingsInput> {
  const pageBytes = options.pageBytes ?? PAGE_BYTES;
  return defineTool({
    name: 'sec_filings',
    description:
      "A US company's filings with the SEC (from EDGAR), to read and cite as primary sources. Without item: the company's recent 10-K, 10-Q and 8-K filings, newest first, each with its accession number, the 8-K's item numbers and the sections worth reading. " +
      `With item and accession (or item and form, for the latest such filing): that one section's text, in pages when it is long. ${SECTION_ITEMS} ` +
      'Read sections, never whole filings. A company listed outside the US has no SEC filings.',
    input: SecFilingsInput,
    timeoutMs: 30_000,
    maxResultBytes: MAX_RESULT_BYTES,
    async execute(input) {
      try {
        if (input.item === undefined) return await listing(source, input);
        return await section(source, input, input.item, { pageBytes, sources: options.sources });
      } catch (error) {
        // The model sees a short reason (EDGAR holding us back, a broken answer) and can answer without filings.
        if (error instanceof EdgarError) return { content: { symbol: input.symbol, error: `edgar_${error.kind}`, message: error.message } };
        throw error;
      }
    },
  });
}

async function listing(source: FilingsSource, input: SecFilingsInput): Promise<ToolOutput> {
  const found = await source.filings(input.symbol, {
    forms: input.form ? [input.form.toUpperCase()] : LISTED_FORMS,
    limit: LISTED_FILINGS,
  });
  if (!found) return { content: { symbol: input.symbol, filings: [], note: noFilings(input.symbol) } };
  return {
    content: {
      symbol: found.company.symbol,
      company: found.company.name,
      cik: found.company.cik,
      sample: found.company.sample,
      filings: found.filings.map((filing) => ({
        form: filing.form,
        filed: filing.filed,
        accession: filing.accession,
        report_date: filing.reportDate,
        ...(filing.items.length > 0 ? { items: filing.items } : {}),
        key_sections: filing.items.length > 0 ? filing.items : (KEY_ITEMS[filing.form.replace(/\/A$/, '')] ?? []),
        url: filing.url,
      })),
    },
  };
}

/** The filing a section is read from: the one named, or the latest of the form that has the item. */
async function filingOf(
  source: FilingsSource,
  input: SecFilingsInput,
  item: string,
): Promise<{ company: Company; filing: Filing } | { content: Record<string, unknown> }> {
  const form = input.form?.toUpperCase();
  const query = input.accession ? {} : form ? { forms: [form], limit: LATEST_SEARCHED } : { limit: 1 };
  const found = await source.filings(input.symbol, query);
  if (!found) return { content: { symbol: input.symbol, note: noFilings(input.symbol) } };
  if (input.accession) {
    const filing = found.filings.find((candidate) => candidate.accession === input.accession);
    return filing
      ? { company: found.company, filing }
      : {
          content: {
            symbol: found.company.symbol,
            error: 'unknown_accession',
            message: `${input.accession} is not a filing of ${found.company.name}: list the filings to find its accession numbers.`,
          },
        };
  }
  if (!form) {
    return {
      content: {
        symbol: found.company.symbol,
        error: 'filing_not_named',
        message: 'Name the filing: give accession, or form for the latest filing of that form.',
      },
    };
  }
  // A current report names its items: the latest 8-K with this item. An annual or quarterly report has them all.
  const filing = found.filings.find((candidate) => candidate.items.length === 0 || candidate.items.includes(item));
  return filing
    ? { company: found.company, filing }
    : {
        content: {
          symbol: found.company.symbol,
          error: 'no_such_filing',
          message: `${found.company.name} has no recent ${form} with item ${item}.`,
        },
      };
}

async function section(
  source: FilingsSource,
  input: SecFilingsInput,
  asked: string,
  options: { pageBytes: number; sources: NewsLookup['sources'] },
): Promise<ToolOutput> {
  const item = normaliseItem(asked);
  const found = await filingOf(source, input, item);
  if ('content' in found) return { content: found.content };
  const { company, filing } = found;
  if (!allowedSource(filing.url, options.sources)) {
    return {
      content: { symbol: company.symbol, error: 'source_not_allowed', message: "The request's sources do not include SEC filings." },
    };
  }
  const document = await source.document(company.symbol, AccessionNumber.parse(filing.accession));
  const described = { form: filing.form, filed: filing.filed, accession: filing.accession, url: filing.url };
  const sectionFound = document?.sections.find((candidate) => candidate.item === item);
  if (!document || !sectionFound) {
    return {
      content: {
        symbol: company.symbol,
        filing: described,
        error: 'unknown_item',
        message: document
          ? `The ${filing.form} filed ${filing.filed} has no item ${item}.`
          : `The ${filing.form} filed ${filing.filed} could not be split into sections.`,
        available_items:
          document?.sections.filter((candidate) => candidate.text !== '').map(({ item: key, title }) => ({ item: key, title })) ?? [],
      },
    };
  }
  const pages = sectionPages(sectionFound.text, options.pageBytes);
  const page = input.page ?? 1;
  const text = pages[page - 1];
  if (text === undefined) {
    return {
      content: {
        symbol: company.symbol,
        filing: described,
        item,
        error: 'no_such_page',
        message: `Item ${item} has ${pages.length} page(s).`,
      },
    };
  }
  const read: RetrievedDocument = {
    url: filing.url,
    title: `${company.name} ${filing.form} filed ${filing.filed}`,
    publisher: PUBLISHER,
    publishedAt: filing.filed,
    source: 'sec_filing',
    // What a quote of this section must occur in: the page the model was shown.
    text,
    filing: citedFiling(filing, item),
  };
  return {
    content: {
      symbol: company.symbol,
      company: company.name,
      sample: filing.sample,
      filing: described,
      item,
      title: sectionFound.title,
      ...(pages.length > 1
        ? {
            page,
            pages: pages.length,
            note:
              page < pages.length
                ? `Page ${page} of ${pages.length} of this section; ask with page ${page + 1} for more.`
                : `The last page (${page} of ${pages.length}) of this section.`,
          }
        : {}),
      text,
    },
    urls: [filing.url],
    documents: [read],
  };
}
