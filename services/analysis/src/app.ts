import type { AiEngine } from '@fin/ai';
import { AnalysisResponse, AnalysisResult, analysisText, jobUrls, type AnalysisRequest } from '@fin/contracts';
import type { Pool } from '@fin/db';
import {
  AppError,
  serviceUnavailable,
  streamEndedEarly,
  toAppError,
  tokenBudgetRefusal,
  type HandlerTable,
  type Lifecycle,
} from '@fin/http';
import { checkCallbackUrl, createInlineRunner, leaveCallback, submitJob } from '@fin/job-kit';
import type { AddressPolicy } from '@fin/customer-tools';
import type { Logger } from '@fin/log';
import type express from 'express';
import { openEventStream, type AnalysisEventStream } from './event-stream';
import type { FinishedJob, JobWatcher } from '@fin/job-store';
import { clientLeft, RequestStopped, type OpenRequests } from './open-requests';
import { classifyAnalysisFailure } from './worker';

export interface AnalysisSettings {
  /** How long a non-streamed request waits for its job to finish before answering 202. */
  inlineWaitMs: number;
  /** Time limit of a streamed analysis (run here) — the worker role has the same one. */
  timeLimitMs: number;
  leaseMs: number;
  /** Attempts of a queued (non-streamed) job. A streamed one has one: it ends with its stream. */
  maxAttempts: number;
  /** `: keep-alive` comment interval of a quiet stream. */
  heartbeatMs: number;
  /** How long `done` waits for the job-status service to have recorded the result. */
  doneWaitMs: number;
}

export interface AnalysisHandlerDeps {
  pool: Pool;
  logger: Logger;
  /** Runs streamed analyses in this process. */
  engine: AiEngine;
  watcher: JobWatcher;
  openRequests: OpenRequests;
  lifecycle: Lifecycle;
  settings: AnalysisSettings;
  /** Which callback_url hosts are refused at once (tests allow loopback, as CUSTOMER_TOOLS_ALLOW_LOOPBACK does). */
  callbackPolicy?: AddressPolicy;
}

type Request = AnalysisRequest;
interface Caller {
  tenantId: string;
  idempotencyKey: string | undefined;
  /** The request's callback_url: left on the job the answer names (not a part of the job). */
  callbackUrl: string | undefined;
  /** Set when the account's daily token budget is spent: only a replayed Idempotency-Key is answered. */
  newWorkRefusal?: AppError;
}

/** The job's failure as an error answer (the job's error type and its reason), pointing at the job. */
function jobFailure(jobId: string, error: { type: AppError['type']; detail: string }): AppError {
  return new AppError(error.type, error.detail, { headers: { Location: jobUrls('analysis', jobId).status_url } });
}

/** A signal that aborts with `controller`'s or after `ms`. */
function within(controller: AbortController, ms: number): AbortSignal {
  return AbortSignal.any([controller.signal, AbortSignal.timeout(ms)]);
}

/** Aborts `controller` with `clientLeft()` when the response closes before it was finished (or was cut). */
function abortWhenClientLeaves(res: express.Response, controller: AbortController): void {
  res.once('close', () => {
    if (streamEndedEarly(res) && !controller.signal.aborted) controller.abort(clientLeft());
  });
}

/**
 * The analysis API role. `POST /api/analysis` validates the request; then
 * - not streamed: the job is queued for the workers, and the answer waits up to `inlineWaitMs` for it: 200 with
 *   the result when it completed, 202 with the job URLs otherwise, the job's own error when it failed;
 * - streamed: the job runs here, in this request, and its synthesis goes out as SSE `synthesis_chunk` events,
 *   then `done`; the job and its result are stored like any other.
 * Tenant identity comes from the gateway's signed headers.
 */
