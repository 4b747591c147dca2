import { type Pool, type PoolClient, withTransaction } from '@fin/db';

export type ProcessOnceResult<T> = { status: 'processed'; result: T } | { status: 'duplicate' };

/**
 * Runs `work` unless `consumer` has already processed `eventId`. The mark in processed_events is written in
 * the same transaction as the work, so they commit together: a redelivered event is skipped exactly when its
 * work committed, and a concurrent duplicate waits on the first one's mark, then skips.
 *
 * Given a pool, it opens and commits its own transaction. Given a client, the client must already be inside
 * the caller's transaction, which the caller commits.
 */
export async function processOnce<T>(
  db: Pool | PoolClient,
  consumer: string,
  eventId: string,
  work: (client: PoolClient) => Promise<T>,
): Promise<ProcessOnceResult<T>> {
  const run = async (client: PoolClient): Promise<ProcessOnceResult<T>> => {
    const { rowCount } = await client.query('INSERT INTO processed_events (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [
      consumer,
      eventId,
    ]);
    if (rowCount === 0) return { status: 'duplicate' };
    return { status: 'processed', result: await work(client) };
  };
  return 'release' in db ? run(db) : withTransaction(db, run);
}
