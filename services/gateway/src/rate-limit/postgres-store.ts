import { addCounterHits, type CounterRow as AddedHits, type Pool } from '@fin/db';
import type { ClientRateLimitInfo, IncrementResponse, Store } from 'express-rate-limit';

interface Waiter {
  resolve(response: IncrementResponse): void;
  reject(error: unknown): void;
}

/**
 * Hits a process has added to a counter ahead of the requests that will use them: the counts `next` … `last`
 * of the window ending at `resetAt`. `size` is how many the last statement reserved, `reservedAt` when.
 */
interface Credits {
  next: number;
  last: number;
  resetAt: Date;
  size: number;
  reservedAt: number;
}

/** The most hits one statement reserves ahead. */
export const MAX_CREDITS = 64;
/**
 * Reserved hits are at most this fraction of what is left of the limit: a process can hold back no more than
 * 1/256 of a key's remaining requests, so keys with small limits (the defaults: 20 to 600) are counted exactly.
 */
export const CREDIT_SHARE = 256;
/** Credits keep growing only while a key uses them up within this long; a quieter key is counted hit by hit. */
const BUSY_MS = 1_000;
/** Per-counter state beyond this many entries is pruned of ended windows. */
const PRUNE_ABOVE = 10_000;

/**
 * Counts hits on the shared counters with as few statements as exactness allows.
 *
 * - At most one statement is in flight per store (product) and process. The hits that arrive meanwhile, on any
 *   number of keys, go into the next single statement: under load one round trip serves every key in flight.
 *   Each key's n hits are added atomically and its total returned, and its n waiting requests are given the
 *   consecutive counts (total − n + 1 … total), as if they had been applied one by one. A lone hit goes out at
 *   once.
 * - A key that keeps its counter busy gets hits reserved ahead (credits): the statement adds n + k hits and the
 *   next k requests are counted locally with the counts that follow. k doubles while the key uses its credits
 *   up within BUSY_MS, up to MAX_CREDITS, and never exceeds 1/CREDIT_SHARE of the limit's remaining headroom;
 *   credits end with their window. Every admitted request was counted in the database first, so no process ever
 *   admits beyond the limit; a credit left unused when its window ends was counted without a request, so a key
 *   can at worst be refused that many requests early (with two replicas, under 1 % of the limit).
 */
class CounterBatcher {
  private queued = new Map<string, { waiters: Waiter[]; limit: number }>();
  private inFlight = false;
  private readonly credits = new Map<string, Credits>();

  constructor(private readonly send: (counterKeys: string[], hits: number[]) => Promise<Map<string, CounterRow>>) {}

  add(counterKey: string, limit: number): Promise<IncrementResponse> {
    const credits = this.credits.get(counterKey);
    if (credits !== undefined && credits.next <= credits.last && credits.resetAt.getTime() > Date.now()) {
      return Promise.resolve({ totalHits: credits.next++, resetTime: credits.resetAt });
    }
    return new Promise((resolve, reject) => {
      const queue = this.queued.get(counterKey);
      if (queue) {
        queue.waiters.push({ resolve, reject });
        queue.limit = limit;
      } else {
        this.queued.set(counterKey, { waiters: [{ resolve, reject }], limit });
      }
      if (!this.inFlight) void this.flush();
    });
  }

  /** How many hits to reserve ahead with the next statement for `counterKey`. */
  private reservation(counterKey: string, hits: number, limit: number, now: number): number {
    const previous = this.credits.get(counterKey);
    if (previous === undefined || previous.resetAt.getTime() <= now || now - previous.reservedAt >= BUSY_MS) return 0;
    const grown = Math.min(MAX_CREDITS, Math.max(1, previous.size * 2));
    return Math.max(0, Math.min(grown, Math.floor((limit - previous.last - hits) / CREDIT_SHARE)));
  }