export function createAnalysisHandlers(deps: AnalysisHandlerDeps): HandlerTable {
  const { pool, logger, engine, watcher, openRequests, lifecycle, settings, callbackPolicy } = deps;
  const runner = createInlineRunner({
    pool,
    logger,
    jobType: 'analysis',
    classify: classifyAnalysisFailure,
    timeLimitMs: settings.timeLimitMs,
    leaseMs: settings.leaseMs,
  });

  async function answerWhenDone(request: Request, caller: Caller, res: express.Response): Promise<AnalysisResponse> {
    const outcome = await submitJob(pool, {
      tenantId: caller.tenantId,
      idempotencyKey: caller.idempotencyKey,
      jobType: 'analysis',
      request: { ...request },
      maxAttempts: settings.maxAttempts,
      ...(caller.newWorkRefusal === undefined ? {} : { newWorkRefusal: caller.newWorkRefusal }),
    });
    await leaveCallback(pool, caller.tenantId, outcome.jobId, caller.callbackUrl);
    const urls = jobUrls('analysis', outcome.jobId);
    let finished: FinishedJob | undefined =
      outcome.kind === 'replayed' && outcome.result ? { status: 'completed', result: outcome.result } : undefined;
    if (!finished && settings.inlineWaitMs > 0 && !lifecycle.shuttingDown) {
      const waiting = new AbortController();
      abortWhenClientLeaves(res, waiting);
      const untrack = openRequests.track('wait', waiting);
      try {
        finished = await watcher.finished(outcome.jobId, within(waiting, settings.inlineWaitMs));
      } finally {
        untrack();
      }
    }
    if (finished?.status === 'failed') throw jobFailure(outcome.jobId, finished.error);
    if (finished?.status === 'completed')
      return AnalysisResponse.parse({ job_id: outcome.jobId, status: 'completed', result: finished.result, ...urls });
    res.status(202).setHeader('Location', urls.status_url);
    return { job_id: outcome.jobId, status: 'pending', ...urls };
  }

  /** Ends `events` the way the job ended: `done` (after its text, when `withText`), or the job's error. */
  function finish(events: AnalysisEventStream, jobId: string, job: FinishedJob, withText: boolean): void {
    if (job.status === 'failed') {
      events.send('error', jobFailure(jobId, job.error).toBody());
      return;
    }
    if (withText) events.send('synthesis_chunk', { chunk: analysisText(AnalysisResult.parse(job.result)) });
    events.send('done', { job_id: jobId, status: 'completed' });
  }

  /**
   * A replayed Idempotency-Key of a streamed request streams that job's outcome: its whole text and `done`, or its
   * error. A job still running is waited for (with keep-alives) as long as the stream is open.
   */
  async function replay(jobId: string, events: AnalysisEventStream, stop: AbortController): Promise<void> {
    const job = await watcher.finished(jobId, stop.signal);
    if (job) finish(events, jobId, job, true);
    else if (stop.signal.reason instanceof RequestStopped && stop.signal.reason.why === 'shutdown')
      events.send('error', stop.signal.reason.error.toBody());
  }

  async function stream(request: Request, caller: Caller, res: express.Response, log: Logger): Promise<void> {
    if (lifecycle.shuttingDown) throw serviceUnavailable('The analysis service is shutting down. Send the request again.');
    const stop = new AbortController();
    abortWhenClientLeaves(res, stop);
    const untrack = openRequests.track('stream', stop);
    let events: AnalysisEventStream | undefined;
    const open = (jobId: string) =>
      (events ??= openEventStream(res, { location: jobUrls('analysis', jobId).status_url, heartbeatMs: settings.heartbeatMs }));
    try {
      const outcome = await runner.run(
        { ...caller, request: { ...request }, signal: stop.signal, onStart: (jobId) => void open(jobId) },
        async (job, ctx) => {
          const run = {
            signal: ctx.signal,
            onProgress: ctx.progress,
            onModelWait: ctx.waitingForModel,
            caller: { tenantId: job.tenantId, jobId: job.id },
          };
          for await (const item of engine.analysisStream(request, run)) {
            if (item.kind === 'result') return { result: item.result.result, usage: item.result.usage };
            if (item.event.type === 'text') events?.send('synthesis_chunk', { chunk: item.event.text });
          }
          throw new Error('The analysis stream ended without a result.');
        },
      );
      // Once the job is known: a job that already ended has its callback queued at once.
      await leaveCallback(pool, caller.tenantId, outcome.jobId, caller.callbackUrl);
      if (outcome.kind === 'replayed') {
        await replay(outcome.jobId, open(outcome.jobId), stop);
      } else if (outcome.kind === 'failed') {
        finish(open(outcome.jobId), outcome.jobId, { status: 'failed', error: outcome.error }, false);
      } else {
        // So that the result URL serves the result by the time the client reads `done`; a slow job-status service
        // only delays `done`, never fails the stream.
        if (settings.doneWaitMs > 0) {
          await watcher
            .finished(outcome.jobId, within(stop, settings.doneWaitMs))
            .catch((error: unknown) => log.warn({ err: error }, 'Waiting for the job to be recorded failed'));
        }
        finish(open(outcome.jobId), outcome.jobId, { status: 'completed', result: outcome.result }, false);
      }
    } catch (error) {
      // Once the stream is open, a failure can only be told as its last event.
      if (!events) throw error;
      log.error({ err: error }, 'The analysis stream failed');
      events.send('error', toAppError(error).toBody());
    } finally {
      untrack();
      events?.end();
    }
  }

  return {
    createAnalysis: async ({ body, headers, caller }, { res, logger: requestLogger }) => {
      const { callback_url: callbackUrl, ...request } = body;
      await checkCallbackUrl(pool, caller.tenantId, callbackUrl, callbackPolicy);
      const submitter: Caller = {
        tenantId: caller.tenantId,
        idempotencyKey: headers['Idempotency-Key'],
        callbackUrl,
        // An analysis has no cache: past the daily budget, only a replay (which spends nothing) is answered.
        ...(caller.spentBudget === undefined ? {} : { newWorkRefusal: tokenBudgetRefusal(caller.spentBudget) }),
      };
      if (!request.output_format.stream) return answerWhenDone(request, submitter, res);
      await stream(request, submitter, res, requestLogger ?? logger);
      return undefined;
    },
  };
}
