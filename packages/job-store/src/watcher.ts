// Waiting for jobs to finish without polling each one: a trigger notifies `job_finished` with the job id when a
// job becomes completed or failed (migration 1763942500000_job-finished-notify), and one LISTEN connection per
// process (`listen` of @fin/db) wakes the requests waiting for that job. A slow poll of all waited-for jobs in one
// query covers notifications lost while the connection was down.
import { JobError } from '@fin/contracts';
import { listen, type Pool } from '@fin/db';
import type { Logger } from '@fin/log';

const CHANNEL = 'job_finished';

export type FinishedJob = { status: 'completed'; result: Record<string, unknown> } | { status: 'failed'; error: JobError };

export interface JobWatcher {
  /** The job's final state once it is completed or failed (at once if it already is); undefined if `signal` aborts first. */
  finished(jobId: string, signal: AbortSignal): Promise<FinishedJob | undefined>;
  close(): Promise<void>;
}

export interface JobWatcherOptions {
  pool: Pool;
  logger: Logger;
  /** How often the jobs being waited for are re-read when no notification came. */
  pollIntervalMs: number;
  /** First reconnect delay of the LISTEN connection; doubles per failed attempt up to 10 s. */
  reconnectDelayMs?: number;
}

interface JobRow {
  status: string;
  result: Record<string, unknown> | null;
  error: unknown;
}

function finishedOf(row: JobRow | undefined): FinishedJob | undefined {
  if (row?.status === 'completed' && row.result) return { status: 'completed', result: row.result };
  if (row?.status === 'failed') {
    const error = JobError.safeParse(row.error);
    return { status: 'failed', error: error.success ? error.data : { type: 'internal_error', detail: 'The job failed.' } };
  }
  return undefined;
}

/** Read through a call: the signal may have been aborted while the caller awaited. */
function isAborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

export function createJobWatcher({ pool, logger, pollIntervalMs, reconnectDelayMs = 500 }: JobWatcherOptions): JobWatcher {
  const log = logger.child({ component: 'job-watcher' });
  /** Job id → wake-up calls of the requests waiting for it. */
  const waiters = new Map<string, Set<() => void>>();

  const wake = (jobId: string) => waiters.get(jobId)?.forEach((notify) => notify());
  const wakeAll = () => [...waiters.keys()].forEach(wake);

  async function poll(): Promise<void> {
    if (waiters.size === 0) return;
    try {
      const { rows } = await pool.query<{ id: string }>(
        "SELECT id::text AS id FROM jobs WHERE id = ANY($1::uuid[]) AND status IN ('completed', 'failed')",
        [[...waiters.keys()]],
      );
      for (const { id } of rows) wake(id);
    } catch (error) {
      log.warn({ err: error }, 'Polling waited-for jobs failed');
    }
  }

  const listener = listen(CHANNEL, (jobId) => wake(jobId), {
    pool,
    logger: log,
    reconnectDelayMs,
    // Jobs may have finished while there was no listener: every waiter reads its job again.
    onListening: wakeAll,
    poll: { intervalMs: pollIntervalMs, run: poll },
  });

  async function read(jobId: string): Promise<FinishedJob | undefined> {
    const { rows } = await pool.query<JobRow>({
      name: 'job-store-watch-job',
      text: 'SELECT status, result, error FROM jobs WHERE id = $1',
      values: [jobId],
    });
    return finishedOf(rows[0]);
  }

  return {
    async finished(jobId, signal) {
      // An object, not a local: the compiler cannot see the notifier set it while the loop awaits.
      const wake = { woken: false, resume: undefined as (() => void) | undefined };
      const notify = () => {
        wake.woken = true;
        wake.resume?.();
      };
      const onAbort = () => wake.resume?.();
      let set = waiters.get(jobId);
      if (!set) waiters.set(jobId, (set = new Set()));
      set.add(notify);
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        // Registered before the first read, so a completion between the read and the wait still wakes it.
        for (;;) {
          const job = await read(jobId);
          if (job) return job;
          if (signal.aborted) return undefined;
          // A wake-up during the read means: read again at once.
          if (!wake.woken) await new Promise<void>((resolve) => (wake.resume = resolve));
          wake.woken = false;
          wake.resume = undefined;
          if (isAborted(signal)) return undefined;
        }
      } finally {
        signal.removeEventListener('abort', onAbort);
        set.delete(notify);
        if (set.size === 0) waiters.delete(jobId);
      }
    },
    async close() {
      await listener.close();
      // Anyone still waiting re-reads once and, with its signal aborted, returns.
      wakeAll();
    },
  };
}
