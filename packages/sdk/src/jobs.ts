// Following a job to its end: its result when it completes, a JobFailedError when it fails. Polls the status
// route every pollIntervalMs (2 s, as the API asks), reporting each status to onProgress, then reads the result.
import { type RequestOptions, type Transport, sleep } from './core';
import { JobFailedError } from './errors';
import type { JobResultByType, JobResultResponseByType, JobStatusResponse, JobType } from './types';

export interface WaitOptions extends RequestOptions {
  /** Time between two status polls, in milliseconds; default 2000. */
  pollIntervalMs?: number;
  /** Called with every status read while the job runs (progress, currently_working_on). */
  onProgress?: (status: JobStatusResponse) => void;
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
