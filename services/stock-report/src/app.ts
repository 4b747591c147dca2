import { loadPrompt } from '@fin/ai';
import { API_ROUTES } from '@fin/contracts';
import type { ServiceApp } from '@fin/http';
import { createCachedProductApp, type ProductAppDeps } from '@fin/job-kit';

/**
 * The stock-report API role: `POST /api/products/stock-report` answers from the cache (200) or with the job to
 * poll (202). The cache key holds what changes the report: the symbols (in the caller's order, since a
 * comparison of A with B is written from A's side), the language and the prompt version; with `data` the entry
 * is the tenant's own.
 */
export function createApp(deps: ProductAppDeps): ServiceApp {
  return createCachedProductApp(
    {
      jobType: 'stock-report',
      route: API_ROUTES.createStockReport,
      promptVersion: loadPrompt('stock-report').id,
      cacheKey: ({ symbols, language, data }) => ({ parameters: { symbols, language }, data }),
    },
    deps,
  );
}
