import { loadPrompt } from '@fin/ai';
import { API_ROUTES } from '@fin/contracts';
import type { HandlerTable } from '@fin/http';
import { cachedProductHandlers, type CachedProduct, type ProductHandlerDeps } from '@fin/job-kit';

/**
 * The news API role: `POST /api/products/news` answers from the cache (200) or with the job to poll (202).
 * The cache key holds everything that changes the result: the symbols (sorted), n, language, the time range, topics
 * (sorted), order and sources (sorted), and the prompt version. A request without a time range searches the last
 * 14 days up to when its job runs, so the range is in the key only when the request gives one.
 */
const product: CachedProduct<typeof API_ROUTES.createNews> = {
  jobType: 'news',
  route: API_ROUTES.createNews,
  promptVersion: loadPrompt('news').id,
  cacheKey: ({ symbols, n, language, time_from, time_to, topics, sort, sources, data }) => ({
    parameters: {
      symbols: [...symbols].sort(),
      n,
      language,
      ...(time_from === undefined ? {} : { time_from }),
      ...(time_to === undefined ? {} : { time_to }),
      ...(topics === undefined ? {} : { topics: [...topics].sort() }),
      // The default order keeps the keys of requests made before there was a choice.
      ...(sort === 'relevance' ? {} : { sort }),
      ...(sources?.include ? { sources_include: [...sources.include].sort() } : {}),
      ...(sources?.exclude ? { sources_exclude: [...sources.exclude].sort() } : {}),
    },
    data,
  }),
};

/** The news service's handlers: `createNews`. */
export function createNewsHandlers(deps: ProductHandlerDeps): HandlerTable {
  return cachedProductHandlers(product, deps);
}
