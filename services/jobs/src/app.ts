import { type JobPathParams } from '@fin/contracts';
import { createHandlerApp, createLifecycle, type Caller, type HandlerTable, type Lifecycle } from '@fin/http';
import { type Logger } from '@fin/log';
import type express from 'express';
import { type JobQueries, type JobRef } from './job-queries';
import { type JobStreams } from './job-streams';

export interface JobsAppDeps {
  logger: Logger;
  /** Answers of the two endpoints (createJobQueries over the database pool). */
  queries: JobQueries;
  /** The job event streams of this process. */
  streams: JobStreams;
  /** INTERNAL_SIGNING_SECRET: requests without the gateway's valid signature are refused (401). */
  signingSecret: string;
  /** Whether the database is reachable. */
  readiness: () => Promise<void>;
  lifecycle?: Lifecycle;
}

const refOf = (params: JobPathParams, caller: Caller): JobRef => ({
  tenantId: caller.tenantId,
  jobType: params.job_type,
  jobId: params.job_id.toLowerCase(),
});

/** The job-status handlers: status, result and the event stream of a job, for the tenant the gateway vouches for. */
export function createJobsHandlers({ queries, streams }: Pick<JobsAppDeps, 'queries' | 'streams'>): HandlerTable {
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

/** The job-status HTTP application behind the gateway's signed identity. Pure: it never listens. */
export function createApp({
  logger,
  queries,
  streams,
  signingSecret,
  readiness,
  lifecycle = createLifecycle(),
}: JobsAppDeps): express.Express {
  return createHandlerApp(
    { name: 'jobs', handlers: createJobsHandlers({ queries, streams }), readiness, lifecycle, start: async () => {}, closers: [] },
    { logger, signingSecret },
  );
}
