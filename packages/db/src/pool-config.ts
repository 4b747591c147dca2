import { int } from '@fin/config';

/** The largest DATABASE_POOL_MAX accepted: far above any sensible pool, low enough to catch a typo. */
const MOST_CONNECTIONS = 500;

/**
 * DATABASE_POOL_MAX: the connections one process's pool may open (every service reads it under this name). A
 * process holds a few more outside its pool: each LISTEN of `listen` has a connection of its own (docs/deployment.md
 * counts them per service), so the budget against Postgres' `max_connections` is per process, not per pool.
 */
export const databasePoolConfigShape = {
  DATABASE_POOL_MAX: int(1, MOST_CONNECTIONS).default(10),
};
