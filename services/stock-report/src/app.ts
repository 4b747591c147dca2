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
 * The stock-report API role: `POST /api/products/stock-report` answers from the cache (200) or with the job to
 * poll (202). The cache key holds what changes the report: the symbols (in the caller's order, since a
 * comparison of A with B is written from A's side), the language and the prompt version; with `data` the entry
 * is the tenant's own.
 */
const product: CachedProduct<typeof API_ROUTES.createStockReport> = {
  jobType: 'stock-report',
  route: API_ROUTES.createStockReport,
  promptVersion: loadPrompt('stock-report').id,
  cacheKey: ({ symbols, language, data }) => ({ parameters: { symbols, language }, data }),
};

/** The stock-report service's handlers: `createStockReport`. */
export function createStockReportHandlers(deps: ProductHandlerDeps): HandlerTable {
  return cachedProductHandlers(product, deps);
}

/** The API role as an HTTP app of its own, behind the gateway's signed identity. */
export function createApp(deps: ProductAppDeps): ServiceApp {
  return createCachedProductApp(product, deps);
}
