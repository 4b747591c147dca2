import type { Pool } from '@fin/db';
import type { ClientRateLimitInfo, IncrementResponse, Store } from 'express-rate-limit';

// One statement adds $3 hits, atomic under concurrency: the row lock taken by ON CONFLICT DO UPDATE orders the
// increments of one counter, and each sees the latest committed hits. A window that has ended is restarted by
// the same statement (fixed windows, starting at the first hit after the previous one ended).
const INCREMENT = `
  INSERT INTO rate_limit_counters AS c (counter_key, hits, reset_at)
  VALUES ($1, $3::int, now() + $2::int * interval '1 millisecond')
  ON CONFLICT (counter_key) DO UPDATE SET
    hits     = CASE WHEN c.reset_at <= now() THEN $3::int ELSE c.hits + $3::int END,
    reset_at = CASE WHEN c.reset_at <= now() THEN excluded.reset_at ELSE c.reset_at END
  RETURNING hits, reset_at`;

interface Waiter {
  resolve(response: IncrementResponse): void;
  reject(error: unknown): void;
}

/**
 * Combines the hits on one counter that arrive while its previous statement is in flight into the next single
 * statement: at most one statement per counter is in flight per process, carrying every hit that queued
 * behind it. Exactness holds: the statement adds n hits atomically and returns the total, and the n waiting
 * requests are given the consecutive counts (total − n + 1 … total), as if they had been applied one by one.
 * A lone hit goes out at once, so an idle gateway adds no delay.
 */
class IncrementBatcher {
  private readonly queued = new Map<string, Waiter[]>();
  private readonly inFlight = new Set<string>();

  constructor(private readonly send: (counterKey: string, hits: number) => Promise<CounterRow>) {}

  add(counterKey: string): Promise<IncrementResponse> {
    return new Promise((resolve, reject) => {
      const waiters = this.queued.get(counterKey);
      if (waiters) waiters.push({ resolve, reject });
      else this.queued.set(counterKey, [{ resolve, reject }]);
      if (!this.inFlight.has(counterKey)) void this.flush(counterKey);
    });
  }

  private async flush(counterKey: string): Promise<void> {
    const waiters = this.queued.get(counterKey);
    if (!waiters) return;
    this.queued.delete(counterKey);
    this.inFlight.add(counterKey);
    try {
      const row = await this.send(counterKey, waiters.length);
      const first = row.hits - waiters.length + 1;
      waiters.forEach((waiter, index) => waiter.resolve({ totalHits: first + index, resetTime: row.reset_at }));
    } catch (error) {
      for (const waiter of waiters) waiter.reject(error);
    } finally {
      this.inFlight.delete(counterKey);
      if (this.queued.has(counterKey)) void this.flush(counterKey);
    }
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
  private readonly batcher = new IncrementBatcher((counterKey, hits) => this.send(counterKey, hits));

  constructor(
    private readonly pool: Pool,
    readonly prefix: string,
    private readonly windowMs: number,
    private readonly breaker: FailOpenBreaker,
    private readonly timeoutMs: number,
  ) {}

  async increment(key: string): Promise<IncrementResponse> {
    this.breaker.check();
    return this.batcher.add(this.prefix + key);
  }

  private async send(counterKey: string, hits: number): Promise<CounterRow> {
    try {
      const query: TimedQuery = {
        name: 'gateway-rate-limit-increment',
        text: INCREMENT,
        values: [counterKey, this.windowMs, hits],
        query_timeout: this.timeoutMs,
      };
      const { rows } = await this.pool.query<CounterRow>(query);
      return rows[0] as CounterRow;
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
