import type { AiEngine } from '@fin/ai';
import { AnalysisRequest } from '@fin/contracts';
import { classifyFailure, createProductWorker, type FailureVerdict, type JobWorker, type ProductWorkerDeps } from '@fin/job-kit';
import { RequestStopped } from './open-requests';

/** A failed analysis as the client reads it: a stopped stream says why it stopped; engine failures as every product. */
export function classifyAnalysisFailure(error: unknown): FailureVerdict {
  if (error instanceof RequestStopped) return { retry: false, type: error.error.type, detail: error.error.detail };
  return classifyFailure(error);
}

/** The analysis worker role: runs each queued (non-streamed) analysis job on the AI engine. */
export function createAnalysisWorker(deps: ProductWorkerDeps<AiEngine>): JobWorker {
  const { engine, ...options } = deps;
  return createProductWorker({
    ...options,
    jobType: 'analysis',
    async run(request, ctx) {
      const { result, usage } = await engine.analysis(AnalysisRequest.parse(request), ctx);
      return { result, usage };
    },
  });
}
