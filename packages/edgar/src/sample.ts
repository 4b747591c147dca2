// Offline mode's FilingsSource: the bundled EDGAR sample (@fin/offline sampleEdgarData: company_tickers.json,
// submissions and companyfacts JSON, primary documents as HTML) read through the same parsers as EDGAR's live
// answers, so offline mode runs the real parsing. Everything it returns carries `sample: true`, and its links point
// at a reserved host (RFC 2606) rather than at www.sec.gov, where the invented accession numbers do not exist.
import { sampleEdgarData } from '@fin/offline';
import { type Links, padCik, parseCompanyFacts, parseCompanyTickers, parseSubmissions, type TickerRecord } from './parse';
import { normaliseSymbol, selectFilings } from './query';
import { extractSections } from './sections';
import { type AccessionNumber, type Company, type CompanyFacts, type FilingDocument, type FilingsSource } from './types';

const SAMPLE_LINKS: Links = { archiveBase: 'https://sample-edgar.example.com', sample: true };

class SampleFilingsSource implements FilingsSource {
  readonly sample = true;
  readonly #data = sampleEdgarData();
  readonly #tickers: Map<string, TickerRecord> = parseCompanyTickers(this.#data.companyTickers);
  readonly #fetchedAt = new Date(`${this.#data.as_of}T00:00:00Z`);

  #company(symbol: string): Company | null {
    const normalised = normaliseSymbol(symbol);
    const record = this.#tickers.get(normalised);
    return record ? { cik: record.cik, symbol: normalised, name: record.title, sample: true } : null;
  }

  company(symbol: string): Promise<Company | null> {
    return Promise.resolve(this.#company(symbol));
  }

  #submissions(symbol: string) {
    const company = this.#company(symbol);
    const body = company && this.#data.submissions[company.cik];
    return company && body ? parseSubmissions(body, company.symbol, SAMPLE_LINKS) : null;
  }

  filings: FilingsSource['filings'] = (symbol, query) => {
    const found = this.#submissions(symbol);
    return Promise.resolve(found && { company: found.company, filings: selectFilings(found.filings, query) });
  };

  document(symbol: string, accession: AccessionNumber): Promise<FilingDocument | null> {
    const filing = this.#submissions(symbol)?.filings.find((candidate) => candidate.accession === accession);
    if (!filing) return Promise.resolve(null);
    const path = `${Number(filing.cik)}/${accession.replaceAll('-', '')}/${filing.primaryDocument}`;
    const html = this.#data.documents[path];
    return Promise.resolve(html === undefined ? null : { filing, sections: extractSections(html, filing.form) });
  }

  facts(symbol: string): Promise<CompanyFacts | null> {
    const company = this.#company(symbol);
    const body = company && this.#data.companyFacts[padCik(company.cik)];
    return Promise.resolve(company && body ? parseCompanyFacts(body, company, SAMPLE_LINKS, this.#fetchedAt) : null);
  }
}

/** The bundled EDGAR sample for offline mode (AAPL, MSFT, NVDA, GOOGL, AMZN, TSLA); other symbols get null. */
export function sampleFilingsSource(): FilingsSource {
  return new SampleFilingsSource();
}
