// Finnhub's response shapes and their translation into ours. Shared by FinnhubProvider (live responses) and
// SampleMarketDataProvider (the bundled sample is stored in Finnhub's shapes), so both go through one normaliser.
import { StockSymbol } from '@fin/contracts';
import { z } from 'zod';
import { MarketDataError, UnknownSymbolError } from './errors';
import { CompanyNews, CompanyProfile, KeyMetrics, type MetricPoint, NewsItem, type NewsQuery, Quote } from './types';

type ProviderName = 'finnhub' | 'sample';

const MAX_NEWS_LIMIT = 50;
const DEFAULT_NEWS_LIMIT = 10;
const MAX_HEADLINE_CHARS = 300;
const MAX_SUMMARY_CHARS = 1_000;

const QuoteWire = z.object({
  c: z.number(),
  d: z.number().nullable().optional(),
  dp: z.number().nullable().optional(),
  h: z.number(),
  l: z.number(),
  o: z.number(),
  pc: z.number(),
  t: z.number(),
});

const ProfileWire = z.object({
  country: z.string().optional(),
  currency: z.string().optional(),
  exchange: z.string().optional(),
  finnhubIndustry: z.string().optional(),
  ipo: z.string().optional(),
  logo: z.string().optional(),
  marketCapitalization: z.number().nullable().optional(),
  name: z.string().optional(),
  phone: z.string().optional(),
  shareOutstanding: z.number().nullable().optional(),
  ticker: z.string().optional(),
  weburl: z.string().optional(),
});

const SeriesWire = z.array(z.object({ period: z.string(), v: z.number().nullable() }));

const MetricsWire = z.object({
  metric: z.record(z.string(), z.unknown()).optional(),
  series: z.object({ annual: z.record(z.string(), SeriesWire).optional() }).optional(),
});

const NewsItemWire = z.object({
  category: z.string().optional(),
  datetime: z.number(),
  headline: z.string(),
  id: z.union([z.number(), z.string()]),
  image: z.string().optional(),
  related: z.string().optional(),
  source: z.string().optional(),
  summary: z.string().optional(),
  url: z.string(),
});

/** Normalises a symbol (trim, upper-case) and rejects malformed ones before anything is sent. */
export function normaliseSymbol(symbol: string, provider: ProviderName): string {
  const parsed = StockSymbol.safeParse(symbol);
  if (!parsed.success) {
    throw new MarketDataError('invalid_request', `${provider}: ${parsed.error.issues[0]?.message ?? 'invalid symbol'}`, { provider });
  }
  return parsed.data;
}

function isoDay(value: string | Date, field: string, provider: ProviderName): string {
  const day = value instanceof Date ? (Number.isNaN(value.getTime()) ? '' : value.toISOString().slice(0, 10)) : value;
  if (!z.iso.date().safeParse(day).success) {
    throw new MarketDataError('invalid_request', `${provider}: news ${field} must be a YYYY-MM-DD date`, { provider });
  }
  return day;
}

/** The validated news window and limit. */
export function normaliseNewsQuery(query: NewsQuery, provider: ProviderName): { from: string; to: string; limit: number } {
  const from = isoDay(query.from, 'from', provider);
  const to = isoDay(query.to, 'to', provider);
  if (from > to)
    throw new MarketDataError('invalid_request', `${provider}: news window starts (${from}) after it ends (${to})`, { provider });
  const limit = query.limit ?? DEFAULT_NEWS_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_NEWS_LIMIT) {
    throw new MarketDataError('invalid_request', `${provider}: news limit must be an integer from 1 to ${MAX_NEWS_LIMIT}`, { provider });
  }
  return { from, to, limit };
}

function invalid(provider: ProviderName, what: string, symbol: string, cause: unknown): MarketDataError {
  return new MarketDataError('invalid_response', `${provider} returned a ${what} for ${symbol} that is not in the documented shape`, {
    provider,
    cause,
  });
}

/** Parses our output schema; a failure means the provider sent values we cannot vouch for. */
function checked<T>(schema: z.ZodType<T>, value: unknown, provider: ProviderName, what: string, symbol: string): T {
  const result = schema.safeParse(value);
  if (!result.success) throw invalid(provider, what, symbol, result.error);
  return result.data;
}

function wire<T>(schema: z.ZodType<T>, body: unknown, provider: ProviderName, what: string, symbol: string): T {
  const result = schema.safeParse(body);
  if (!result.success) throw invalid(provider, what, symbol, result.error);
  return result.data;
}

const text = (value: string | undefined): string | null => (value && value.trim() ? value.trim() : null);
const httpUrl = (value: string | undefined): string | null => {
  const candidate = text(value);
  return candidate && z.url({ protocol: /^https?$/ }).safeParse(candidate).success ? candidate : null;
};
const millions = (value: number | null | undefined): number | null =>
  typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value * 1_000_000) : null;
const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;

export function toQuote(body: unknown, symbol: string, provider: ProviderName): Quote {
  const raw = wire(QuoteWire, body, provider, 'quote', symbol);
  // Finnhub's answer for a symbol it does not know: every price zero, no timestamp.
  if (raw.t === 0 && raw.c === 0) throw new UnknownSymbolError(symbol, provider, 'quote');
  return checked(
    Quote,
    {
      symbol,
      price: raw.c,
      change: raw.d ?? null,
      changePercent: raw.dp ?? null,
      open: raw.o,
      high: raw.h,
      low: raw.l,
      previousClose: raw.pc,
      asOf: new Date(raw.t * 1000).toISOString(),
      provider,
      sample: provider === 'sample',
    },
    provider,
    'quote',
    symbol,
  );
}

