import { z } from 'zod';
import { type MarketDataProvider, MarketDataError } from './market-data';
import type { MarketDataResource } from './market-data/types';
import type { RetrievedDocument } from './citations';
import { defineTool, type ToolDefinition, type ToolOutput } from './tools';

const NEWS_WINDOW_DAYS = 14;

/** What a news request asks of the articles the tool returns (the news product's time range and sources). */
export interface NewsLookup {
  /** The window to ask the provider for; `exact` when the request gave it, so articles outside it are left out. */
  window?: { from: Date; to: Date; exact: boolean };
  sources?: { include?: readonly string[]; exclude?: readonly string[] };
}

/** Whether `url`'s host is `domain` or one of its subdomains. */
function onDomain(url: string, domain: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return false;
  }
  return host === domain || host.endsWith(`.${domain}`);
}

/** Whether a source URL is allowed by the request's include / exclude lists. */
export function allowedSource(url: string, sources: NewsLookup['sources']): boolean {
  if (sources?.include) return sources.include.some((domain) => onDomain(url, domain));
  if (sources?.exclude) return !sources.exclude.some((domain) => onDomain(url, domain));
  return true;
}

export const MarketDataInput = z.object({
  symbol: z.string().min(1).max(12).describe('Ticker symbol, e.g. AAPL.'),
  kind: z
    .enum(['overview', 'quote', 'profile', 'metrics', 'news'])
    .describe('overview = quote + profile + key metrics; news = recent company news with article URLs.'),
});

/**
 * The `market_data` tool: quote, profile, key metrics and recent company news from the configured provider.
 * News article URLs are returned as grounding URLs, so results may cite them. Every article and every figure
 * resource (quote, profile, metrics) is returned as a document with the text the model is shown of it, so a
 * result's citations can quote them.
 */
export function marketDataTool(provider: MarketDataProvider, lookup: NewsLookup = {}): ToolDefinition<typeof MarketDataInput> {
  return defineTool({
    name: 'market_data',
    description:
      'Market data for one stock symbol: the latest quote, the company profile, key financial metrics, or recent company news with links. Call it once per symbol and kind you need.',
    input: MarketDataInput,
    timeoutMs: 15_000,
    async execute({ symbol, kind }, { signal }) {
      try {
        if (kind === 'news') {
          const to = lookup.window?.to ?? new Date();
          const from = lookup.window?.from ?? new Date(to.getTime() - NEWS_WINDOW_DAYS * 24 * 60 * 60 * 1000);
          const news = await provider.companyNews(symbol, { from, to, limit: 10, signal });
          const inWindow = (publishedAt: string) =>
            !lookup.window?.exact || (Date.parse(publishedAt) >= from.getTime() && Date.parse(publishedAt) <= to.getTime());
          const wanted = news.items.filter((item) => inWindow(item.publishedAt) && allowedSource(item.url, lookup.sources));
          const items = wanted.map((item) => ({
            headline: item.headline,
            summary: item.summary,
            source: item.source,
            url: item.url,
            published_at: item.publishedAt,
          }));
          return {
            content: { symbol: news.symbol, sample: news.sample, articles: items },
            urls: items.map((item) => item.url),
            documents: items.map((item) => ({
              url: item.url,
              title: item.headline,
              publisher: item.source || null,
              publishedAt: item.published_at,
              source: 'market_data' as const,
              text: `${item.headline}\n${item.summary}`,
            })),
          };
        }
        const figures = new Figures(provider, symbol);
        if (kind === 'quote') return figures.output(await provider.quote(symbol, { signal }), 'quote');
        if (kind === 'profile') return figures.output(await provider.profile(symbol, { signal }), 'profile');
        if (kind === 'metrics') return figures.output(await provider.metrics(symbol, { signal }), 'metrics');
        const [quote, profile, metrics] = await Promise.all([
          provider.quote(symbol, { signal }),
          provider.profile(symbol, { signal }),
          provider.metrics(symbol, { signal }),
        ]);
        const { annual: _annual, ...keyMetrics } = metrics;
        return {
          content: {
            symbol: quote.symbol,
            sample: quote.sample,
            quote: figures.cited(quote, 'quote'),
            profile: figures.cited(profile, 'profile'),
            metrics: figures.cited(keyMetrics, 'metrics'),
          },
          documents: [figures.document(quote, 'quote'), figures.document(profile, 'profile'), figures.document(keyMetrics, 'metrics')],
        };
      } catch (error) {
        // The model sees a short, safe reason (e.g. unknown symbol); the loop turns this into an error result.
        if (error instanceof MarketDataError) return { content: { symbol, error: error.kind, message: error.message } };
        throw error;
      }
    },
  });
}

const RESOURCE_TITLES: Record<MarketDataResource, string> = {
  quote: 'stock quote',
  profile: 'company profile',
  metrics: 'key financial metrics',
};

/**
 * The figures of one symbol as documents: each resource under its provider URL, its material the JSON the model
 * reads of it (the model's copy also names the URL, as `source_url`, so the material is a prefix of what it reads).
 */
class Figures {
  constructor(
    private readonly provider: MarketDataProvider,
    private readonly symbol: string,
  ) {}

  document(value: object, kind: MarketDataResource): RetrievedDocument {
    const asOf = kind === 'quote' && 'asOf' in value && typeof value.asOf === 'string' ? value.asOf : null;
    const name =
      kind === 'profile' && 'name' in value && typeof value.name === 'string' && value.name ? value.name : this.symbol.toUpperCase();
    return {
      url: this.provider.resourceUrl(kind, this.symbol),
      title: `${name} ${RESOURCE_TITLES[kind]}`,
      publisher: this.provider.publisher,
      publishedAt: asOf,
      source: 'market_data',
      text: JSON.stringify(value),
    };
  }

  /** The figures as the model reads them: with the `source_url` a citation of them names. */
  cited(value: object, kind: MarketDataResource): object {
    return { ...value, source_url: this.provider.resourceUrl(kind, this.symbol) };
  }

  output(value: object, kind: MarketDataResource): ToolOutput {
    return { content: this.cited(value, kind), documents: [this.document(value, kind)] };
  }
}
