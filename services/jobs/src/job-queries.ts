// What the status and result endpoints answer. Each answer is one read of job-store (a prepared primary-key read
// of only the columns it needs), and a pending job's status also its place in the queue; here are the answers' rules: 404 alike for missing and foreign jobs, 409 until done.
import {
  JobError,
  JobResultByType,
  jobUrls,
  type JobResultResponse,
  type JobStatus,
  type JobStatusResponse,
  type JobType,
} from '@fin/contracts';
import { type Queryable } from '@fin/db';
import { AppError, notFound } from '@fin/http';
import { readJobResult, readJobStatus, readQueuePosition, type JobRef, type JobStatusRow } from '@fin/job-store';

export type { JobRef } from '@fin/job-store';

export interface JobQueries {
  status(ref: JobRef): Promise<JobStatusResponse>;
  /** The result of a completed job; a 409 (keep polling, or: it failed) otherwise. */
  result(ref: JobRef): Promise<JobResultResponse>;
}

/**
 * The same answer for a job that does not exist, one of another job type and one of another tenant, so that a
 * caller cannot learn that someone else's job id exists.
 */
export const JOB_NOT_FOUND_DETAIL = 'Job not found.';

/** Seconds a client should wait before polling again (the spec suggests 2 s). */
const POLL_INTERVAL_SECONDS = 2;

/** The step shown when the worker has not said what it is doing. */
const DEFAULT_STEP: Record<JobStatus, string> = {
  pending: 'Waiting for a worker',
  running: 'Working on the request',
  completed: 'Completed',
  failed: 'Failed',
};

const UNKNOWN_FAILURE: JobError = { type: 'internal_error', detail: 'The job failed.' };

type StatusRow = JobStatusRow;

/** Why the job failed, as clients see it (a stored error that does not parse reads as a generic failure). */
export function failureOf(row: Pick<StatusRow, 'error'>): JobError {
  const parsed = JobError.safeParse(row.error);
  return parsed.success ? parsed.data : UNKNOWN_FAILURE;
}

/** The current step, as clients see it: the worker's own words, or the status's default. */
export function stepOf(row: Pick<StatusRow, 'status' | 'currently_working_on'>): string {
  return row.currently_working_on ?? DEFAULT_STEP[row.status];
}

function notFinished(ref: JobRef, row: StatusRow): AppError {
  const statusUrl = `/api/jobs/${ref.jobType}/${ref.jobId}/status`;
  const state =
    row.status === 'pending'
      ? `The job has not started yet (${row.progress}%): ${stepOf(row)}.`
      : `The job is still running (${row.progress}%): ${stepOf(row)}.`;
  return new AppError('conflict', `${state} Poll the status URL (${statusUrl}) until it reports completed, then read the result.`, {
    headers: { 'Retry-After': String(POLL_INTERVAL_SECONDS) },
  });
}

function failed(row: StatusRow): AppError {
  const { detail } = failureOf(row);
  return new AppError('conflict', `The job failed and will not complete. Reason: ${detail} Submit the request again to retry.`);
}

/**
 * A stored result as its contract reads it today: a result stored before a field was added gets the field's
 * default (results from before citations read with `citations: []`). A result the contract would refuse is
 * answered as it was stored: a completed job's result is never turned into an error.
 */
export function currentShape(type: JobType, result: Record<string, unknown>): Record<string, unknown> {
  const parsed = JobResultByType[type].safeParse(result);
  return parsed.success ? parsed.data : result;
}

export function createJobQueries(db: Queryable): JobQueries {
  return {
    async status(ref) {
      const row = await readJobStatus(db, ref);
      if (row === undefined) throw notFound(JOB_NOT_FOUND_DETAIL);
      const fields = { job_id: ref.jobId, progress: row.progress, currently_working_on: stepOf(row) };
      if (row.status === 'failed') return { ...fields, status: 'failed', error: failureOf(row) };
      if (row.status === 'completed') return { ...fields, status: 'completed', result_url: jobUrls(ref.jobType, ref.jobId).result_url };
      if (row.status !== 'pending') return { ...fields, status: row.status };
      // Only a pending job has a place in the queue (a second read; the others stay one primary-key read).
      const ahead = await readQueuePosition(db, ref);
      return { ...fields, status: 'pending', ...(ahead === undefined ? {} : { queue_position: ahead }) };
    },

    async result(ref) {
      const row = await readJobResult(db, ref);
      if (row === undefined) throw notFound(JOB_NOT_FOUND_DETAIL);
      if (row.status === 'failed') throw failed(row);
      if (row.status !== 'completed' || row.result === null) throw notFinished(ref, row);
      return { job_id: ref.jobId, status: 'completed', result: currentShape(ref.jobType, row.result) };
    },
  };
}
