// Our own shapes for market data, whatever the provider: camelCase, plain numbers in stated units, ISO dates, and
// the provenance (`provider`, `sample`) that lets every result say whether it came from a live API or the bundled
// sample. Providers parse what they return with these schemas, so a tool never hands the model an unchecked shape.
import { z } from 'zod';

const Provenance = {
  /** Which provider produced the data. */
  provider: z.enum(['finnhub', 'sample']),
  /** True for the bundled sample dataset: illustrative figures that must be labelled as such. */
  sample: z.boolean(),
};

const amount = z.number().refine(Number.isFinite, 'must be a finite number');
const optionalAmount = amount.nullable();

export const Quote = z.object({
  symbol: z.string(),
  price: amount,
  /** Absolute change against the previous close; null when the provider does not state it. */
  change: optionalAmount,
  changePercent: optionalAmount,
  open: amount,
  high: amount,
  low: amount,
  previousClose: amount,
  /** When the price was last updated (ISO 8601, UTC). */
  asOf: z.iso.datetime(),
  ...Provenance,
});
export type Quote = z.infer<typeof Quote>;

export const CompanyProfile = z.object({
  symbol: z.string(),
  name: z.string(),
  country: z.string().nullable(),
  currency: z.string().nullable(),
  exchange: z.string().nullable(),
  industry: z.string().nullable(),
  ipoDate: z.iso.date().nullable(),
  /** In `currency` units (not millions). */
  marketCap: optionalAmount,
  /** A share count (not millions). */
  sharesOutstanding: optionalAmount,
  website: z.url({ protocol: /^https?$/ }).nullable(),
  logoUrl: z.url({ protocol: /^https?$/ }).nullable(),
  phone: z.string().nullable(),
  ...Provenance,
});
export type CompanyProfile = z.infer<typeof CompanyProfile>;

export const MetricPoint = z.object({ period: z.iso.date(), value: amount });
export type MetricPoint = z.infer<typeof MetricPoint>;

/** Key ratios. `…Percent` fields are percentages (24.9 means 24.9 %); ratios are plain ratios. Null when not reported. */
export const KeyMetrics = z.object({
  symbol: z.string(),
  week52High: optionalAmount,
  week52Low: optionalAmount,
  peRatioTtm: optionalAmount,
  epsTtm: optionalAmount,
  priceToSalesTtm: optionalAmount,
  priceToBook: optionalAmount,
  revenueGrowthTtmYoyPercent: optionalAmount,
  epsGrowthTtmYoyPercent: optionalAmount,
  grossMarginTtmPercent: optionalAmount,
  operatingMarginTtmPercent: optionalAmount,
  netProfitMarginTtmPercent: optionalAmount,
  returnOnEquityTtmPercent: optionalAmount,
  debtToEquity: optionalAmount,
  currentRatio: optionalAmount,
  beta: optionalAmount,
  dividendYieldPercent: optionalAmount,
  /** In the company's reporting currency (not millions). */
  marketCap: optionalAmount,
  /** Fiscal-year history, newest first. */
  annual: z.object({ eps: z.array(MetricPoint), netMarginPercent: z.array(MetricPoint) }),
  ...Provenance,
});
export type KeyMetrics = z.infer<typeof KeyMetrics>;

export const NewsItem = z.object({
  id: z.string(),
  headline: z.string().min(1),
  summary: z.string(),
  source: z.string(),
  /** Where the article lives; only http(s) links are kept. */
  url: z.url({ protocol: /^https?$/ }),
  imageUrl: z.url({ protocol: /^https?$/ }).nullable(),
  publishedAt: z.iso.datetime(),
  category: z.string(),
  relatedSymbols: z.array(z.string()),
});
export type NewsItem = z.infer<typeof NewsItem>;

export const CompanyNews = z.object({
  symbol: z.string(),
  /** The requested window (YYYY-MM-DD, inclusive). */
  from: z.iso.date(),
  to: z.iso.date(),
  /** Newest first, at most the requested limit. */
  items: z.array(NewsItem),
  ...Provenance,
});
export type CompanyNews = z.infer<typeof CompanyNews>;

export type MarketDataResource = 'quote' | 'profile' | 'metrics';

/** The provider path of each resource (Finnhub's; the sample provider mirrors them). */
const RESOURCE_PATHS: Readonly<Record<MarketDataResource, string>> = {
  quote: '/quote',
  profile: '/stock/profile2',
  metrics: '/stock/metric',
};

/** `base` + the resource's path + its query (the symbol; all metrics for `metrics`). */
export function resourceUrlUnder(base: string, kind: MarketDataResource, symbol: string): string {
  const url = new URL(`${base}${RESOURCE_PATHS[kind]}`);
  url.searchParams.set('symbol', symbol.trim().toUpperCase());
  if (kind === 'metrics') url.searchParams.set('metric', 'all');
  return url.toString();
}

export interface MarketDataCallOptions {
  /** Aborts the call (e.g. the tool loop's per-tool timeout); the call rejects with MarketDataError 'aborted'. */
  signal?: AbortSignal;
}

export interface NewsQuery extends MarketDataCallOptions {
  /** First day, inclusive: YYYY-MM-DD or a Date (its UTC day). */
  from: string | Date;
  /** Last day, inclusive. */
  to: string | Date;
  /** Most items returned, newest first: 1 to 50, default 10. */
  limit?: number;
}

/**
 * Market data for one symbol at a time. Symbols are trimmed and upper-cased first; a malformed one rejects with
 * MarketDataError 'invalid_request' before any request is made.
 *
 * Unknown symbols (live providers): quote, profile and metrics reject with UnknownSymbolError (not retryable),
 * because the providers answer them with zeros or empty objects that must not reach the model as real figures.
 * companyNews returns an empty list instead: "no news" and "unknown symbol" look the same to every news API.
 * The offline sample provider has no unknown symbols: it makes up labelled sample data for any well-formed one.
 */
export interface MarketDataProvider {
  readonly name: 'finnhub' | 'sample';
  /** Who publishes the figures, as a citation names them. */
  readonly publisher: string;
  /**
   * The resource the figures of `kind` for a symbol are read from, without credentials: the URL a citation of
   * them names. Finnhub's endpoint URLs; the sample provider's invented ones under sample-market-data.example.com.
   */
  resourceUrl(kind: MarketDataResource, symbol: string): string;
  quote(symbol: string, options?: MarketDataCallOptions): Promise<Quote>;
  profile(symbol: string, options?: MarketDataCallOptions): Promise<CompanyProfile>;
  metrics(symbol: string, options?: MarketDataCallOptions): Promise<KeyMetrics>;
  companyNews(symbol: string, query: NewsQuery): Promise<CompanyNews>;
}
