// Cache keys and submission are job-store's (they are statements on jobs and the cache); the product services
// reach them through job-kit, with the worker runtime.
export { describeCacheKey, submitJob } from '@fin/job-store';
export {
  createJobWorker,
  DEFAULT_TENANT_CAP,
  DEFAULT_WORKER_CONCURRENCY,
  type FailureVerdict,
  type JobToRun,
  type JobWorker,
  type JobWorkerOptions,
} from './worker';
export { createInlineRunner, type InlineRunnerOptions } from './inline';
export { checkCallbackUrl, leaveCallback } from './callbacks';
export { DEFAULT_HOT_RESULTS_MAX_BYTES, createHotResults, type HotAnswer, type HotResults } from './hot-results';
export {
  cachedProductHandlers,
  createCachedProductApp,
  type CachedProduct,
  type ProductAppDeps,
  type ProductHandlerDeps,
} from './product-api';
export { classifyFailure, createProductWorker, type ProductWorkerDeps } from './product-worker';
export { createProductUnit, type ProductServiceConfig, type ProductServiceOptions, type SharedResources } from './product-service';
