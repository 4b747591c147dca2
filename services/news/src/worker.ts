import { AiError, type AiEngine } from '@fin/ai';
import { NewsRequest } from '@fin/contracts';
import type { Pool } from '@fin/db';
import type { EventBus } from '@fin/events';
import { createJobWorker, type FailureVerdict, type JobWorker } from '@fin/job-kit';
import type { Logger } from '@fin/log';

/** What a client reads on the status endpoint when a run fails: the reason in plain words, no internals. */
export function classifyFailure(error: unknown): FailureVerdict {
  if (error instanceof AiError) {
    switch (error.kind) {
      case 'rate_limited':
      case 'overloaded':
      case 'upstream':
      case 'timeout':
      case 'connection':
        return { retry: true, type: 'service_unavailable', detail: 'The AI model was temporarily unavailable; the job was retried and could not complete.' };
      case 'invalid_output':
        return { retry: true, type: 'internal_error', detail: 'The AI model did not produce a valid result.' };
      case 'limit_exceeded':
        return { retry: false, type: 'internal_error', detail: 'The research exceeded its processing limits.' };
      case 'refused':
        return { retry: false, type: 'validation_error', detail: 'The AI model declined this request.' };
      default:
        return { retry: false, type: 'internal_error', detail: 'The AI service could not process the job.' };
    }
  }
  return { retry: true, type: 'internal_error', detail: 'An internal error stopped the job.' };
}

export interface NewsWorkerDeps {
  pool: Pool;
  bus: EventBus;
  engine: AiEngine;
  logger: Logger;
  timeLimitMs: number;
  concurrency?: number;
  leaseMs?: number;
}

/** The news worker role: runs each news job on the AI engine, reporting progress as it goes. */
export function createNewsWorker({ pool, bus, engine, logger, timeLimitMs, concurrency, leaseMs }: NewsWorkerDeps): JobWorker {
  return createJobWorker({
    pool,
    bus,
    logger,
    jobType: 'news',
    timeLimitMs,
    concurrency,
    leaseMs,
    classify: classifyFailure,
    async run(job, ctx) {
      const request = NewsRequest.parse(job.request);
      const { result, usage } = await engine.news(request, { signal: ctx.signal, onProgress: ctx.progress });
      return { result, usage };
    },
  });
}
