export { cacheKeysFor, canonicalJson, describeCacheKey, sha256, withToolSet, type CacheKeyParts, type CacheKeys } from './cache-key';
export { submitJob, type CachedOutcome, type JobOutcome, type SubmitOutcome, type SubmitParams } from './submit';
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
