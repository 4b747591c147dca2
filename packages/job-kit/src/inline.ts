// Running one job in the process that received its request, for a caller that needs the work to happen right
// there (a streamed answer). It is still a real job: its row is created already claimed, and it writes its state
// (with the same job.state events, seq and lease checks) exactly as a worker does, so pollers and observers see
// pending → running → completed or failed, and the result is stored.
import type { ErrorType } from '@fin/contracts';
import { attemptSettings, runAttempt, type AttemptOptions, type JobToRun, type RunContext, type RunOutcome } from './attempt';
import type { AppError } from '@fin/http';
import { submitJob, type JobOutcome } from '@fin/job-store';

export type InlineRunnerOptions = AttemptOptions;

export interface InlineRunParams {
  tenantId: string;
  /** The validated product request, stored with the job. */
  request: Record<string, unknown>;
  idempotencyKey?: string;
  /** The job may not be created (the account's daily token budget is spent): thrown unless a replay answers. */
  newWorkRefusal?: AppError;
  /**
   * The caller's stop signal (its client left, the process is shutting down). Aborting it aborts the run, and the
   * job fails with `classify(signal.reason)`: an inline job belongs to its caller and is never handed to a worker.
   */
  signal?: AbortSignal;
  /** Called once the job exists and is claimed, before the work starts: e.g. to tell the client the job id. */
  onStart?(jobId: string): void | Promise<void>;
}

export type InlineOutcome =
  | { kind: 'completed'; jobId: string; result: Record<string, unknown> }
  | { kind: 'failed'; jobId: string; error: { type: ErrorType; detail: string } }
  /** The Idempotency-Key was used before: that job is returned as it stands, and nothing runs here. */
  | (JobOutcome & { kind: 'replayed' });

export interface InlineRunner {
  readonly workerId: string;
  run(params: InlineRunParams, work: (job: JobToRun, ctx: RunContext) => Promise<RunOutcome>): Promise<InlineOutcome>;
}

/**
 * Runs jobs of one type in this process. Each job has a single attempt (`max_attempts` 1): if this process dies,
 * its lease expires and the jobs service's reaper fails the job rather than requesting it from a worker, because
 * the caller it was run for is gone too.
 */
export function createInlineRunner(options: InlineRunnerOptions): InlineRunner {
  const settings = attemptSettings(options);
  const logger = options.logger.child({ component: 'inline-job', jobType: settings.jobType, workerId: settings.workerId });
  const logged = { ...settings, logger };
  const never = new AbortController().signal;
  return {
    workerId: settings.workerId,
    async run(params, work) {
      const submitted = await submitJob(settings.pool, {
        tenantId: params.tenantId,
        jobType: settings.jobType,
        request: params.request,
        idempotencyKey: params.idempotencyKey,
        maxAttempts: 1,
        claimedBy: { workerId: settings.workerId, leaseMs: settings.leaseMs },
        ...(params.newWorkRefusal === undefined ? {} : { newWorkRefusal: params.newWorkRefusal }),
      });
      if (submitted.kind === 'replayed') return { ...submitted, kind: 'replayed' };
      if (submitted.kind !== 'created') throw new Error(`An inline job cannot be ${submitted.kind}: inline jobs have no cache key`);
      const job: JobToRun = {
        id: submitted.jobId,
        type: settings.jobType,
        tenantId: params.tenantId,
        request: params.request,
        attempt: 1,
        maxAttempts: 1,
        cacheKey: null,
      };
      const outcome = await runAttempt(
        logged,
        job,
        async (claimed, ctx) => {
          await params.onStart?.(claimed.id);
          return work(claimed, ctx);
        },
        { signal: params.signal ?? never, onStop: 'fail' },
      );
      switch (outcome.kind) {
        case 'completed':
          return { kind: 'completed', jobId: job.id, result: outcome.result };
        case 'failed':
        case 'retrying':
          return { kind: 'failed', jobId: job.id, error: outcome.error };
        default:
          // Only a lease lost to the reaper (this process stalled past its lease) gets here; the job is the
          // reaper's to fail.
          return {
            kind: 'failed',
            jobId: job.id,
            error: { type: 'internal_error', detail: 'The job was interrupted and did not complete.' },
          };
      }
    },
  };
}
