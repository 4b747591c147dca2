import { z } from 'zod';
import { type MarketDataProvider, MarketDataError } from './market-data';
import { defineTool, type ToolDefinition } from './tools';

const NEWS_WINDOW_DAYS = 14;

export const MarketDataInput = z.object({
  symbol: z.string().min(1).max(12).describe('Ticker symbol, e.g. AAPL.'),
  kind: z
    .enum(['overview', 'quote', 'profile', 'metrics', 'news'])
    .describe('overview = quote + profile + key metrics; news = recent company news with article URLs.'),
});

/**
 * The `market_data` tool: quote, profile, key metrics and recent company news from the configured provider.
 * News article URLs are returned as grounding URLs, so results may cite them.
 */
export function marketDataTool(provider: MarketDataProvider): ToolDefinition<typeof MarketDataInput> {
  return defineTool({
    name: 'market_data',
    description:
      'Market data for one stock symbol: the latest quote, the company profile, key financial metrics, or recent company news with links. Call it once per symbol and kind you need.',
    input: MarketDataInput,
    timeoutMs: 15_000,
    async execute({ symbol, kind }, { signal }) {
      try {
        if (kind === 'news') {
          const to = new Date();
          const from = new Date(to.getTime() - NEWS_WINDOW_DAYS * 24 * 60 * 60 * 1000);
          const news = await provider.companyNews(symbol, { from, to, limit: 10, signal });
          const items = news.items.map((item) => ({
            headline: item.headline,
            summary: item.summary,
            source: item.source,
            url: item.url,
            published_at: item.publishedAt,
          }));
          return { content: { symbol: news.symbol, sample: news.sample, articles: items }, urls: items.map((item) => item.url) };
        }
        if (kind === 'quote') return { content: await provider.quote(symbol, { signal }) };
        if (kind === 'profile') return { content: await provider.profile(symbol, { signal }) };
        if (kind === 'metrics') return { content: await provider.metrics(symbol, { signal }) };
        const [quote, profile, metrics] = await Promise.all([
          provider.quote(symbol, { signal }),
          provider.profile(symbol, { signal }),
          provider.metrics(symbol, { signal }),
        ]);
        const { annual: _annual, ...keyMetrics } = metrics;
        return { content: { symbol: quote.symbol, sample: quote.sample, quote, profile, metrics: keyMetrics } };
      } catch (error) {
        // The model sees a short, safe reason (e.g. unknown symbol); the loop turns this into an error result.
        if (error instanceof MarketDataError) return { content: { symbol, error: error.kind, message: error.message } };
        throw error;
      }
    },
  });
}
