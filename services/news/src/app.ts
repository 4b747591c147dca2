import { loadPrompt } from '@fin/ai';
import { API_ROUTES } from '@fin/contracts';
import type { ServiceApp } from '@fin/http';
import { createCachedProductApp, type ProductAppDeps } from '@fin/job-kit';

/**
 * The news API role: `POST /api/products/news` answers from the cache (200) or with the job to poll (202).
 * The cache key holds everything that changes the result: the symbols (sorted), n, language (and the prompt version).
 */
export function createApp(deps: ProductAppDeps): ServiceApp {
  return createCachedProductApp(
    {
      jobType: 'news',
      route: API_ROUTES.createNews,
      promptVersion: loadPrompt('news').id,
      cacheKey: ({ symbols, n, language, data }) => ({ parameters: { symbols: [...symbols].sort(), n, language }, data }),
    },
    deps,
  );
}
