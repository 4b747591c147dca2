import pg from 'pg';

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
}

export function createPool({ connectionString, applicationName, max = 10, onIdleError }: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    application_name: applicationName,
    max,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
  });
  pool.on('error', (error) => onIdleError?.(error));
  return pool;
}

/**
 * Runs `work` in a transaction on one connection: COMMIT when it resolves, ROLLBACK when it throws
 * (and the error is rethrown). The connection is released either way.
 */
export async function withTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
