// Cache keys and submission are job-store's (they are statements on jobs and the cache); the product services
// reach them through job-kit, with the worker runtime.
export {
  cacheKeysFor,
  canonicalJson,
  describeCacheKey,
  sha256,
  submitJob,
  withToolSet,
  type CacheKeyParts,
  type CacheKeys,
  type CachedOutcome,
  type JobOutcome,
  type SubmitOutcome,
  type SubmitParams,
} from '@fin/job-store';
export {
  createJobWorker,
  DEFAULT_TENANT_CAP,
  DEFAULT_WORKER_CONCURRENCY,
  type FailureVerdict,
  type JobToRun,
  type JobWorker,
  type JobWorkerOptions,
  type RunContext,
  type RunOutcome,
} from './worker';
export { createInlineRunner, type InlineOutcome, type InlineRunner, type InlineRunnerOptions, type InlineRunParams } from './inline';
export { checkCallbackUrl, leaveCallback } from './callbacks';
export { DEFAULT_HOT_RESULTS_MAX_BYTES, createHotResults, type HotAnswer, type HotResults } from './hot-results';
export {
  cachedProductHandlers,
  createCachedProductApp,
  type CachedProduct,
  type ProductAppDeps,
  type ProductHandlerDeps,
} from './product-api';
export {
  classifyFailure,
  createProductWorker,
  type ProductRunContext,
  type ProductWorkerDeps,
  type ProductWorkerOptions,
} from './product-worker';
export {
  createProductUnit,
  type ProductRole,
  type ProductServiceConfig,
  type ProductServiceOptions,
  type ProductSettings,
  type SharedResources,
} from './product-service';
