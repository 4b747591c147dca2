import { loadPrompt } from '@fin/ai';
import { API_ROUTES } from '@fin/contracts';
import type { HandlerTable, ServiceApp } from '@fin/http';
import {
  cachedProductHandlers,
  createCachedProductApp,
  type CachedProduct,
  type ProductAppDeps,
  type ProductHandlerDeps,
} from '@fin/job-kit';

/**
 * The news API role: `POST /api/products/news` answers from the cache (200) or with the job to poll (202).
 * The cache key holds everything that changes the result: the symbols (sorted), n, language (and the prompt version).
 */
const product: CachedProduct<typeof API_ROUTES.createNews> = {
  jobType: 'news',
  route: API_ROUTES.createNews,
  promptVersion: loadPrompt('news').id,
  cacheKey: ({ symbols, n, language, data }) => ({ parameters: { symbols: [...symbols].sort(), n, language }, data }),
};

/** The news service's handlers: `createNews`. */
export function createNewsHandlers(deps: ProductHandlerDeps): HandlerTable {
  return cachedProductHandlers(product, deps);
}

/** The API role as an HTTP app of its own, behind the gateway's signed identity. */
export function createApp(deps: ProductAppDeps): ServiceApp {
  return createCachedProductApp(product, deps);
}
