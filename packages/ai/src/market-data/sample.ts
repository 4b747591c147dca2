// Market data from the bundled sample dataset (@fin/fakes SAMPLE_MARKET_DATA), for offline mode. Every result is
// marked `provider: 'sample', sample: true`; consumers must label what they derive from it as sample data.
import { SAMPLE_MARKET_DATA, type SampleMarketData, type SampleSymbolData } from '@fin/fakes';
import { UnknownSymbolError } from './errors';
import { normaliseNewsQuery, normaliseSymbol, toCompanyNews, toMetrics, toProfile, toQuote } from './finnhub-format';
import { type CompanyNews, type CompanyProfile, type KeyMetrics, type MarketDataCallOptions, type MarketDataProvider, type NewsQuery, type Quote } from './types';

const PROVIDER = 'sample';

/**
 * The sample is a snapshot taken on `asOf`. companyNews therefore ignores the requested window and returns the
 * snapshot's newest items (up to `limit`): offline mode must produce plausible output on any day, and each item's
 * `publishedAt` still tells the truth about its date. Symbols outside the dataset reject with UnknownSymbolError
 * (news: an empty list), exactly like the live provider.
 */
export class SampleMarketDataProvider implements MarketDataProvider {
  readonly name = 'sample' as const;
  /** The day the snapshot pretends to be from (YYYY-MM-DD). */
  readonly asOf: string;

  constructor(private readonly data: SampleMarketData = SAMPLE_MARKET_DATA) {
    this.asOf = data.as_of;
  }

  /** The symbols the dataset covers, e.g. for the offline analyst to tell known from unknown. */
  get symbols(): string[] {
    return Object.keys(this.data.symbols);
  }

  #entry(symbol: string, what: string): [string, SampleSymbolData] {
    const normalised = normaliseSymbol(symbol, PROVIDER);
    const entry = Object.hasOwn(this.data.symbols, normalised) ? this.data.symbols[normalised] : undefined;
    if (!entry) throw new UnknownSymbolError(normalised, PROVIDER, what);
    return [normalised, entry];
  }

  async quote(symbol: string, _options?: MarketDataCallOptions): Promise<Quote> {
    const [normalised, entry] = this.#entry(symbol, 'quote');
    return toQuote(entry.quote, normalised, PROVIDER);
  }

  async profile(symbol: string, _options?: MarketDataCallOptions): Promise<CompanyProfile> {
    const [normalised, entry] = this.#entry(symbol, 'company profile');
    return toProfile(entry.profile, normalised, PROVIDER);
  }

  async metrics(symbol: string, _options?: MarketDataCallOptions): Promise<KeyMetrics> {
    const [normalised, entry] = this.#entry(symbol, 'metrics');
    return toMetrics(entry.metrics, normalised, PROVIDER);
  }

  async companyNews(symbol: string, query: NewsQuery): Promise<CompanyNews> {
    const normalised = normaliseSymbol(symbol, PROVIDER);
    const window = normaliseNewsQuery(query, PROVIDER);
    const entry = Object.hasOwn(this.data.symbols, normalised) ? this.data.symbols[normalised] : undefined;
    return toCompanyNews(entry?.news ?? [], normalised, window, PROVIDER);
  }
}
