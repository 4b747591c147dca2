import { addCounterHits, type CounterRow as AddedHits, type Pool } from '@fin/db';
import type { ClientRateLimitInfo, IncrementResponse, Store } from 'express-rate-limit';

interface Waiter {
  resolve(response: IncrementResponse): void;
  reject(error: unknown): void;
}

/** What this process knows of one counter's current window. */
interface CounterView {
  /** The shared total as last read back from the database: every replica's synchronised hits, ours included. */
  synced: number;
  /** Hits admitted here that the statement in flight is adding. */
  sending: number;
  /** Hits admitted here and not sent yet. */
  pending: number;
  resetAt: Date;
  resetMs: number;
  /** When `synced` was read (the time its statement was sent). */
  readAt: number;
  /**
   * Counts this process reserved in the database for hits still to come (a lease, limits under LOCAL_SHARE): the
   * next to hand out and the last. Empty when next > last.
   */
  leaseNext: number;
  leaseLast: number;
}

/**
 * What this process may admit on its own, unsent, is at most 1/LOCAL_SHARE of the headroom it last saw
 * (limit − synced). With R replicas the shared count can therefore overshoot the limit by at most R/LOCAL_SHARE
 * of it: under 1 % with two replicas (see docs/gateway.md). Keys with small limits (the defaults: 20 to 600) have
 * no local budget and are counted exactly, hit by hit.
 */
export const LOCAL_SHARE = 256;
/**
 * Keys with limits under LOCAL_SHARE (the defaults) lease counts instead: a statement that counts a hit also
 * reserves up to 1/LEASE_SHARE of the headroom it leaves, as consecutive counts the next hits of this process take
 * without a statement. Each count is handed out once, by one process, so the counts stay exact across replicas
 * (every admitted answer its own X-RateLimit-Remaining); what a lease can cost is admissions: counts a process
 * reserved and never used (its traffic stopped) are not admitted elsewhere in that window. Near the limit the
 * headroom leaves no lease, and hits are counted one statement each.
 */
export const LEASE_SHARE = 16;
/** How often hits counted locally are sent, with every counter's delta in one statement. */
export const DEFAULT_SYNC_MS = 100;
/** A view older than this is not trusted for local admission: the next hit is counted in the database first. */
const FRESH_MS = 1_000;
/** Per-counter state beyond this many entries is pruned of ended windows. */
const PRUNE_ABOVE = 10_000;

/**
 * Counts hits on the shared counters, locally where the limit is far and exactly where it is near (the cluster
 * strategy of Kong's rate limiting, bounded).
 *
 * - A hit on a counter whose view is fresh (read back within FRESH_MS, same window) and whose unsent hits are
 *   within the local budget (1/LOCAL_SHARE of the headroom last seen) is admitted at once, with no statement:
 *   its count is the view plus this process's unsent hits. The deltas of every counter are sent together every
 *   `syncMs`, or as soon as a counter has used half its budget, and the statement reads back each counter's
 *   shared total (hits of other replicas included), which becomes the new view.
 * - Any other hit (first of a window, stale view, budget used up, near the limit) waits for a statement: the
 *   hits waiting meanwhile, on any number of keys, go into one statement, at most one in flight per store; each
 *   key's n waiting hits get the consecutive counts the database assigned them (total − n + 1 … total), exact.
 *
 * Unsent hits of an ended window are dropped (they belonged to it); a process that dies loses at most its unsent
 * hits (at most one sync's worth: a few more requests admitted in that window).
 */
