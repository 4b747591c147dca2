// Finnhub's documented response shapes (https://finnhub.io/docs/api), as the bundled sample dataset stores them
// and as the test fakes' Finnhub server serves them.

/** `GET /quote`: c current, d change, dp change %, h/l/o day high/low/open, pc previous close, t unix seconds. */
export interface FinnhubQuote {
  c: number;
  d: number | null;
  dp: number | null;
  h: number;
  l: number;
  o: number;
  pc: number;
  t: number;
}

/** `GET /stock/profile2`. marketCapitalization and shareOutstanding are in millions. */
export interface FinnhubProfile {
  country: string;
  currency: string;
  exchange: string;
  finnhubIndustry: string;
  ipo: string;
  logo: string;
  marketCapitalization: number;
  name: string;
  phone: string;
  shareOutstanding: number;
  ticker: string;
  weburl: string;
}

export interface FinnhubSeriesPoint {
  period: string;
  v: number;
}

/** `GET /stock/metric?metric=all`. Ratios in `metric` are percentages where Finnhub says so (…Margin…, roe…, …Growth…). */
export interface FinnhubMetrics {
  metric: Record<string, number | string | null>;
  metricType: string;
  series: { annual?: Record<string, FinnhubSeriesPoint[]>; quarterly?: Record<string, FinnhubSeriesPoint[]> };
  symbol: string;
}

/** One item of `GET /company-news`. datetime is unix seconds; related is a comma-separated symbol list. */
export interface FinnhubNewsItem {
  category: string;
  datetime: number;
  headline: string;
  id: number;
  image: string;
  related: string;
  source: string;
  summary: string;
  url: string;
}

export interface SampleSymbolData {
  quote: FinnhubQuote;
  profile: FinnhubProfile;
  metrics: FinnhubMetrics;
  news: FinnhubNewsItem[];
}

export interface SampleMarketData {
  /** Always true: these are illustrative figures, never to be presented as real market data. */
  sample: true;
  /** The day the snapshot pretends to be from (YYYY-MM-DD). */
  as_of: string;
  /** The shapes are Finnhub's, so one normaliser serves the real provider and the sample alike. */
  format: 'finnhub';
  disclaimer: string;
  symbols: Record<string, SampleSymbolData>;
}
