// The filings routes: a company's SEC filings, one filing's sections and one section's text, read from a
// FilingsSource (SEC EDGAR through @fin/edgar's client, or its bundled sample offline). Market data is this service's;
// the answers are EDGAR's facts in the API's snake_case, never the whole document. Their Cache-Control is the route
// table's (a list for 5 minutes; a filing, which never changes once accepted, for a day). See docs/products.md.
import type { FilingCompany, FilingListResponse, FilingResponse, FilingSectionResponse, FilingSummary } from '@fin/contracts';
import { EdgarError, type Company, type Filing, type FilingDocument, type FilingsSource } from '@fin/edgar';
import { AppError, notFound, type HandlerTable } from '@fin/http';

const SAMPLE_NOTE =
  "Sample data (offline mode): EDGAR-shaped filings bundled with the service for trying it out, illustrative and not the company's real filings.";

/** What a symbol SEC EDGAR does not know gets: not an error, an explanation. */
function noFilingsNote(symbol: string): string {
  return `No SEC filings for this market: SEC EDGAR does not know ${symbol} (a listing outside the US, or a company that files no reports with the SEC).`;
}

const sourceOf = (sample: boolean): FilingListResponse['source'] => (sample ? 'sample' : 'sec_edgar');
const noteOf = (sample: boolean): { note?: string } => (sample ? { note: SAMPLE_NOTE } : {});

const companyOf = ({ cik, name }: Company): FilingCompany => ({ cik, name });

function summaryOf(filing: Filing): FilingSummary {
  return {
    accession: filing.accession,
    form: filing.form,
    filed: filing.filed,
    report_date: filing.reportDate,
    items: filing.items,
    url: filing.url,
    primary_document: filing.primaryDocument,
  };
}

/**
 * EDGAR's own failures, translated at the edge: 503 with Retry-After while EDGAR holds the deployment back (its
 * 10 requests a second were exceeded) or is down, 502 for an answer we cannot use. Anything else is ours (500).
 */
async function fromEdgar<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (!(error instanceof EdgarError)) throw error;
    const retryAfter = error.retryAfterSeconds;
    const unavailable = error.status === 503;
    throw new AppError(
      unavailable ? 'service_unavailable' : 'bad_gateway',
      unavailable
        ? `SEC EDGAR is not answering this service right now${retryAfter === undefined ? '' : `; try again in ${retryAfter} s`}.`
        : 'SEC EDGAR gave an answer this service could not read; try again later.',
      { cause: error, ...(retryAfter === undefined ? {} : { headers: { 'Retry-After': String(retryAfter) } }) },
    );
  }
}

/** The filing of `symbol` with `accession`, or 404 saying which of the two EDGAR does not know. */
async function documentOf(
  source: FilingsSource,
  symbol: string,
  accession: string,
): Promise<{ company: Company; document: FilingDocument }> {
  const [company, document] = await fromEdgar(() => Promise.all([source.company(symbol), source.document(symbol, accession)]));
  if (company === null) throw notFound(noFilingsNote(symbol));
  if (document === null) throw notFound(`${company.name} (${symbol}) has no filing ${accession} in SEC EDGAR.`);
  return { company, document };
}

/** The handlers of GET /api/filings, /api/filings/{accession} and /api/filings/{accession}/sections/{item}. */
export function createFilingsHandlers(source: FilingsSource): HandlerTable {
  return {
    listFilings: async ({ query }): Promise<FilingListResponse> => {
      const { symbol, forms, since, limit } = query;
      const found = await fromEdgar(() => source.filings(symbol, { ...(forms ? { forms } : {}), ...(since ? { since } : {}), limit }));
      if (found === null) {
        return { symbol, company: null, filings: [], source: sourceOf(source.sample), note: noFilingsNote(symbol) };
      }
      return {
        symbol,
        company: companyOf(found.company),
        filings: found.filings.map(summaryOf),
        source: sourceOf(found.company.sample),
        ...noteOf(found.company.sample),
      };
    },
    getFiling: async ({ params, query }): Promise<FilingResponse> => {
      const { company, document } = await documentOf(source, query.symbol, params.accession);
      return {
        symbol: query.symbol,
        company: companyOf(company),
        filing: summaryOf(document.filing),
        sections: document.sections.map(({ item, title, text }) => ({ item, title, characters: text.length })),
        source: sourceOf(document.filing.sample),
        ...noteOf(document.filing.sample),
      };
    },
    getFilingSection: async ({ params, query }): Promise<FilingSectionResponse> => {
      const { company, document } = await documentOf(source, query.symbol, params.accession);
      const section = document.sections.find((candidate) => candidate.item.toUpperCase() === params.item);
      if (section === undefined) {
        const items = document.sections.map((candidate) => candidate.item);
        throw notFound(
          `Filing ${params.accession} (${document.filing.form}) has no item ${params.item}; ${items.length === 0 ? 'its document could not be split into items' : `its items are ${items.join(', ')}`}.`,
        );
      }
      return {
        symbol: query.symbol,
        company: companyOf(company),
        filing: summaryOf(document.filing),
        section: { item: section.item, title: section.title, text: section.text },
        source: sourceOf(document.filing.sample),
        ...noteOf(document.filing.sample),
      };
    },
  };
}
