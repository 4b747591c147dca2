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
  type FailureVerdict,
  type JobToRun,
  type JobWorker,
  type JobWorkerOptions,
  type RunContext,
  type RunOutcome,
} from './worker';
export { createInlineRunner, type InlineOutcome, type InlineRunner, type InlineRunnerOptions, type InlineRunParams } from './inline';
export {
  bypassesCache,
  classifyFailure,
  createCachedProductApp,
  createProductWorker,
  describeCache,
  idempotencyKeyOf,
  runProductProcess,
  startProductService,
  type CachedProduct,
  type ProductAppDeps,
  type ProductRole,
  type ProductRunContext,
  type ProductService,
  type ProductServiceConfig,
  type ProductServiceOptions,
  type ProductWorkerDeps,
  type ProductWorkerOptions,
  type SharedResources,
} from './product';
