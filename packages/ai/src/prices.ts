import { z } from 'zod';
import { MODELS } from './models';
import { totalInputTokens, type Usage } from './usage';

/**
 * What the model API charges, in USD per million tokens (and per thousand web searches), by model family.
 * Cache writes cost 1.25× the input price for a 5-minute entry (2× for an hour), cache reads 0.1×.
 */
const ModelPrice = z.strictObject({
  input: z.number().nonnegative(),
  output: z.number().nonnegative(),
  /** Where a model's cache prices are not the usual factors of its input price (Sonnet 5.5 reads at 0.05×). */
  cache_write_5m: z.number().nonnegative().optional(),
  cache_write_1h: z.number().nonnegative().optional(),
  cache_read: z.number().nonnegative().optional(),
});
type ModelPrice = z.infer<typeof ModelPrice>;

export const PriceTable = z.strictObject({
  /** When these prices were Anthropic's list prices. */
  as_of: z.iso.date(),
  /** Matched against the model id in order: the first family whose pattern the id contains. */
  families: z.array(z.strictObject({ pattern: z.string().min(1), price: ModelPrice })).min(1),
  web_search_per_thousand: z.number().nonnegative(),
});
export type PriceTable = z.infer<typeof PriceTable>;

/**
 * Anthropic's list prices as the model table has them (models.ts, each row with its source page and the date it
 * was read): every model of the table by its id, at its smallest-prompt tier, then the families for ids the table
 * lacks at the highest current price of each. AI_PRICES replaces them.
 */
export const DEFAULT_PRICES: PriceTable = {
  as_of: '2026-11-29',
  families: [
    ...MODELS.flatMap((model) => {
      const tier = model.prices[0];
      if (tier === undefined) return [];
      const price = {
        input: tier.input,
        output: tier.output,
        cache_write_5m: tier.cacheWrite5m,
        cache_write_1h: tier.cacheWrite1h,
        cache_read: tier.cacheRead,
      };
      return [model.id, ...model.aliases].map((pattern) => ({ pattern, price }));
    }),
    { pattern: 'haiku', price: { input: 1, output: 5 } },
    { pattern: 'opus', price: { input: 5, output: 25 } },
    { pattern: 'sonnet', price: { input: 3, output: 15 } },
  ],
  web_search_per_thousand: 10,
};

export const CACHE_WRITE_5M_FACTOR = 1.25;
const CACHE_WRITE_1H_FACTOR = 2;
export const CACHE_READ_FACTOR = 0.1;

export interface BilledCost {
  /** Uncached input, cache writes and cache reads at their prices. */
  input: number;
  output: number;
  webSearch: number;
  total: number;
}

/** The price of `model` (the last family when none matches: the table's most general). */
export function priceOf(table: PriceTable, model: string): ModelPrice {
  const family = table.families.find((candidate) => model.includes(candidate.pattern)) ?? table.families.at(-1);
  if (family === undefined) throw new Error('the price table has no model family');
  return family.price;
}

/** What `usage` costs in USD at `table`'s prices for `model`; cache writes at the 5-minute or 1-hour factor. */
export function billedCost(table: PriceTable, model: string, usage: Usage, cacheTtl: '5m' | '1h' = '5m'): BilledCost {
  const price = priceOf(table, model);
  const perToken = (perMillion: number) => perMillion / 1_000_000;
  const write =
    (cacheTtl === '1h' ? price.cache_write_1h : price.cache_write_5m) ??
    price.input * (cacheTtl === '1h' ? CACHE_WRITE_1H_FACTOR : CACHE_WRITE_5M_FACTOR);
  const read = price.cache_read ?? price.input * CACHE_READ_FACTOR;
  const input =
    perToken(price.input) * usage.inputTokens +
    perToken(write) * usage.cacheCreationInputTokens +
    perToken(read) * usage.cacheReadInputTokens;
  const output = perToken(price.output) * usage.outputTokens;
  const webSearch = (usage.webSearches / 1_000) * table.web_search_per_thousand;
  return { input, output, webSearch, total: input + output + webSearch };
}

/** Every input token, cached or not, at the plain input price: what input would cost without caching. */
export function uncachedInputCost(table: PriceTable, model: string, usage: Usage): number {
  return (priceOf(table, model).input / 1_000_000) * totalInputTokens(usage);
}
