// The live event stream of a job (GET /api/jobs/{job_type}/{job_id}/events). Every replica of the service hears
// every job.state event (its own broadcast subscription to jobs.events, see consumer.ts), so a stream can be
// served by any replica, whichever one's observer owns the job's partition. A stream starts from the job row, then
// follows the events (the final one carries the result or error the runner committed), and every open stream's
// job is read again on each keep-alive tick, which makes up for an event missed while the subscription was
// joining or the broker was away. Each stream drops what its client already has, so duplicate, late and
// reordered events never show and a state never goes backwards.
import { ERROR_STATUS, formatSse, type JobStatus } from '@fin/contracts';
import type { Queryable } from '@fin/db';
import type { JobStateEventPayload } from '@fin/events';
import { AppError, notFound, serviceUnavailable, tooManyRequests, trackEventStream } from '@fin/http';
import { readJobStreamState, readJobStreamStates, type JobRef, type JobStreamRow } from '@fin/job-store';
import type { Logger } from '@fin/log';
import type { Response } from 'express';
import { currentShape, failureOf, JOB_NOT_FOUND_DETAIL, stepOf } from './job-queries';

export interface JobStreamsOptions {
  db: Queryable;
  logger: Logger;
  /** A `: keep-alive` comment (and a read of every open stream's job) this often. */
  keepAliveMs: number;
  /** Told to EventSource clients as `retry:`: how soon to reconnect after a dropped connection. */
  retryMs?: number;
  /** Open streams per process; beyond, 503. */
  maxStreams: number;
  /** Open streams per account (tenant) and process; beyond, 429. */
  maxStreamsPerTenant: number;
}

export interface JobStreams {
  /**
   * Serves the stream of `ref` on `res`: 404 (thrown, before anything is written) for a job the caller does not
   * have, 204 when the job has finished and the client already has its final event (`lastEventId`), else the
   * stream, which ends at the job's final event, when the client leaves, or at close().
   */
  serve(ref: JobRef, lastEventId: number | undefined, res: Response): Promise<void>;
  /** Hands a job.state event to the streams that follow its job. */
  onEvent(event: JobStateEventPayload): void;
  /** Whether a stream follows the job (its events matter here). */
  follows(jobId: string): boolean;
  /** Ends every open stream and refuses new ones (shutdown: clients reconnect to another replica with Last-Event-ID). */
  close(): void;
  /** Open streams. */
  readonly size: number;
}

/** A job's state as a stream applies it, from a job.state event or from the row. */
interface JobState {
  seq: number;
  status: JobStatus;
  progress: number;
  step: string;
  /** Only on a state read from the row. */
  row?: JobStreamRow;
}

const KEEP_ALIVE = ': keep-alive\n\n';
const RANK: Record<JobStatus, number> = { pending: 0, running: 1, completed: 2, failed: 2 };
const isFinal = (status: JobStatus) => status === 'completed' || status === 'failed';

function stateOfRow(row: JobStreamRow): JobState {
  return { seq: row.event_seq, status: row.status, progress: row.progress, step: stepOf(row), row };
}

/**
 * One client's stream. It remembers what the client has (the newest event id, the status, progress and step it
 * was last sent), so nothing is sent twice and nothing goes backwards, however late or duplicated an event is.
 */
class Follower {
  #res: Response | undefined;
  /** The newest state that came while the stream was being opened, applied once it is. */
  #early: JobState | undefined;
  #lastSeq: number;
  #status: JobStatus | undefined;
  #progress = -1;
  #step: string | undefined;
  ended = false;

  constructor(
    readonly ref: JobRef,
    lastEventId: number | undefined,
  ) {
    this.#lastSeq = lastEventId ?? -1;
  }

  /** Opens the stream on `res` and sends `state` (the row), then whatever newer came meanwhile. */
  start(res: Response, retryMs: number, state: JobState): void {
    this.#res = res;
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    trackEventStream('jobs', res);
    res.write(`retry: ${retryMs}\n\n`);
    this.apply(state);
    const early = this.#early;
    this.#early = undefined;
    if (early !== undefined) this.apply(early);
  }