export function toProfile(body: unknown, symbol: string, provider: ProviderName): CompanyProfile {
  const raw = wire(ProfileWire, body, provider, 'profile', symbol);
  const name = text(raw.name);
  if (!name) throw new UnknownSymbolError(symbol, provider, 'company profile');
  const ipo = text(raw.ipo);
  return checked(
    CompanyProfile,
    {
      symbol,
      name,
      country: text(raw.country),
      currency: text(raw.currency),
      exchange: text(raw.exchange),
      industry: text(raw.finnhubIndustry),
      ipoDate: ipo && z.iso.date().safeParse(ipo).success ? ipo : null,
      marketCap: millions(raw.marketCapitalization),
      sharesOutstanding: millions(raw.shareOutstanding),
      website: httpUrl(raw.weburl),
      logoUrl: httpUrl(raw.logo),
      phone: text(raw.phone),
      provider,
      sample: provider === 'sample',
    },
    provider,
    'profile',
    symbol,
  );
}

function series(points: z.infer<typeof SeriesWire> | undefined, scale: number): MetricPoint[] {
  return (points ?? [])
    .filter(
      (point): point is { period: string; v: number } =>
        typeof point.v === 'number' && Number.isFinite(point.v) && z.iso.date().safeParse(point.period).success,
    )
    .map((point) => ({ period: point.period, value: round(point.v * scale, 4) }))
    .sort((a, b) => b.period.localeCompare(a.period));
}

export function toMetrics(body: unknown, symbol: string, provider: ProviderName): KeyMetrics {
  const raw = wire(MetricsWire, body, provider, 'metrics', symbol);
  const metric = raw.metric ?? {};
  const number = (key: string): number | null => {
    const value = metric[key];
    return typeof value === 'number' && Number.isFinite(value) ? value : null;
  };
  if (!Object.values(metric).some((value) => typeof value === 'number')) throw new UnknownSymbolError(symbol, provider, 'metrics');
  const marketCap = number('marketCapitalization');
  return checked(
    KeyMetrics,
    {
      symbol,
      week52High: number('52WeekHigh'),
      week52Low: number('52WeekLow'),
      peRatioTtm: number('peTTM') ?? number('peBasicExclExtraTTM'),
      epsTtm: number('epsTTM') ?? number('epsBasicExclExtraItemsTTM'),
      priceToSalesTtm: number('psTTM'),
      priceToBook: number('pbQuarterly') ?? number('pbAnnual'),
      revenueGrowthTtmYoyPercent: number('revenueGrowthTTMYoy'),
      epsGrowthTtmYoyPercent: number('epsGrowthTTMYoy'),
      grossMarginTtmPercent: number('grossMarginTTM'),
      operatingMarginTtmPercent: number('operatingMarginTTM'),
      netProfitMarginTtmPercent: number('netProfitMarginTTM'),
      returnOnEquityTtmPercent: number('roeTTM'),
      debtToEquity: number('totalDebt/totalEquityQuarterly') ?? number('totalDebt/totalEquityAnnual'),
      currentRatio: number('currentRatioQuarterly') ?? number('currentRatioAnnual'),
      beta: number('beta'),
      dividendYieldPercent: number('dividendYieldIndicatedAnnual'),
      marketCap: millions(marketCap),
      annual: {
        eps: series(raw.series?.annual?.eps, 1),
        // Finnhub's series carry margins as fractions; ours are percentages like the TTM figures.
        netMarginPercent: series(raw.series?.annual?.netMargin, 100),
      },
      provider,
      sample: provider === 'sample',
    },
    provider,
    'metrics',
    symbol,
  );
}

function clip(value: string, max: number): string {
  return value.length <= max ? value : `${value.slice(0, max - 1).trimEnd()}…`;
}

/**
 * Items that are not in the documented shape or link anywhere but http(s) are dropped one by one rather than
 * failing the list: a news feed with one bad entry is still a news feed.
 */
export function toCompanyNews(
  body: unknown,
  symbol: string,
  window: { from: string; to: string; limit: number },
  provider: ProviderName,
): CompanyNews {
  const raw = wire(z.array(z.unknown()), body, provider, 'news list', symbol);
  const items: NewsItem[] = [];
  for (const entry of raw) {
    const parsed = NewsItemWire.safeParse(entry);
    if (!parsed.success || parsed.data.datetime <= 0) continue;
    const item = parsed.data;
    const candidate = NewsItem.safeParse({
      id: String(item.id),
      headline: clip(item.headline.trim(), MAX_HEADLINE_CHARS),
      summary: clip((item.summary ?? '').trim(), MAX_SUMMARY_CHARS),
      source: text(item.source) ?? 'unknown',
      url: item.url.trim(),
      imageUrl: httpUrl(item.image),
      publishedAt: new Date(item.datetime * 1000).toISOString(),
      category: text(item.category) ?? 'company',
      relatedSymbols: (item.related ?? '')
        .split(',')
        .map((related) => related.trim())
        .filter(Boolean),
    });
    if (candidate.success) items.push(candidate.data);
  }
  items.sort((a, b) => b.publishedAt.localeCompare(a.publishedAt));
  return checked(
    CompanyNews,
    { symbol, from: window.from, to: window.to, items: items.slice(0, window.limit), provider, sample: provider === 'sample' },
    provider,
    'news list',
    symbol,
  );
}
