import { type JobPathParams } from '@fin/contracts';
import { type Caller, type HandlerTable } from '@fin/http';
import { type JobQueries, type JobRef } from './job-queries';
import { type JobStreams } from './job-streams';

/** What the handlers answer from. */
export interface JobsHandlerDeps {
  /** Answers of the two endpoints (createJobQueries over the database pool). */
  queries: JobQueries;
  /** The job event streams of this process. */
  streams: JobStreams;
}

const refOf = (params: JobPathParams, caller: Caller): JobRef => ({
  tenantId: caller.tenantId,
  jobType: params.job_type,
  jobId: params.job_id.toLowerCase(),
});

/** The job-status handlers: status, result and the event stream of a job, for the tenant the gateway vouches for. */
export function createJobsHandlers({ queries, streams }: JobsHandlerDeps): HandlerTable {
  return {
    getJobStatus: ({ params, caller }, { res }) => {
      // A poll must never be answered from an intermediary's cache.
      res.set('Cache-Control', 'no-store');
      return queries.status(refOf(params, caller));
    },
    getJobResult: ({ params, caller }, { res }) => {
      res.set('Cache-Control', 'no-store');
      return queries.result(refOf(params, caller));
    },
    getJobEvents: async ({ params, headers, caller }, { res }) => {
      const last = headers['Last-Event-ID'];
      await streams.serve(refOf(params, caller), last === undefined ? undefined : Number(last), res);
    },
  };
}
