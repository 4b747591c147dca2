// The leases of every job one worker runs, renewed together: one statement per heartbeat for all of them, instead
// of one per job. A worker holds hundreds of jobs that mostly wait for the model; renewing each on its own timer
// would be hundreds of statements a heartbeat, which sized the worker's pool by its concurrency. The WHERE clause
// is each job's own renewal's (its id, this runner, its attempt): a job whose lease went to another runner is not
// renewed and is reported lost, as a single renewal's rowCount of 0 would say.
import type { Pool } from '@fin/db';
import type { Logger } from '@fin/log';

const RENEW_SQL = `UPDATE jobs SET lease_expires_at = now() + $2 * interval '1 millisecond'
   FROM unnest($3::uuid[], $4::int[]) AS held(id, attempt)
  WHERE jobs.id = held.id AND jobs.lease_owner = $1 AND jobs.attempts = held.attempt
  RETURNING jobs.id::text AS id`;

/** Renewals a statement carries at most (a worker beyond it renews in several). */
const BATCH = 1_000;

export interface LeaseKeeperOptions {
  pool: Pool;
  logger: Logger;
  workerId: string;
  leaseMs: number;
  /** How often every held lease is renewed (a third of the lease, so two renewals may fail before it runs out). */
  heartbeatMs: number;
}

/** A lease held by the keeper until released. */
export interface HeldLease {
  release(): void;
}

export interface LeaseKeeper {
  /** Renews the lease of `job` (claimed by this runner) every heartbeat until released; `onLost` when it is not this runner's any more. */
  hold(job: { id: string; attempt: number }, onLost: () => void): HeldLease;
  /** How many leases are held. */
  readonly size: number;
  /** Stops renewing (the jobs' own ends release them; a stopped worker's leases run out). */
  close(): void;
}

export function createLeaseKeeper({ pool, logger, workerId, leaseMs, heartbeatMs }: LeaseKeeperOptions): LeaseKeeper {
  const held = new Map<string, { attempt: number; onLost: () => void }>();
  let timer: NodeJS.Timeout | undefined;
  let renewing = false;

  async function renewAll(): Promise<void> {
    if (renewing || held.size === 0) return;
    renewing = true;
    try {
      const entries = [...held];
      for (let start = 0; start < entries.length; start += BATCH) {
        const batch = entries.slice(start, start + BATCH);
        const { rows } = await pool.query<{ id: string }>({
          name: 'job-store-renew-held',
          text: RENEW_SQL,
          values: [workerId, leaseMs, batch.map(([id]) => id), batch.map(([, lease]) => lease.attempt)],
        });
        const renewed = new Set(rows.map((row) => row.id));
        for (const [id, lease] of batch) {
          // Released meanwhile (the job ended): its lease went with its terminal write, nothing is lost.
          if (renewed.has(id) || held.get(id) !== lease) continue;
          held.delete(id);
          lease.onLost();
        }
      }
    } catch (error) {
      // As a single renewal's failure: logged, the next heartbeat tries again while the lease still runs.
      logger.warn({ err: error, leases: held.size }, 'Renewing the leases failed');
    } finally {
      renewing = false;
    }
  }

  return {
    hold(job, onLost) {
      const lease = { attempt: job.attempt, onLost };
      held.set(job.id, lease);
      if (timer === undefined) {
        timer = setInterval(() => void renewAll(), heartbeatMs);
        timer.unref();
      }
      return {
        release() {
          if (held.get(job.id) === lease) held.delete(job.id);
          if (held.size === 0 && timer !== undefined) {
            clearInterval(timer);
            timer = undefined;
          }
        },
      };
    },
    get size() {
      return held.size;
    },
    close() {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      held.clear();
    },
  };
}