  private async flush(): Promise<void> {
    if (this.queued.size === 0) return;
    const batch = [...this.queued].map(([key, { waiters, limit }]) => ({ key, waiters, ahead: 0, limit }));
    this.queued = new Map();
    this.inFlight = true;
    const now = Date.now();
    for (const entry of batch) entry.ahead = this.reservation(entry.key, entry.waiters.length, entry.limit, now);
    try {
      const rows = await this.send(
        batch.map(({ key }) => key),
        batch.map(({ waiters, ahead }) => waiters.length + ahead),
      );
      for (const { key, waiters, ahead } of batch) {
        const row = rows.get(key);
        if (row === undefined) {
          this.credits.delete(key);
          for (const waiter of waiters) waiter.reject(new Error(`the rate-limit statement returned no row for ${key}`));
          continue;
        }
        const first = row.hits - waiters.length - ahead + 1;
        waiters.forEach((waiter, position) => waiter.resolve({ totalHits: first + position, resetTime: row.reset_at }));
        this.credits.set(key, { next: first + waiters.length, last: row.hits, resetAt: row.reset_at, size: ahead, reservedAt: now });
      }
      if (this.credits.size > PRUNE_ABOVE) this.prune(now);
    } catch (error) {
      for (const { key, waiters } of batch) {
        this.credits.delete(key);
        for (const waiter of waiters) waiter.reject(error);
      }
    } finally {
      this.inFlight = false;
      if (this.queued.size > 0) void this.flush();
    }
  }

  private prune(now: number): void {
    for (const [counterKey, credits] of this.credits) if (credits.resetAt.getTime() <= now) this.credits.delete(counterKey);
  }
}

/** pg reads `query_timeout` per query too; its typings only declare the client-wide option. */
interface TimedQuery {
  name: string;
  text: string;
  values: unknown[];
  query_timeout: number;
}

interface CounterRow {
  hits: number;
  reset_at: Date;
}

/**
 * Trips for a few seconds after a store failure, so that while the database is unreachable requests pass
 * (fail open) at once instead of each one waiting for a connection attempt to time out.
 */
export class FailOpenBreaker {
  private openUntil = 0;

  constructor(private readonly cooldownMs: number) {}

  check(): void {
    if (Date.now() < this.openUntil) throw new Error('rate-limit store failed recently; not counting until the cool-down ends');
  }

  failed(): void {
    this.openUntil = Date.now() + this.cooldownMs;
  }
}

/**
 * An express-rate-limit Store on the shared rate_limit_counters table, so every gateway replica counts
 * against the same number. One instance per limiter (express-rate-limit refuses a shared one); `prefix`
 * keeps the products' counters apart.
 */
export class PostgresRateLimitStore implements Store {
  readonly localKeys = false;
  private readonly batcher = new CounterBatcher((counterKeys, hits) => this.send(counterKeys, hits));
  /** The limit of each key, as last told by limitFor(): how many hits may be reserved ahead (see CounterBatcher). */
  private readonly limits = new Map<string, number>();

  constructor(
    private readonly pool: Pool,
    readonly prefix: string,
    private readonly windowMs: number,
    private readonly breaker: FailOpenBreaker,
    private readonly timeoutMs: number,
  ) {}

  async increment(key: string): Promise<IncrementResponse> {
    this.breaker.check();
    return this.batcher.add(this.prefix + key, this.limits.get(key) ?? 0);
  }

  /**
   * Tells the store the limit that applies to `key`, before its increment. Without it a key is counted hit by
   * hit (no hits reserved ahead), which is always exact.
   */
  limitFor(key: string, limit: number): void {
    if (this.limits.size >= PRUNE_ABOVE && !this.limits.has(key)) this.limits.clear();
    this.limits.set(key, limit);
  }

  private async send(counterKeys: string[], hits: number[]): Promise<Map<string, CounterRow>> {
    try {
      const query: TimedQuery = { ...addCounterHits(counterKeys, hits, this.windowMs), query_timeout: this.timeoutMs };
      const { rows } = await this.pool.query<AddedHits>(query);
      return new Map(rows.map(({ counter_key: key, hits: total, reset_at: resetAt }) => [key, { hits: total, reset_at: resetAt }]));
    } catch (error) {
      this.breaker.failed();
      throw error;
    }
  }

  async get(key: string): Promise<ClientRateLimitInfo | undefined> {
    const { rows } = await this.pool.query<CounterRow>(
      'SELECT hits, reset_at FROM rate_limit_counters WHERE counter_key = $1 AND reset_at > now()',
      [this.prefix + key],
    );
    const row = rows[0];
    return row && { totalHits: row.hits, resetTime: row.reset_at };
  }

  async decrement(key: string): Promise<void> {
    await this.pool.query(
      'UPDATE rate_limit_counters SET hits = hits - 1 WHERE counter_key = $1 AND reset_at > now() AND hits > 0',
      [this.prefix + key],
    );
  }

  async resetKey(key: string): Promise<void> {
    await this.pool.query('DELETE FROM rate_limit_counters WHERE counter_key = $1', [this.prefix + key]);
  }
}
