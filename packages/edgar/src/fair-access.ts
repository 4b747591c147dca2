// SEC EDGAR's fair-access rules, kept for the whole deployment in one Postgres row (migration 1765238400000):
//
// - "Current guidelines limit each user to a total of no more than 10 requests per second, regardless of the number
//   of machines used to submit requests" (https://www.sec.gov/search-filings/edgar-search-assistance/accessing-edgar-data,
//   https://www.sec.gov/about/developer-resources). Every replica takes its requests from one schedule: a request
//   reserves the next free slot (`next_at` moves on by one interval in the same statement) and waits for it. Slots
//   are spaced rather than counted per second, so two replicas never burst 10 at the end of one second and 10 at the
//   start of the next, whatever window EDGAR counts in; the default interval (110 ms) keeps a tenth of headroom for
//   network jitter, as EDGAR counts arrivals and we count departures.
// - An address over the limit gets 403 with the "Request Rate Threshold Exceeded" page and is blocked for 10 minutes,
//   longer if requests continue. The replica that sees it records the block in the same row; every replica reads it
//   in the statement that would reserve its next slot, and no request leaves until the block has passed.
import { type Queryable } from '@fin/db';
import { EdgarError } from './errors';

export interface FairAccessOptions {
  /** Time between two requests of the deployment (default 110 ms: under 10 a second). */
  intervalMs?: number;
  /** How long a request may queue for its slot; beyond it the call fails with EdgarError 'unavailable' (default 30 s). */
  maxQueueMs?: number;
  /** How long every replica stops after EDGAR's rate-threshold answer (default 10 minutes, as EDGAR's page states). */
  blockMs?: number;
}

const DEFAULT_INTERVAL_MS = 110;
const DEFAULT_MAX_QUEUE_MS = 30_000;
const DEFAULT_BLOCK_MS = 10 * 60_000;

interface SlotRow {
  wait_ms: number | null;
  blocked_until: Date | null;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

export class FairAccess {
  readonly #pool: Queryable;
  readonly #intervalMs: number;
  readonly #maxQueueMs: number;
  readonly #blockMs: number;

  constructor(pool: Queryable, options: FairAccessOptions = {}) {
    this.#pool = pool;
    this.#intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
    this.#maxQueueMs = options.maxQueueMs ?? DEFAULT_MAX_QUEUE_MS;
    this.#blockMs = options.blockMs ?? DEFAULT_BLOCK_MS;
  }

  /**
   * Waits for this process's turn to send one request to EDGAR. Throws EdgarError 'blocked' while EDGAR's block
   * lasts (recorded by any replica), 'unavailable' when the queue is longer than maxQueueMs.
   */
  async take(signal?: AbortSignal): Promise<void> {
    // One statement: unless blocked or queued too long, reserve the next slot and say how long until it comes.
    const { rows } = await this.#pool.query<SlotRow>(
      `WITH now AS (SELECT clock_timestamp() AS t),
            reserved AS (
              UPDATE edgar_fair_access f
                 SET next_at = greatest(f.next_at, now.t) + $1 * interval '1 millisecond'
                FROM now
               WHERE f.id
                 AND (f.blocked_until IS NULL OR f.blocked_until <= now.t)
                 AND greatest(f.next_at, now.t) <= now.t + $2 * interval '1 millisecond'
           RETURNING extract(epoch FROM f.next_at - now.t) * 1000 - $1 AS wait_ms)
       SELECT (SELECT wait_ms FROM reserved)::float8 AS wait_ms,
              (SELECT blocked_until FROM edgar_fair_access, now WHERE id AND blocked_until > now.t) AS blocked_until`,
      [this.#intervalMs, this.#maxQueueMs],
    );
    const row = rows[0];
    if (row?.blocked_until) throw blockedError(row.blocked_until);
    if (row?.wait_ms === null || row?.wait_ms === undefined)
      throw new EdgarError(
        'unavailable',
        `EDGAR's request queue for this deployment is longer than ${this.#maxQueueMs} ms; try again shortly`,
      );
    if (row.wait_ms <= 0) return;
    await sleep(row.wait_ms, signal);
    // A block recorded while this request queued holds it back too.
    const blockedUntil = await this.blockedUntil();
    if (blockedUntil) throw blockedError(blockedUntil);
  }

  /** The end of EDGAR's block as recorded by any replica, or null when there is none. */
  async blockedUntil(): Promise<Date | null> {
    const { rows } = await this.#pool.query<{ blocked_until: Date | null }>(
      'SELECT blocked_until FROM edgar_fair_access WHERE id AND blocked_until > clock_timestamp()',
    );
    return rows[0]?.blocked_until ?? null;
  }

  /** Records EDGAR's block for every replica (it never shortens one already recorded); returns its end. */
  async block(reason: string): Promise<Date> {
    const { rows } = await this.#pool.query<{ blocked_until: Date }>(
      `UPDATE edgar_fair_access
          SET blocked_until = greatest(blocked_until, clock_timestamp() + $1 * interval '1 millisecond'),
              block_reason = $2
        WHERE id
    RETURNING blocked_until`,
      [this.#blockMs, reason],
    );
    const until = rows[0]?.blocked_until;
    if (!until) throw new Error('edgar_fair_access has no row: run the migrations');
    return until;
  }
}

export function blockedError(until: Date): EdgarError {
  return new EdgarError(
    'blocked',
    `SEC EDGAR has blocked this deployment for exceeding its request rate (10 a second) until ${until.toISOString()}; no replica sends requests until then`,
    { retryAt: until },
  );
}