export class CounterSync {
  private readonly views = new Map<string, CounterView>();
  /** Hits waiting for a statement, per key, with the key's limit as its last hit gave it (for the size of a lease). */
  private waiting = new Map<string, Waiting>();
  private inFlight = false;
  /** The statement in flight, settled (never rejected) when it is done. */
  private running: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly send: (counterKeys: string[], hits: number[]) => Promise<Map<string, CounterRow>>,
    private readonly syncMs: number = DEFAULT_SYNC_MS,
  ) {}

  add(counterKey: string, limit: number): Promise<IncrementResponse> | IncrementResponse {
    const view = this.views.get(counterKey);
    if (view !== undefined && !this.closed) {
      const now = Date.now();
      // A count reserved by an earlier statement of this window: the database has it already.
      if (view.leaseNext <= view.leaseLast && view.resetMs > now) return { totalHits: view.leaseNext++, resetTime: view.resetAt };
      const unsent = view.sending + view.pending;
      const budget = Math.floor((limit - view.synced) / LOCAL_SHARE);
      if (unsent < budget && view.resetMs > now && now - view.readAt < FRESH_MS) {
        view.pending++;
        if (2 * (unsent + 1) >= budget) this.syncSoon(0);
        else this.syncSoon(this.syncMs);
        return { totalHits: view.synced + unsent + 1, resetTime: view.resetAt };
      }
    }
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(counterKey);
      if (queue) {
        queue.waiters.push({ resolve, reject });
        queue.limit = limit;
      } else this.waiting.set(counterKey, { limit, waiters: [{ resolve, reject }] });
      if (!this.inFlight) void this.flush();
    });
  }

  /** Sends what is unsent now, and waits for it (after a statement in flight). */
  async drain(): Promise<void> {
    await this.running;
    await this.flush();
  }

  /** Sends what is unsent, then counts every later hit in the database first. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.drain();
  }

  private syncSoon(delayMs: number): void {
    if (this.inFlight) return; // the statement's completion sends what accumulated meanwhile
    if (delayMs === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
      queueMicrotask(() => void this.flush());
      return;
    }
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, delayMs);
    this.timer.unref();
  }

  private flush(): Promise<void> {
    if (this.inFlight) return this.running;
    const now = Date.now();
    const waiting = this.waiting;
    this.waiting = new Map();
    const batch: Batch = [];
    for (const [key, view] of this.views) {
      if (view.resetMs <= now) {
        // The window ended: its unsent hits belong to it, and a hit waiting starts the next one.
        this.views.delete(key);
        continue;
      }
      const queued = waiting.get(key);
      waiting.delete(key);
      const waiters = queued?.waiters ?? [];
      // Hits that queued while the statement bringing a lease was in flight take its counts now.
      while (waiters.length > 0 && view.leaseNext <= view.leaseLast)
        (waiters.shift() as Waiter).resolve({ totalHits: view.leaseNext++, resetTime: view.resetAt });
      if (view.pending === 0 && waiters.length === 0) continue;
      view.sending = view.pending;
      view.pending = 0;
      const limit = queued?.limit ?? 0;
      const lease = waiters.length === 0 ? 0 : this.leaseSize(limit, view.synced + view.sending, waiters.length);
      batch.push({ key, waiters, view, limit, lease });
    }
    for (const [key, { limit, waiters }] of waiting)
      batch.push({ key, waiters, view: undefined, limit, lease: this.leaseSize(limit, 0, waiters.length) });
    if (batch.length === 0) return Promise.resolve();
    this.inFlight = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.running = this.apply(batch, now);
    return this.running;
  }

  /**
   * The counts to reserve beside `waiting` hits on a key whose count is at least `known`: none for a key with a
   * local budget (LOCAL_SHARE) or without a known limit, else 1/LEASE_SHARE of the headroom the hits leave.
   */
  private leaseSize(limit: number, known: number, waiting: number): number {
    if (this.closed || limit >= LOCAL_SHARE) return 0;
    return Math.max(0, Math.floor((limit - known - waiting) / LEASE_SHARE));
  }

  /** Sends one batch and hands out what the database answered. */
  private async apply(batch: Batch, now: number): Promise<void> {
    try {
      const rows = await this.send(
        batch.map(({ key }) => key),
        batch.map(({ waiters, view, lease }) => (view?.sending ?? 0) + waiters.length + lease),
      );
      for (const { key, waiters, view, limit, lease } of batch) {
        const row = rows.get(key);
        if (row === undefined) {
          this.views.delete(key);
          for (const waiter of waiters) waiter.reject(new Error(`the rate-limit statement returned no row for ${key}`));
          continue;
        }
        // The hits waiting were added after this process's local ones, and the lease after them: the last counts.
        const first = row.hits - lease - waiters.length + 1;
        waiters.forEach((waiter, position) => waiter.resolve({ totalHits: first + position, resetTime: row.reset_at }));
        const current = this.views.get(key);
        const pending = current === view && view !== undefined ? view.pending : 0;
        // Counts beyond the limit would only be refused: a lease ends at the limit. A lease not used up yet stays with its window.
        const kept = current !== undefined && current.resetMs === row.reset_at.getTime();
        const leased =
          lease > 0
            ? { leaseNext: row.hits - lease + 1, leaseLast: Math.min(row.hits, limit) }
            : kept
              ? { leaseNext: current.leaseNext, leaseLast: current.leaseLast }
              : { leaseNext: 1, leaseLast: 0 };
        // Hits admitted while the statement was in flight stay pending; a window the database restarted is the view's.
        this.views.set(key, {
          synced: row.hits,
          sending: 0,
          pending,
          resetAt: row.reset_at,
          resetMs: row.reset_at.getTime(),
          readAt: now,
          ...leased,
        });
      }
      if (this.views.size > PRUNE_ABOVE) this.prune(Date.now());
    } catch (error) {
      for (const { key, waiters } of batch) {
        // Whether the statement was applied is unknown: the view is dropped, the next hit reads the counter again.
        this.views.delete(key);
        for (const waiter of waiters) waiter.reject(error);
      }
    } finally {
      this.inFlight = false;
      if (this.waiting.size > 0) void this.flush();
      else if (this.hasPending()) this.syncSoon(this.syncMs);
    }
  }

  private hasPending(): boolean {
    for (const view of this.views.values()) if (view.pending > 0) return true;
    return false;
  }

  private prune(now: number): void {
    for (const [counterKey, view] of this.views) if (view.resetMs <= now) this.views.delete(counterKey);
  }
}

