// Following a job to its end: its result when it completes, a JobFailedError when it fails. Follows the job's
// event stream (GET /api/jobs/{job_type}/{job_id}/events, re-attaching with Last-Event-ID when it drops),
// reporting each state to onProgress; against an API without that route (404), or when the stream cannot be
// kept, polls the status route every pollIntervalMs (2 s, as the API asks), then reads the result.
import { type RequestOptions, type Transport, sleep } from './core';
import { APIConnectionError, InternalServerError, JobFailedError, NotFoundError, RateLimitError } from './errors';
import { JobEventStream } from './streams';
import type { JobResultByType, JobResultResponseByType, JobStatusResponse, JobType } from './types';

export interface WaitOptions extends RequestOptions {
  /** Time between two status polls, in milliseconds; default 2000. */
  pollIntervalMs?: number;
  /** Called with every status read while the job runs (progress, currently_working_on). */
  onProgress?: (status: JobStatusResponse) => void;
}

/** The job's event stream. */
export function jobEvents(
  transport: Transport,
  jobType: JobType,
  jobId: string,
  options: RequestOptions & { lastEventId?: string; maxReconnects?: number } = {},
): JobEventStream {
  const { lastEventId, maxReconnects, ...request } = options;
  return new JobEventStream(
    transport,
    {
      ...request,
      method: 'GET',
      path: jobPath(jobType, jobId, 'events'),
      headers: { ...request.headers, ...(lastEventId !== undefined ? { 'Last-Event-ID': lastEventId } : {}) },
    },
    jobType,
    jobId,
    maxReconnects ?? request.maxRetries ?? transport.maxRetries,
  );
}

/** Follows the event stream to the result; undefined when it cannot (no such route, or the stream gave out). */
async function followEvents<T extends JobType>(
  transport: Transport,
  jobType: T,
  jobId: string,
  options: WaitOptions,
): Promise<JobResultByType[T] | undefined> {
  const { onProgress, pollIntervalMs: _interval, ...request } = options;
  let status: JobStatusResponse['status'] = 'pending';
  try {
    // No retries of the stream's own requests: a refused or failed stream (a 429 for too many open streams, a
    // 503) hands over to polling at once, which has the retries; a dropped stream still re-attaches.
    const events = jobEvents(transport, jobType, jobId, {
      ...request,
      maxRetries: 0,
      maxReconnects: request.maxRetries ?? transport.maxRetries,
    });
    for await (const event of events) {
      if (event.event === 'result') return event.data.result as JobResultByType[T];
      if (event.event === 'status') status = event.data.status;
      onProgress?.({ ...event.data, status });
    }
  } catch (error) {
    if (error instanceof JobFailedError) throw error;
    // 404 from an API without the route (the job itself was just created), a 429 (too many open streams), a 5xx
    // or a connection that could not be kept: polling takes over. Anything else (401, 403, an abort) is the
    // caller's to see.
    const pollInstead = [NotFoundError, RateLimitError, InternalServerError, APIConnectionError].some((type) => error instanceof type);
    if (!pollInstead) throw error;
  }
  return undefined;
}

export function jobPath(jobType: JobType, jobId: string, leaf: 'status' | 'result' | 'events'): string {
  return `/api/jobs/${encodeURIComponent(jobType)}/${encodeURIComponent(jobId)}/${leaf}`;
}

/** Waits for the job to end; its `result` when it completed, JobFailedError when it failed. */
export async function waitForJob<T extends JobType>(
  transport: Transport,
  jobType: T,
  jobId: string,
  options: WaitOptions = {},
): Promise<JobResultByType[T]> {
  const followed = await followEvents(transport, jobType, jobId, options);
  if (followed !== undefined) return followed;
  const { pollIntervalMs = 2000, onProgress, ...request } = options;
  for (;;) {
    const { data: status } = await transport.json<JobStatusResponse>({
      ...request,
      method: 'GET',
      path: jobPath(jobType, jobId, 'status'),
    });
    onProgress?.(status);
    if (status.status === 'failed') throw new JobFailedError(jobType, jobId, status.error);
    if (status.status === 'completed') {
      const { data } = await transport.json<JobResultResponseByType[T]>({
        ...request,
        method: 'GET',
        path: jobPath(jobType, jobId, 'result'),
      });
      return data.result as JobResultByType[T];
    }
    await sleep(pollIntervalMs, request.signal);
  }
}
