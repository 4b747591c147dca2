import { int, url } from '@fin/config';
import type { Logger } from '@fin/log';
import type { z } from 'zod';
import { createPool, type Pool, type PoolOptions } from './pool';

/** The largest DATABASE_POOL_MAX accepted: far above any sensible pool, low enough to catch a typo. */
const MOST_CONNECTIONS = 500;

/**
 * DATABASE_POOL_MAX: the connections one process's pool may open (every service reads it under this name). A
 * process holds a few more outside its pool: each LISTEN of `listen` has a connection of its own (docs/deployment.md
 * counts them per service), so the budget against Postgres' `max_connections` is per process, not per pool.
 *
 * DATABASE_DIRECT_URL: the database itself, for what needs a session of its own, when DATABASE_URL goes through a
 * pooler that hands each transaction to any server connection (PgBouncer in transaction mode): LISTEN, and the
 * outbox relay, whose leader holds a session advisory lock. Unset: those use DATABASE_URL too.
 */
export const databasePoolConfigShape = {
  DATABASE_POOL_MAX: int(1, MOST_CONNECTIONS).default(10),
  DATABASE_DIRECT_URL: url(['postgres', 'postgresql']).optional(),
} satisfies z.ZodRawShape;

/**
 * A service's own pool: DATABASE_URL with DATABASE_POOL_MAX connections (unless `max`), `applicationName` in
 * pg_stat_activity, and the errors of its idle connections (the server restarting) logged at warn, not thrown.
 */
export function servicePool(
  config: { DATABASE_URL: string; DATABASE_POOL_MAX: number },
  {
    applicationName,
    logger,
    max = config.DATABASE_POOL_MAX,
    sessionSettings,
  }: { applicationName: string; logger: Pick<Logger, 'warn'>; max?: number } & Pick<PoolOptions, 'sessionSettings'>,
): Pool {
  return createPool({
    connectionString: config.DATABASE_URL,
    applicationName,
    max,
    onIdleError: (error) => logger.warn({ err: error }, 'idle database connection failed'),
    ...(sessionSettings === undefined ? {} : { sessionSettings }),
  });
}

/**
 * The direct pool holds the relay's session and serves the job watcher's catch-up reads; LISTEN connections are
 * opened with its settings but outside it.
 */
const DIRECT_POOL_MAX = 2;

export interface SessionPool {
  /** The pool to give `listen` and the outbox relay: the direct one, or `pool` when there is none. */
  pool: Pool;
  /** Ends the direct pool; nothing when there is none (the main pool is closed by its owner). */
  close(): Promise<void>;
}

/**
 * The pool for session state (LISTEN, the relay's leader lock): a small one on `directUrl` when it is set, named
 * `<applicationName>-direct` in pg_stat_activity; otherwise `pool` itself.
 */
export function sessionPoolOf(
  pool: Pool,
  {
    directUrl,
    applicationName,
    onIdleError,
  }: { directUrl: string | undefined; applicationName: string; onIdleError?: (error: Error) => void },
): SessionPool {
  if (directUrl === undefined) return { pool, close: () => Promise.resolve() };
  const direct = createPool({
    connectionString: directUrl,
    applicationName: `${applicationName}-direct`,
    max: DIRECT_POOL_MAX,
    ...(onIdleError ? { onIdleError } : {}),
  });
  return { pool: direct, close: () => direct.end() };
}