/** One statement's counters: the hits of each (local ones being sent, waiting ones) and the counts to lease. */
type Batch = { key: string; waiters: Waiter[]; view: CounterView | undefined; limit: number; lease: number }[];

/** The hits of one key waiting for a statement, and the key's limit as its last hit gave it. */
interface Waiting {
  limit: number;
  waiters: Waiter[];
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
  private readonly counters: CounterSync;
  /** The limit of each key, as last told by limitFor(): how many hits may be counted locally (see CounterSync). */
  private readonly limits = new Map<string, number>();

  constructor(
    private readonly pool: Pool,
    readonly prefix: string,
    private readonly windowMs: number,
    private readonly breaker: FailOpenBreaker,
    private readonly timeoutMs: number,
    syncMs: number = DEFAULT_SYNC_MS,
  ) {
    this.counters = new CounterSync((counterKeys, hits) => this.send(counterKeys, hits), syncMs);
  }

  increment(key: string): Promise<IncrementResponse> | IncrementResponse {
    this.breaker.check();
    return this.counters.add(this.prefix + key, this.limits.get(key) ?? 0);
  }

  /** Sends the hits counted locally now (tests, benchmarks; otherwise every sync interval). */
  sync(): Promise<void> {
    return this.counters.drain();
  }

  /** Sends the hits counted locally; later hits are counted in the database first. */
  close(): Promise<void> {
    return this.counters.close();
  }

  /**
   * Tells the store the limit that applies to `key`, before its increment. Without it a key has no local
   * budget and is counted hit by hit, which is always exact.
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
    await this.pool.query('UPDATE rate_limit_counters SET hits = hits - 1 WHERE counter_key = $1 AND reset_at > now() AND hits > 0', [
      this.prefix + key,
    ]);
  }

  async resetKey(key: string): Promise<void> {
    await this.pool.query('DELETE FROM rate_limit_counters WHERE counter_key = $1', [this.prefix + key]);
  }
}
