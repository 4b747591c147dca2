// The worker role of a product: each job of its type runs on the AI engine, and an engine failure is turned into
// what a client reads on the status endpoint. job-kit does not depend on the AI engine: the engine comes in
// through the service's factories, and its errors are recognised by their shape (see classifyFailure).
import type { Usage } from '@fin/contracts';
import type { Pool } from '@fin/db';
import type { EventBus, JobType } from '@fin/events';
import type { Logger } from '@fin/log';
import { createJobWorker, type FailureVerdict, type JobWorker, type RunOutcome } from './worker';

const TEMPORARY: FailureVerdict = {
  retry: true,
  type: 'service_unavailable',
  detail: 'The AI model was temporarily unavailable, so the job could not complete. Submit it again in a moment.',
};

/** The verdict for each kind of AI engine failure (`AiErrorKind` of @fin/ai); other kinds get ENGINE_DEFAULT. */
const ENGINE_FAILURES: Readonly<Record<string, FailureVerdict>> = {
  rate_limited: TEMPORARY,
  overloaded: TEMPORARY,
  upstream: TEMPORARY,
  timeout: TEMPORARY,
  connection: TEMPORARY,
  invalid_output: { retry: true, type: 'internal_error', detail: 'The AI model did not produce a valid result.' },
  limit_exceeded: { retry: false, type: 'internal_error', detail: 'The research exceeded its processing limits.' },
  refused: {
    retry: false,
    type: 'model_refused',
    detail: 'The AI model declined to answer this request. Rephrasing it may help; submitting it unchanged will not.',
  },
  // A 4xx from the model API: the request we built was wrong. Never retried (it would fail the same way); logged
  // with the API's request id and alerted on (FinModelRequestsRejected).
  bad_request: {
    retry: false,
    type: 'model_request_rejected',
    detail:
      'The AI model provider refused the request this service built for the job. This is our error, not yours: it has been logged for the operators.',
  },
};
const ENGINE_DEFAULT: FailureVerdict = { retry: false, type: 'internal_error', detail: 'The AI service could not process the job.' };

/**
 * What a client reads on the status endpoint when a run fails: the reason in plain words, no internals.
 * The engine's errors are `AiError`s (name `AiError`, a `kind`, what the run spent in `usage`); anything else is our
 * own fault and is retried.
 */
export function classifyFailure(error: unknown): FailureVerdict {
  if (error instanceof Error && error.name === 'AiError') {
    const { kind, usage } = error as Error & { kind?: unknown; usage?: Usage };
    const verdict =
      (typeof kind === 'string' && Object.hasOwn(ENGINE_FAILURES, kind) ? ENGINE_FAILURES[kind] : undefined) ?? ENGINE_DEFAULT;
    return usage ? { ...verdict, usage } : verdict;
  }
  return { retry: true, type: 'internal_error', detail: 'An internal error stopped the job.' };
}

/** What a product's worker role is built from. */
export interface ProductWorkerDeps<Engine> {
  pool: Pool;
  bus: EventBus;
  engine: Engine;
  logger: Logger;
  /** A run that takes longer fails (`gateway_timeout`). */
  timeLimitMs: number;
  concurrency?: number;
  /** Jobs of the product one tenant may have running at once, across every worker. */
  tenantCap?: number;
  /** How often the worker looks for jobs it was not woken for. */
  pollIntervalMs?: number;
  leaseMs?: number;
  /** On SIGTERM, how long jobs in flight may still finish before they are handed back. */
  drainTimeoutMs?: number;
}

/** How the engine is told about a run: the AI engine's own run context (abort signal, progress sentences). */
export interface ProductRunContext {
  signal: AbortSignal;
  onProgress(percent: number, currentlyWorkingOn: string): void;
  /** Told when a model call waits for the organisation's model budget: the job's time limit stands still meanwhile. */
  onModelWait(waiting: boolean): void;
  /** The job's tenant and id: the engine offers that tenant's customer tools and audits their calls under the job. */
  caller: { tenantId: string; jobId: string };
}

export interface ProductWorkerOptions extends Omit<ProductWorkerDeps<unknown>, 'engine'> {
  jobType: JobType;
  /** Parses the stored request with the product's contract and runs it on the engine. */
  run: (request: Record<string, unknown>, ctx: ProductRunContext) => Promise<RunOutcome>;
}

/** A product's worker role: each job of its type runs on the engine; failures are classified by classifyFailure. */
export function createProductWorker({ run, ...options }: ProductWorkerOptions): JobWorker {
  return createJobWorker({
    ...options,
    classify: classifyFailure,
    run: (job, ctx) =>
      run(job.request, {
        signal: ctx.signal,
        onProgress: (percent, workingOn) => ctx.progress(percent, workingOn),
        onModelWait: ctx.waitingForModel,
        caller: { tenantId: job.tenantId, jobId: job.id },
      }),
  });
}
