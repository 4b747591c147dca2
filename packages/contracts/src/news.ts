// POST /api/products/news
import { z } from 'zod';
import { Citations } from './citations';
import { AsyncJobResponse, CustomData, DEFAULT_LANGUAGE, GenerationMeta, JobId, Language, symbolList } from './common';
import { dedupe, fieldError, quote, requestObject } from './internal';
import { CallbackUrl } from './webhooks';

export const NEWS_SYMBOLS_MAX = 10;
export const NEWS_ITEMS_DEFAULT = 5;
export const NEWS_ITEMS_MAX = 20;

/** Topics a news item is tagged with and a request may filter by: Alpha Vantage's NEWS_SENTIMENT topics. */
export const NEWS_TOPICS = [
  'earnings',
  'ipo',
  'mergers_and_acquisitions',
  'financial_markets',
  'economy_fiscal',
  'economy_monetary',
  'economy_macro',
  'energy_transportation',
  'finance',
  'life_sciences',
  'manufacturing',
  'real_estate',
  'retail_wholesale',
  'technology',
  'blockchain',
] as const;
export const NewsTopic = z
  .enum(NEWS_TOPICS, { error: (issue) => `expected one of ${NEWS_TOPICS.join(', ')}, got ${quote(issue.input)}` })
  .meta({ id: 'NewsTopic', description: 'A news topic (the list of Alpha Vantage NEWS_SENTIMENT).', examples: ['earnings'] });
export type NewsTopic = z.infer<typeof NewsTopic>;

/** Sentiment labels, from the score by the bands of `sentimentLabel`. */
export const SENTIMENT_LABELS = ['bearish', 'somewhat-bearish', 'neutral', 'somewhat-bullish', 'bullish'] as const;
export const SentimentLabel = z.enum(SENTIMENT_LABELS).meta({
  id: 'SentimentLabel',
  description:
    'bearish: score ≤ −0.35; somewhat-bearish: −0.35 < score ≤ −0.15; neutral: −0.15 < score < 0.15; somewhat-bullish: 0.15 ≤ score < 0.35; bullish: score ≥ 0.35.',
});
export type SentimentLabel = z.infer<typeof SentimentLabel>;

/** The label of a sentiment score (−1 to 1), by Alpha Vantage's bands. */
export function sentimentLabel(score: number): SentimentLabel {
  if (score <= -0.35) return 'bearish';
  if (score <= -0.15) return 'somewhat-bearish';
  if (score < 0.15) return 'neutral';
  if (score < 0.35) return 'somewhat-bullish';
  return 'bullish';
}

/** The window searched when a request gives none: the last 14 days. */
export const NEWS_DEFAULT_WINDOW_DAYS = 14;
/** The longest window a request may give. */
export const NEWS_MAX_WINDOW_DAYS = 90;
/** How far past the server's clock a time_to may be (clients' clocks drift). */
const CLOCK_SKEW_MS = 5 * 60_000;
const DAY_MS = 24 * 60 * 60_000;
export const NEWS_SOURCES_MAX = 20;
export const NEWS_SORTS = ['relevance', 'latest'] as const;

const ISO_DATE_TIME = z.iso.datetime({ offset: true });
const ISO_DATE = z.iso.date();

/** An ISO 8601 date or date-time with a time zone, normalised to UTC (a date is its midnight UTC). */
const Instant = z
  .string({ error: fieldError('must be an ISO 8601 date-time such as 2026-11-20T14:30:00Z') })
  .refine((value) => ISO_DATE_TIME.safeParse(value).success || ISO_DATE.safeParse(value).success, {
    error: (issue) =>
      `expected an ISO 8601 date-time with a time zone such as 2026-11-20T14:30:00Z, or a date such as 2026-11-20, got ${quote(issue.input)}`,
  })
  .overwrite((value) => {
    // Runs after a failed refine too: a value that is no time stays as it is (and the refine's issue stands).
    const time = Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value);
    return Number.isNaN(time) ? value : new Date(time).toISOString();
  });

/** A domain name (example.com, news.example.co.uk): no scheme, path, port or wildcard. */
const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;
const Domain = z
  .string({ error: fieldError('must be a domain name such as reuters.com') })
  .trim()
  .toLowerCase()
  .refine((value) => DOMAIN.test(value), {
    error: (issue) => `must be a domain name such as reuters.com (no scheme or path), got ${quote(issue.input)}`,
  });
const DomainList = z
  .array(Domain, { error: fieldError('must be an array of domain names') })
  .overwrite(dedupe)
  .min(1, `must list 1 to ${NEWS_SOURCES_MAX} domains`)
  .max(NEWS_SOURCES_MAX, `must list at most ${NEWS_SOURCES_MAX} domains`);

