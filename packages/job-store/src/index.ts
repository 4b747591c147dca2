// @fin/job-store: the one owner of job state. Every statement on jobs, their job.state events (outbox rows),
// their numbering (seq), idempotency keys and the result cache is in this package; the product APIs, the
// runners (job-kit), the jobs service and the analysis API call it. See docs/jobs.md.
export { cacheKeysFor, describeCacheKey, withToolSet, type CacheKeyParts, type CacheKeys } from './cache-key';
export { recordCachedAnswer, submitJob, type JobOutcome, type SubmitOutcome, type SubmitParams } from './submit';
export { attemptRecorder, claimAndStart, claimJob, completedResult, countFinished, STARTING_PROGRESS, type LeasedJob } from './lease';
export { createLeaseKeeper, type LeaseKeeper } from './lease-keeper';
export {
  REAPER_LOCK_CLASS,
  expiredLeases,
  failJob,
  pruneProcessedEvents,
  requeueJob,
  settleReservations,
  tryReaperLock,
  unclaimedJobs,
  type ReapableJob,
} from './reaper';
export {
  countUnfinishedJobs,
  readJobResult,
  readJobStatus,
  readJobStreamState,
  readJobStreamStates,
  type JobRef,
  type JobStatusRow,
  type JobStreamRow,
} from './queries';
export { claimNext, readQueuePosition, type ClaimNextParams, type NextClaim } from './queue';
export { createJobWatcher, type FinishedJob, type JobWatcher } from './watcher';
