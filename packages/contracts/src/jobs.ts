// GET /api/jobs/{job_type}/{job_id}/status and /result
import { z } from 'zod';
import { AnalysisResult } from './analysis';
import { JobId, JobResultUrl, JobType } from './common';
import { ErrorType } from './errors';
import { NewsResult } from './news';
import { StockReportResult } from './stock-report';

export const JobPathParams = z
  .object({ job_type: JobType, job_id: JobId })
  .meta({ id: 'JobPathParams', description: 'Path parameters of the job endpoints.' });
export type JobPathParams = z.infer<typeof JobPathParams>;

/** Why a job failed. `type` reuses the error categories (e.g. gateway_timeout when the model timed out). */
export const JobError = z
  .object({
    type: ErrorType,
    detail: z.string().meta({ examples: ['The analysis model did not answer within 120 s after 3 attempts.'] }),
  })
  .meta({ id: 'JobError', description: 'Reason of a failed job. Never contains internals (stack traces, upstream bodies).' });
export type JobError = z.infer<typeof JobError>;

const statusFields = {
  job_id: JobId,
  progress: z
    .int()
    .min(0)
    .max(100)
    .meta({ description: 'Percent complete, 0 to 100; never decreases.', examples: [75] }),
  currently_working_on: z.string().meta({ description: 'Human-readable current step.', examples: ['Ranking news by relevance'] }),
};

const notFailed = { error: z.never({ error: 'is only present when status is failed' }).optional() };

/**
 * How many jobs are ahead of a pending one. Only a pending job has a place in the queue, so the field is only in the
 * pending branch of the answer (and absent there for a job created already held by the process that runs it).
 */
const QueuePosition = z
  .int()
  .min(0)
  .meta({
    description:
      'While the job is pending: about how many jobs of its type the workers will start before it (0: it is next), if ' +
      'no other job arrives. Workers take turns between accounts: the next job comes from the account with the least ' +
      "work of that type running, its oldest job first. So for the k-th waiting job of its account, the account's k − 1 " +
      'older jobs are ahead, and from each other account with jobs waiting up to k of them (ties between turns go to ' +
      'the older job): more when that account has less work running, fewer when it has more. An estimate: a job ' +
      'another account submits later can still go ahead of this one.',
    examples: [3],
  });

/**
 * Answer of the status endpoint. `error` is present exactly when status is failed (and then required), so a
 * client learns why without another call; a job that is not failed never carries one. `queue_position` is only
 * in a pending job's answer, `result_url` in a completed one's. Expressed as a union on `status` so the OpenAPI document states the rules too.
 */
export const JobStatusResponse = z
  .discriminatedUnion('status', [
    z.object({ ...statusFields, status: z.literal('pending'), queue_position: QueuePosition.optional(), ...notFailed }),
    z.object({
      ...statusFields,
      status: z.literal('running'),
      queue_position: z.never({ error: 'is only present when status is pending' }).optional(),
      ...notFailed,
    }),
    z.object({
      ...statusFields,
      status: z.literal('completed'),
      queue_position: z.never({ error: 'is only present when status is pending' }).optional(),
      result_url: JobResultUrl,
      ...notFailed,
    }),
    z.object({ ...statusFields, status: z.literal('failed'), error: JobError }),
  ])
  .meta({
    id: 'JobStatusResponse',
    description: 'Current state of a job. Poll while pending or running.',
    examples: [
      {
        job_id: '3fa85f64-5717-4562-b3fc-2c963f66afa6',
        status: 'running',
        progress: 75,
        currently_working_on: 'Ranking news by relevance',
      },
    ],
  });
export type JobStatusResponse = z.infer<typeof JobStatusResponse>;

/** Answer of the result endpoint whatever the job type: `result` is an object (see JobResultByType). */
export const JobResultResponse = z
  .object({
    job_id: JobId,
    status: z.literal('completed'),
    result: z.record(z.string(), z.unknown()).meta({ description: 'Job-specific result; its shape depends on the job type.' }),
  })
  .meta({ id: 'JobResultResponse', description: 'Result of a completed job.' });
export type JobResultResponse = z.infer<typeof JobResultResponse>;

/** Job type → shape of `result`. What the workers store and what the result endpoint returns. */
export const JobResultByType = {
  news: NewsResult,
  'stock-report': StockReportResult,
  analysis: AnalysisResult,
} as const satisfies Record<JobType, z.ZodType>;
export type JobResultByType = { [K in JobType]: z.infer<(typeof JobResultByType)[K]> };

/** Job type → full result-endpoint response with `result` typed. */
export const JobResultResponseByType = {
  news: JobResultResponse.extend({ result: NewsResult }).meta({
    id: 'NewsJobResultResponse',
    description: 'Result of a completed news job.',
  }),
  'stock-report': JobResultResponse.extend({ result: StockReportResult }).meta({
    id: 'StockReportJobResultResponse',
    description: 'Result of a completed stock-report job.',
  }),
  analysis: JobResultResponse.extend({ result: AnalysisResult }).meta({
    id: 'AnalysisJobResultResponse',
    description: 'Result of a completed analysis job.',
  }),
} as const satisfies Record<JobType, z.ZodType>;
