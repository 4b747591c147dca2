import pg from 'pg';
import { meterPoolUsage } from './pool-metrics';
import { traceClient, tracePool } from './tracing';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that runs a query: a pool, or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;

export interface PoolOptions {
  connectionString: string;
  /** Shown in pg_stat_activity, so an operator can tell which service holds a connection. */
  applicationName: string;
  max?: number;
  /** Called for errors on idle connections (e.g. the server restarted); such errors must not crash the process. */
  onIdleError?: (error: Error) => void;
  /** Server settings for every session of the pool (sent when each connection starts), e.g. `synchronous_commit`. */
  sessionSettings?: Readonly<Record<string, string>>;
}

const SETTING_NAME = /^[a-z_][a-z0-9_.]*$/;
const SETTING_VALUE = /^[\w.-]+$/;

/** `-c name=value …`, the startup `options` of a Postgres connection. Names and values are code, never input. */
function startupOptions(settings: Readonly<Record<string, string>>): string | undefined {
  const entries = Object.entries(settings);
  for (const [name, value] of entries) {
    if (!SETTING_NAME.test(name) || !SETTING_VALUE.test(value)) throw new TypeError(`not a plain session setting: ${name}=${value}`);
  }
  return entries.length === 0 ? undefined : entries.map(([name, value]) => `-c ${name}=${value}`).join(' ');
}

export function createPool({ connectionString, applicationName, max = 10, onIdleError, sessionSettings = {} }: PoolOptions): pg.Pool {
  const options = startupOptions(sessionSettings);
  const pool = new pg.Pool({
    connectionString,
    application_name: applicationName,
    max,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
    ...(options === undefined ? {} : { options }),
  });
  // A connection the pool is closing may still be told by the server that it is going away: that is the close itself.
  pool.on('error', (error) => {
    if (!pool.ending) onIdleError?.(error);
  });
  meterPoolUsage(pool, applicationName, max);
  tracePool(pool);
  return pool;
}

/**
 * Runs `work` in a transaction on one connection: COMMIT when it resolves, ROLLBACK when it throws
 * (and the error is rethrown). The connection is released either way.
 *
 * The pool guards only its idle connections. A connection that dies while checked out (the server restarted
 * mid-transaction) emits 'error' on its client, which with no listener would crash the process; here it is
 * listened for (the statement in flight rejects anyway), and the broken connection is discarded on release.
 */
export async function withTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  const untrace = traceClient(client, pool);
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken ??= error;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    if (!broken) await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.off('error', onError);
    untrace();
    client.release(broken);
  }
}