export const NewsSources = requestObject({
  include: DomainList.optional().meta({ description: 'Only news from these domains (and their subdomains).' }),
  exclude: DomainList.optional().meta({ description: 'No news from these domains (and their subdomains).' }),
})
  .refine((value) => (value.include === undefined) !== (value.exclude === undefined), {
    error: 'give either include or exclude (not both, not neither)',
  })
  .meta({
    id: 'NewsSources',
    description: `Which sources to use: \`include\` or \`exclude\`, 1 to ${NEWS_SOURCES_MAX} domain names. Honoured by the market-data lookup and by the model's web search (its allowed_domains / blocked_domains).`,
    examples: [{ include: ['reuters.com', 'bloomberg.com'] }],
  });
export type NewsSources = z.infer<typeof NewsSources>;

const newsShape = {
  symbols: symbolList({ min: 1, max: NEWS_SYMBOLS_MAX }),
  n: z
    .int({ error: fieldError('must be an integer') })
    .min(1, 'must be at least 1')
    .max(NEWS_ITEMS_MAX, `must be at most ${NEWS_ITEMS_MAX}`)
    .default(NEWS_ITEMS_DEFAULT)
    .meta({ description: 'Number of news items to return.', examples: [5] }),
  language: Language.default(DEFAULT_LANGUAGE),
  time_from: Instant.optional().meta({
    description: `Oldest publication time to include (ISO 8601). Default: ${NEWS_DEFAULT_WINDOW_DAYS} days before time_to. The window is at most ${NEWS_MAX_WINDOW_DAYS} days.`,
    examples: ['2026-11-01T00:00:00Z'],
  }),
  time_to: Instant.optional().meta({
    description: 'Newest publication time to include (ISO 8601), not in the future. Default: now.',
    examples: ['2026-11-20T00:00:00Z'],
  }),
  topics: z
    .array(NewsTopic, { error: fieldError('must be an array of topics') })
    .overwrite(dedupe)
    .min(1, 'must list at least one topic')
    .optional()
    .meta({ description: 'Only items tagged with at least one of these topics.' }),
  sort: z
    .enum(NEWS_SORTS, { error: (issue) => `expected relevance or latest, got ${quote(issue.input)}` })
    .default('relevance')
    .meta({ description: 'relevance (default): most relevant first; latest: newest first.' }),
  sources: NewsSources.optional(),
  data: CustomData.optional(),
  callback_url: CallbackUrl,
};

/** The window a news request searches: its time_from / time_to, or the defaults around them. */
export function newsWindow(request: { time_from?: string; time_to?: string }, now = Date.now()): { from: string; to: string } {
  const to = request.time_to ?? new Date(now).toISOString();
  const from = request.time_from ?? new Date(Date.parse(to) - NEWS_DEFAULT_WINDOW_DAYS * DAY_MS).toISOString();
  return { from, to };
}

/** time_from before time_to, time_to not in the future, the window at most NEWS_MAX_WINDOW_DAYS. */
function checkWindow(value: { time_from?: string; time_to?: string }, ctx: z.RefinementCtx): void {
  const now = Date.now();
  // A time that failed its own check has its issue already.
  if ([value.time_from, value.time_to].some((time) => time !== undefined && Number.isNaN(Date.parse(time)))) return;
  if (value.time_to !== undefined && Date.parse(value.time_to) > now + CLOCK_SKEW_MS) {
    ctx.addIssue({ code: 'custom', path: ['time_to'], message: 'must not be in the future' });
    return;
  }
  if (value.time_from !== undefined && Date.parse(value.time_from) > now + CLOCK_SKEW_MS) {
    ctx.addIssue({ code: 'custom', path: ['time_from'], message: 'must not be in the future' });
    return;
  }
  const { from, to } = newsWindow(value, now);
  if (Date.parse(from) >= Date.parse(to)) {
    ctx.addIssue({ code: 'custom', path: ['time_from'], message: 'must be before time_to' });
  } else if (Date.parse(to) - Date.parse(from) > NEWS_MAX_WINDOW_DAYS * DAY_MS) {
    ctx.addIssue({ code: 'custom', path: ['time_from'], message: `must be at most ${NEWS_MAX_WINDOW_DAYS} days before time_to` });
  }
}

