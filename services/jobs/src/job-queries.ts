// What the status and result endpoints answer. Each answer is one read of job-store (a prepared primary-key read
// of only the columns it needs), and a pending job's status also its place in the queue; here are the answers' rules: 404 alike for missing and foreign jobs, 409 until done.
// A finished job's status is answered from memory after its first read (FinishedStatuses).
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

/** JOBS_FINISHED_STATUS_MAX_BYTES by default: 8 MiB, some tens of thousands of finished jobs' status answers. */
export const DEFAULT_FINISHED_STATUS_MAX_BYTES = 8 * 1024 * 1024;

/** What an answer costs beyond its JSON: its key, the object and the map entry. */
const STATUS_OVERHEAD_BYTES = 256;

/**
 * The status answers of finished jobs, by tenant, type and id, within `maxBytes` (the least recently used go
 * first). A completed or failed job's status never changes: every write to a job's state requires it unfinished
 * (the lease statements, the reaper), and no job row is deleted. So a finished job's answer, once read for a tenant,
 * is that tenant's answer for good, in every replica: it needs neither a notification nor an expiry. Only what the
 * database answered for exactly that tenant, type and id is kept; a missing or foreign job (404) and an unfinished
 * one are read every time.
 */
class FinishedStatuses {
  private readonly answers = new Map<string, { answer: JobStatusResponse; bytes: number }>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  private static keyOf({ tenantId, jobType, jobId }: JobRef): string {
    return `${tenantId}\n${jobType}\n${jobId}`;
  }

  get(ref: JobRef): JobStatusResponse | undefined {
    const key = FinishedStatuses.keyOf(ref);
    const held = this.answers.get(key);
    if (held === undefined) return undefined;
    this.answers.delete(key);
    this.answers.set(key, held);
    return held.answer;
  }

  remember(ref: JobRef, answer: JobStatusResponse): void {
    const key = FinishedStatuses.keyOf(ref);
    const bytes = STATUS_OVERHEAD_BYTES + 2 * key.length + Buffer.byteLength(JSON.stringify(answer));
    if (bytes > this.maxBytes || this.answers.has(key)) return;
    while (this.bytes + bytes > this.maxBytes) {
      const oldest = this.answers.entries().next();
      if (oldest.done) break;
      this.answers.delete(oldest.value[0]);
      this.bytes -= oldest.value[1].bytes;
    }
    this.answers.set(key, { answer, bytes });
    this.bytes += bytes;
  }
}

export interface JobQueriesOptions {
  /** Memory for finished jobs' status answers (JOBS_FINISHED_STATUS_MAX_BYTES); 0 keeps none. */
  finishedStatusMaxBytes?: number;
}

export function createJobQueries(
  db: Queryable,
  { finishedStatusMaxBytes = DEFAULT_FINISHED_STATUS_MAX_BYTES }: JobQueriesOptions = {},
): JobQueries {
  const finished = new FinishedStatuses(finishedStatusMaxBytes);
  return {
    async status(ref) {
      const held = finished.get(ref);
      if (held !== undefined) return held;
      const row = await readJobStatus(db, ref);
      if (row === undefined) throw notFound(JOB_NOT_FOUND_DETAIL);
      const fields = { job_id: ref.jobId, progress: row.progress, currently_working_on: stepOf(row) };
      if (row.status === 'failed' || row.status === 'completed') {
        const answer: JobStatusResponse =
          row.status === 'failed'
            ? { ...fields, status: 'failed', error: failureOf(row) }
            : { ...fields, status: 'completed', result_url: jobUrls(ref.jobType, ref.jobId).result_url };
        finished.remember(ref, answer);
        return answer;
      }
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
