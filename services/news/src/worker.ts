import type { AiEngine } from '@fin/ai';
import { NewsRequest } from '@fin/contracts';
import { createProductWorker, type JobWorker, type ProductWorkerDeps } from '@fin/job-kit';

/** The news worker role: runs each news job on the AI engine, reporting progress as it goes. */
export function createNewsWorker({ engine, ...deps }: ProductWorkerDeps<AiEngine>): JobWorker {
  return createProductWorker({ ...deps, jobType: 'news', run: (request, ctx) => engine.news(NewsRequest.parse(request), ctx) });
}
