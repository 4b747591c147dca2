// Market data from the bundled sample dataset (SAMPLE_MARKET_DATA), for offline mode. Every result is marked
// `provider: 'sample', sample: true`; consumers must label what they derive from it as sample data.
import { SAMPLE_MARKET_DATA, type SampleMarketData, type SampleSymbolData } from '@fin/offline';
import { UnknownSymbolError } from './errors';
import { normaliseNewsQuery, normaliseSymbol, toCompanyNews, toMetrics, toProfile, toQuote } from './finnhub-format';
import { synthesiseCompany, synthesiseNews } from './sample-synthesis';
import {
  type CompanyNews,
  type CompanyProfile,
  type KeyMetrics,
  type MarketDataCallOptions,
  type MarketDataProvider,
  type MarketDataResource,
  type NewsQuery,
  type Quote,
  resourceUrlUnder,
} from './types';

const PROVIDER = 'sample';
/** Where the sample figures pretend to be served from: a reserved name (RFC 2606), like the sample news links. */
const SAMPLE_RESOURCE_BASE = 'https://sample-market-data.example.com/api/v1';

/**
 * Offline mode answers for any well-formed symbol, so unlike the live provider this one never reports an unknown
 * symbol: a symbol outside the dataset gets a company invented from its hash and the bundled figures
 * (sample-synthesis.ts), the same on every call. The sample is a snapshot taken on `asOf`. companyNews therefore
 * ignores the requested window and returns the snapshot's newest items, followed by invented older ones, so that
 * it returns exactly `limit` items; each item's `publishedAt` still tells the truth about its date.
 */
export class SampleMarketDataProvider implements MarketDataProvider {
  readonly name = 'sample' as const;
  readonly publisher = 'Sample market data (offline mode)';
  /** The day the snapshot pretends to be from (YYYY-MM-DD). */
  readonly asOf: string;

  constructor(private readonly data: SampleMarketData = SAMPLE_MARKET_DATA) {
    this.asOf = data.as_of;
  }

  resourceUrl(kind: MarketDataResource, symbol: string): string {
    return resourceUrlUnder(SAMPLE_RESOURCE_BASE, kind, symbol);
  }

  /** The symbols the bundled dataset covers; others get invented sample data. */
  get symbols(): string[] {
    return Object.keys(this.data.symbols);
  }

  /** The bundled entry, or an invented one; undefined only for a dataset with no company to invent from. */
  #company(normalised: string): SampleSymbolData | undefined {
    return Object.hasOwn(this.data.symbols, normalised) ? this.data.symbols[normalised] : synthesiseCompany(normalised, this.data);
  }

  #entry(symbol: string, what: string): [string, SampleSymbolData] {
    const normalised = normaliseSymbol(symbol, PROVIDER);
    const entry = this.#company(normalised);
    if (!entry) throw new UnknownSymbolError(normalised, PROVIDER, what);
    return [normalised, entry];
  }

  quote(symbol: string, _options?: MarketDataCallOptions): Promise<Quote> {
    return Promise.try(() => {
      const [normalised, entry] = this.#entry(symbol, 'quote');
      return toQuote(entry.quote, normalised, PROVIDER);
    });
  }

  profile(symbol: string, _options?: MarketDataCallOptions): Promise<CompanyProfile> {
    return Promise.try(() => {
      const [normalised, entry] = this.#entry(symbol, 'company profile');
      return toProfile(entry.profile, normalised, PROVIDER);
    });
  }

  metrics(symbol: string, _options?: MarketDataCallOptions): Promise<KeyMetrics> {
    return Promise.try(() => {
      const [normalised, entry] = this.#entry(symbol, 'metrics');
      return toMetrics(entry.metrics, normalised, PROVIDER);
    });
  }

  companyNews(symbol: string, query: NewsQuery): Promise<CompanyNews> {
    return Promise.try(() => {
      const normalised = normaliseSymbol(symbol, PROVIDER);
      const window = normaliseNewsQuery(query, PROVIDER);
      const entry = this.#company(normalised);
      const bundled = entry?.news ?? [];
      const missing = window.limit - bundled.length;
      // Invented items are older than the snapshot's, so the snapshot's own news always comes first.
      const before = Math.min(Date.parse(`${this.asOf}T23:00:00Z`) / 1000, ...bundled.map((item) => item.datetime));
      const items = entry && missing > 0 ? [...bundled, ...synthesiseNews(normalised, entry, missing, before)] : bundled;
      return toCompanyNews(items, normalised, window, PROVIDER);
    });
  }
}
