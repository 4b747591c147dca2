// fin_jobs_in_flight: how many jobs wait for a worker (pending) and how many run, by type, counted from the jobs
// table on a timer. The finished-jobs counters say what came out; this says what is queued and running now, which
// is what a pile-up looks like before anything fails.
import type { Pool } from '@fin/db';
import { countUnfinishedJobs } from '@fin/job-store';
import type { Logger } from '@fin/log';
import { jobsInFlight, refreshEvery } from '@fin/metrics';

export interface JobGauges {
  start(): void;
  /** Stops the timer and waits for a count in flight. */
  stop(): Promise<void>;
  /** One count now: sets the gauge to exactly these figures (a type and status with no job reads 0). */
  count(): Promise<void>;
}

const STATUSES = ['pending', 'running'] as const;

export function createJobGauges({ pool, logger, intervalMs = 15_000 }: { pool: Pool; logger: Logger; intervalMs?: number }): JobGauges {
  const log = logger.child({ component: 'job-gauges' });
  /** Types seen so far: once a type had jobs, its series stay, at 0 when it has none. */
  const types = new Set<string>();

  async function count(): Promise<void> {
    const rows = await countUnfinishedJobs(pool);
    for (const { type } of rows) types.add(type);
    for (const type of types)
      for (const status of STATUSES)
        jobsInFlight.set({ type, status }, rows.find((row) => row.type === type && row.status === status)?.count ?? 0);
  }

  const refresher = refreshEvery(intervalMs, count, (error) => log.warn({ err: error }, 'Counting the jobs in flight failed'));
  return { ...refresher, count };
}
