export { cacheKeyFor, canonicalJson, sha256, type CacheKeyParts } from './cache-key';
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
