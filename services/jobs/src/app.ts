import { API_ROUTES, type JobPathParams } from '@fin/contracts';
import { createServiceApp, identityKey, route, verifyIdentity, type Caller, type Lifecycle } from '@fin/http';
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

/**
 * The job-status HTTP application: GET /api/jobs/{job_type}/{job_id}/status, /result and /events, for the tenant
 * the gateway vouches for. Pure: it never listens.
 */
export function createApp({ logger, queries, streams, signingSecret, readiness, lifecycle }: JobsAppDeps): express.Express {
  return createServiceApp({
    name: 'jobs',
    logger,
    readiness,
    ...(lifecycle === undefined ? {} : { lifecycle }),
    routes: (app) => {
      // Before the routes' own validation: a request the gateway did not sign learns nothing, not even a 400.
      app.use('/api/jobs', verifyIdentity(identityKey(signingSecret, 'jobs'), { logger }));

      const refOf = (params: JobPathParams, caller: Caller): JobRef => ({
        tenantId: caller.tenantId,
        jobType: params.job_type,
        jobId: params.job_id.toLowerCase(),
      });

      route(app, API_ROUTES.getJobStatus, ({ params, caller }, { res }) => {
        // A poll must never be answered from an intermediary's cache.
        res.set('Cache-Control', 'no-store');
        return queries.status(refOf(params, caller));
      });
      route(app, API_ROUTES.getJobResult, ({ params, caller }, { res }) => {
        res.set('Cache-Control', 'no-store');
        return queries.result(refOf(params, caller));
      });
      route(app, API_ROUTES.getJobEvents, async ({ params, headers, caller }, { res }) => {
        const last = headers['Last-Event-ID'];
        await streams.serve(refOf(params, caller), last === undefined ? undefined : Number(last), res);
      });
    },
  });
}
