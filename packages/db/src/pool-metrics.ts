// Pool usage in the Prometheus catalog (@fin/metrics), for every pool createPool makes: open, idle and queued
// connections read at each scrape, and how long checkouts waited when every connection was busy. A pool that is
// too small shows as waits long before it shows as latency.
import { performance } from 'node:perf_hooks';
import { dbPoolCheckoutWait, meterPool } from '@fin/metrics';
import type pg from 'pg';

type ConnectCallback = (error: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void;
type Connect = (callback: ConnectCallback) => void;

/**
 * Reports `pool` under `name` (its application_name) until it ends, and times every checkout that has to queue.
 * pg-pool's own `query` checks out through `this.connect`, so one wrapper sees both kinds of checkout.
 */
export function meterPoolUsage(pool: pg.Pool, name: string, max: number): void {
  meterPool(name, () => (pool.ended ? undefined : { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max }));
  const waits = dbPoolCheckoutWait.labels({ pool: name });
  const connect = (pool.connect as Connect).bind(pool);
  function meteredConnect(callback?: ConnectCallback): Promise<pg.PoolClient> | undefined {
    // The pool queues a checkout only when every connection is open and busy (pg-pool's connect).
    const queued = pool.idleCount === 0 && pool.totalCount >= max;
    const started = queued ? performance.now() : 0;
    const settle = (error: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => {
      if (queued) waits.observe((performance.now() - started) / 1_000);
      callback?.(error, client, done);
    };
    if (callback) {
      connect(settle);
      return undefined;
    }
    return new Promise((resolve, reject) => {
      connect((error, client, done) => {
        settle(error, client, done);
        if (error !== undefined || client === undefined) reject(error ?? new Error('the pool gave no connection'));
        else resolve(client);
      });
    });
  }
  pool.connect = meteredConnect as pg.Pool['connect'];
}