  apply(state: JobState): void {
    if (this.ended) return;
    if (this.#res === undefined) {
      if (state.seq > (this.#early?.seq ?? -1)) this.#early = state;
      return;
    }
    // The client has this state, or a newer one; and a status never goes back. A finished job's stream ends even
    // when the client claims to have its final event (a Last-Event-ID from further on).
    if (state.seq <= this.#lastSeq || (this.#status !== undefined && RANK[state.status] < RANK[this.#status])) {
      if (isFinal(state.status) && state.row !== undefined) this.end();
      return;
    }
    const id = String(state.seq);
    const { jobId } = this.ref;
    if (isFinal(state.status)) {
      // A final state carries its row: the result or the error as committed (from the final event, or read back).
      const row = state.row;
      if (row === undefined) return;
      if (row.status === 'completed') {
        // What the result endpoint answers.
        const result = currentShape(this.ref.jobType, row.result ?? {});
        this.#write(formatSse('result', { job_id: jobId, status: 'completed', result }, id));
      } else {
        const { type, detail } = failureOf(row);
        this.#write(formatSse('error', { job_id: jobId, detail, status_code: ERROR_STATUS[type], type }, id));
      }
      this.end();
      return;
    }
    const progress = Math.max(this.#progress, state.progress);
    if (this.#status !== state.status) {
      this.#write(formatSse('status', { job_id: jobId, status: state.status, progress, currently_working_on: state.step }, id));
    } else if (progress !== this.#progress || state.step !== this.#step) {
      this.#write(formatSse('progress', { job_id: jobId, progress, currently_working_on: state.step }, id));
    }
    this.#lastSeq = state.seq;
    this.#status = state.status;
    this.#progress = progress;
    this.#step = state.step;
  }

  keepAlive(): void {
    if (this.#res !== undefined) this.#write(KEEP_ALIVE);
  }

  end(): void {
    this.ended = true;
    const res = this.#res;
    if (res !== undefined && !res.writableEnded) res.end();
  }

  #write(text: string): void {
    const res = this.#res;
    if (res !== undefined && !res.writableEnded && !res.destroyed) res.write(text);
  }
}

export function createJobStreams({
  db,
  logger,
  keepAliveMs,
  retryMs = 1_000,
  maxStreams,
  maxStreamsPerTenant,
}: JobStreamsOptions): JobStreams {
  const log = logger.child({ component: 'job-streams' });
  /** Job id → the streams following it. */
  const byJob = new Map<string, Set<Follower>>();
  const perTenant = new Map<string, number>();
  let size = 0;
  let closed = false;
  const isClosed = () => closed;
  let timer: NodeJS.Timeout | undefined;
  let ticking = false;

  const applyRows = (rows: readonly JobStreamRow[]) => {
    for (const row of rows) for (const follower of byJob.get(row.id) ?? []) follower.apply(stateOfRow(row));
  };

  const reread = async (jobIds: readonly string[]) => {
    try {
      applyRows(await readJobStreamStates(db, jobIds));
    } catch (error) {
      log.warn({ err: error, jobs: jobIds.length }, 'reading the jobs of open event streams failed; the next keep-alive reads them again');
    }
  };

  /** Keep-alive comments, and every open stream's job read again: a missed event is never waited for long. */
  const tick = async () => {
    for (const followers of byJob.values()) for (const follower of followers) follower.keepAlive();
    if (ticking) return;
    ticking = true;
    try {
      await reread([...byJob.keys()]);
    } finally {
      ticking = false;
    }
  };

  const add = (follower: Follower) => {
    const { jobId, tenantId } = follower.ref;
    let followers = byJob.get(jobId);
    if (!followers) byJob.set(jobId, (followers = new Set()));
    followers.add(follower);
    size += 1;
    perTenant.set(tenantId, (perTenant.get(tenantId) ?? 0) + 1);
    timer ??= setInterval(() => void tick(), keepAliveMs).unref();
  };

  const remove = (follower: Follower) => {
    const { jobId, tenantId } = follower.ref;
    const followers = byJob.get(jobId);
    if (!followers?.delete(follower)) return;
    if (followers.size === 0) byJob.delete(jobId);
    size -= 1;
    const count = (perTenant.get(tenantId) ?? 1) - 1;
    if (count === 0) perTenant.delete(tenantId);
    else perTenant.set(tenantId, count);
    if (size === 0) {
      clearInterval(timer);
      timer = undefined;
    }
  };

  return {
    async serve(ref, lastEventId, res) {
      if (closed) throw serviceUnavailable('The job-status service is shutting down. Connect again.');
      if (size >= maxStreams) {
        throw new AppError('service_unavailable', 'Too many job event streams are open on this server. Connect again shortly.', {
          headers: { 'Retry-After': '5' },
        });
      }
      if ((perTenant.get(ref.tenantId) ?? 0) >= maxStreamsPerTenant) {
        throw tooManyRequests(
          `At most ${maxStreamsPerTenant} job event streams per account may be open at once. Close one, or poll the status URL.`,
          5,
        );
      }
      // Following before reading: an event that arrives during the read is kept and applied after the row.
      const follower = new Follower(ref, lastEventId);
      add(follower);
      // Also when the client leaves during the read.
      res.once('close', () => {
        follower.ended = true;
        remove(follower);
      });
      let opened = false;
      try {
        const row = await readJobStreamState(db, ref);
        if (row === undefined) throw notFound(JOB_NOT_FOUND_DETAIL);
        // close() may have come during the read.
        if (isClosed()) throw serviceUnavailable('The job-status service is shutting down. Connect again.');
        if (isFinal(row.status) && lastEventId !== undefined && lastEventId >= row.event_seq) {
          // The client has the final event; 204 stops EventSource from reconnecting.
          res.status(204).end();
          return;
        }
        opened = true;
        follower.start(res, retryMs, stateOfRow(row));
      } finally {
        if (!opened) remove(follower);
      }
    },

    follows(jobId) {
      return byJob.has(jobId);
    },

    onEvent(event) {
      if (!byJob.has(event.job_id)) return;
      if (isFinal(event.status)) {
        // The runner sends the result (or the error) with the final event, as it committed it to the row; an event
        // without it is read back from the row, once for all of the job's streams.
        const complete = event.status === 'completed' ? event.result !== undefined : event.error !== undefined;
        if (!complete) {
          void reread([event.job_id]);
          return;
        }
        applyRows([
          {
            id: event.job_id,
            status: event.status,
            progress: event.progress,
            currently_working_on: event.currently_working_on ?? null,
            error: event.error ?? null,
            result: event.result ?? null,
            event_seq: event.seq,
          },
        ]);
        return;
      }
      const state: JobState = {
        seq: event.seq,
        status: event.status,
        progress: event.progress,
        step: stepOf({ status: event.status, currently_working_on: event.currently_working_on ?? null }),
      };
      for (const follower of byJob.get(event.job_id) ?? []) follower.apply(state);
    },

    close() {
      closed = true;
      for (const followers of [...byJob.values()]) for (const follower of [...followers]) follower.end();
    },

    get size() {
      return size;
    },
  };
}