const NEWS_REQUEST_META = {
  description: 'Relevant market news for 1 to 10 symbols.',
  examples: [
    { symbols: ['AAPL', 'MSFT'], n: 5, language: 'en' },
    {
      symbols: ['NVDA'],
      n: 3,
      time_from: '2026-11-01T00:00:00Z',
      time_to: '2026-11-20T00:00:00Z',
      topics: ['earnings', 'technology'],
      sort: 'latest',
      sources: { exclude: ['example-blog.com'] },
    },
  ],
};

export const NewsRequest = requestObject(newsShape)
  .superRefine(checkWindow)
  .meta({ id: 'NewsRequest', ...NEWS_REQUEST_META });
export type NewsRequest = z.infer<typeof NewsRequest>;
export type NewsRequestInput = z.input<typeof NewsRequest>;

/**
 * The news request without callback_url (the MCP tool's input), checked the same way. A function, not a schema
 * of the contract: it has no id of its own, so that its JSON Schema is the object itself rather than a reference.
 */
export function newsToolInput() {
  const { callback_url: _callbackUrl, ...shape } = newsShape;
  return requestObject(shape).superRefine(checkWindow);
}

const WebUrl = z.url({ protocol: /^https?$/ });

const SentimentScore = z.number().min(-1).max(1);

export const TickerSentiment = z
  .object({
    symbol: z.string().meta({ description: 'One of the requested symbols.', examples: ['AAPL'] }),
    relevance_score: z
      .number()
      .min(0)
      .max(1)
      .meta({ description: 'How much the item concerns the symbol, 0 to 1.', examples: [0.9] }),
    sentiment_score: SentimentScore.meta({
      description: 'How the item reads for the symbol, −1 (bearish) to 1 (bullish).',
      examples: [0.42],
    }),
    sentiment_label: SentimentLabel,
    reasoning: z
      .string()
      .meta({ description: 'One sentence on why, from the source.', examples: ['Revenue beat estimates on services growth.'] }),
  })
  .meta({ id: 'TickerSentiment', description: "An item's sentiment for one requested symbol." });
export type TickerSentiment = z.infer<typeof TickerSentiment>;

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
    // Added after the spec's fields (prompt news@4); results made before carry none of them, hence optional.
    published_at: z
      .string()
      .nullable()
      .optional()
      .meta({
        description:
          "When the item's source was published (ISO 8601), as the source gives it; null when it gives no date (such items are left out when the request gives a time range). Absent on results made before these fields existed.",
        examples: ['2026-10-30T20:30:00.000Z'],
      }),
    topics: z.array(NewsTopic).optional().meta({ description: 'The topics the item is about.' }),
    tickers: z.array(TickerSentiment).optional().meta({ description: 'Every requested symbol the item concerns, with its sentiment.' }),
  })
  .meta({ id: 'NewsItem', description: 'One news item.' });
export type NewsItem = z.infer<typeof NewsItem>;

export const SymbolSentiment = z
  .object({
    symbol: z.string(),
    sentiment_score: SentimentScore.meta({
      description: "The mean of the items' scores for the symbol, weighted by their relevance to it.",
    }),
    sentiment_label: SentimentLabel,
    items: z.int().min(0).meta({ description: 'How many items concern the symbol.' }),
  })
  .meta({ id: 'SymbolSentiment', description: "One requested symbol's sentiment over the answer's items." });
export type SymbolSentiment = z.infer<typeof SymbolSentiment>;

/** What a completed news job stores and what its result URL returns as `result`. */
export const NewsResult = z
  .object({
    news: z.array(NewsItem),
    ticker_sentiment: z
      .array(SymbolSentiment)
      .optional()
      .meta({ description: 'Per requested symbol that any item concerns: its relevance-weighted sentiment over the items.' }),
    meta: GenerationMeta.optional(),
  })
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
            published_at: '2026-10-30T20:30:00.000Z',
            topics: ['earnings', 'technology'],
            tickers: [
              {
                symbol: 'AAPL',
                relevance_score: 0.95,
                sentiment_score: 0.42,
                sentiment_label: 'bullish',
                reasoning: 'Revenue came in above expectations on services growth.',
              },
            ],
          },
        ],
        ticker_sentiment: [{ symbol: 'AAPL', sentiment_score: 0.42, sentiment_label: 'bullish', items: 1 }],
      },
    ],
  });
export type NewsResponse = z.infer<typeof NewsResponse>;

/** Either answer of the product endpoint: the result (200, cache hit) or the job envelope (202). */
export const NewsProductResponse = z
  .discriminatedUnion('status', [NewsResponse, AsyncJobResponse])
  .meta({ id: 'NewsProductResponse', description: 'completed: served from the cache; pending: poll the job URLs.' });
export type NewsProductResponse = z.infer<typeof NewsProductResponse>;
