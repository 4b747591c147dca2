// POST /api/products/news
import { z } from 'zod';
import { Citations } from './citations';
import { AsyncJobResponse, CustomData, DEFAULT_LANGUAGE, GenerationMeta, JobId, Language, symbolList } from './common';
import { fieldError, requestObject } from './internal';
import { CallbackUrl } from './webhooks';

export const NEWS_SYMBOLS_MAX = 10;
export const NEWS_ITEMS_DEFAULT = 5;
export const NEWS_ITEMS_MAX = 20;

export const NewsRequest = requestObject({
  symbols: symbolList({ min: 1, max: NEWS_SYMBOLS_MAX }),
  n: z
    .int({ error: fieldError('must be an integer') })
    .min(1, 'must be at least 1')
    .max(NEWS_ITEMS_MAX, `must be at most ${NEWS_ITEMS_MAX}`)
    .default(NEWS_ITEMS_DEFAULT)
    .meta({ description: 'Number of news items to return.', examples: [5] }),
  language: Language.default(DEFAULT_LANGUAGE),
  data: CustomData.optional(),
  callback_url: CallbackUrl,
}).meta({
  id: 'NewsRequest',
  description: 'Relevant market news for 1 to 10 symbols.',
  examples: [{ symbols: ['AAPL', 'MSFT'], n: 5, language: 'en' }],
});
export type NewsRequest = z.infer<typeof NewsRequest>;
export type NewsRequestInput = z.input<typeof NewsRequest>;

const WebUrl = z.url({ protocol: /^https?$/ });

export const NewsItem = z
  .object({
    title: z.string(),
    content: z.string(),
    sources: z.array(WebUrl).meta({ description: 'Where the facts in this item come from.' }),
    further_reading: z.array(WebUrl),
    citations: Citations,
    relevance_score: z
      .number()
      .min(0)
      .max(1)
      .meta({ description: 'Relevance to the requested symbols, 0 (none) to 1 (direct).', examples: [0.92] }),
  })
  .meta({ id: 'NewsItem', description: 'One news item.' });
export type NewsItem = z.infer<typeof NewsItem>;

/** What a completed news job stores and what its result URL returns as `result`. */
export const NewsResult = z
  .object({ news: z.array(NewsItem), meta: GenerationMeta.optional() })
  .meta({ id: 'NewsResult', description: 'Result of a news job.' });
export type NewsResult = z.infer<typeof NewsResult>;

export const NewsResponse = z
  .object({
    job_id: JobId,
    status: z.literal('completed'),
    from_cache: z.boolean().meta({ description: 'true when served from the 7-day result cache.' }),
    ...NewsResult.shape,
  })
  .meta({
    id: 'NewsResponse',
    description: 'A completed news request (cache hit).',
    examples: [
      {
        job_id: '3fa85f64-5717-4562-b3fc-2c963f66afa6',
        status: 'completed',
        from_cache: true,
        news: [
          {
            title: 'Apple beats quarterly revenue estimates',
            content: 'Apple reported revenue above analyst expectations, driven by services growth.',
            sources: ['https://example.com/apple-earnings'],
            further_reading: ['https://example.com/apple-services'],
            citations: [
              {
                url: 'https://example.com/apple-earnings',
                title: 'Apple beats estimates on services strength',
                publisher: 'Example News',
                published_at: '2026-10-30',
                quote: 'Revenue came in above analyst expectations as services grew 14%.',
                source: 'market_data',
              },
            ],
            relevance_score: 0.92,
          },
        ],
      },
    ],
  });
export type NewsResponse = z.infer<typeof NewsResponse>;

/** Either answer of the product endpoint: the result (200, cache hit) or the job envelope (202). */
export const NewsProductResponse = z
  .discriminatedUnion('status', [NewsResponse, AsyncJobResponse])
  .meta({ id: 'NewsProductResponse', description: 'completed: served from the cache; pending: poll the job URLs.' });
export type NewsProductResponse = z.infer<typeof NewsProductResponse>;
