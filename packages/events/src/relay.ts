import { type Pool, type PoolClient, listen } from '@fin/db';
import { type Logger } from '@fin/log';
import { outboxOldestUnpublishedAge, outboxRelayLeader, outboxUnpublishedRows, refreshEvery } from '@fin/metrics';
import { type Backoff, backoffDelay, errorMessage, sleep } from './backoff';
import { type EventBus, type EventHeaders } from './bus';
import { RELAY_LEADER_LOCK_CLASS } from './outbox';

export interface OutboxRelayOptions {
  pool: Pool;
  bus: Pick<EventBus, 'publish'>;
  logger: Logger;
  /** Rows published per transaction (default 100). */
  batchSize?: number;
  /** Reads the outbox at least this often even without a notification (default 1 s). */
  pollIntervalMs?: number;
  /**
   * While busy, a batch waits until this long after the previous one began (default 3 ms), so that the events of
   * many jobs travel in one transaction and one Kafka request instead of one each. A row that arrives after a
   * quiet spell is published at once; 0 publishes every notification at once.
   */
  batchIntervalMs?: number;
  /** How often a standby relay tries to become leader (default 2 s). */
  standbyIntervalMs?: number;
  /** Published rows are deleted once older than this (default 1 day). */
  retentionMs?: number;
  cleanupIntervalMs?: number;
  /** How often the leader counts the unpublished rows for the metrics (default 15 s). */
  metricsIntervalMs?: number;
  /** Delay before retrying a batch that failed to publish: doubles from `initialMs` to `maxMs`. */
  backoff?: Partial<Backoff>;
}

export interface OutboxRelay {
  /** Starts electing and, as leader, relaying in the background. */
  start(): void;
  /** Finishes the batch in flight, gives up leadership and releases its connection. */
  stop(): Promise<void>;
  isLeader(): boolean;
}

interface OutboxRow {
  id: string;
  topic: string;
  message_key: string;
  /** The envelope's JSON text. */
  envelope: string;
  headers: EventHeaders;
}

const CLEANUP_CHUNK = 10_000;

/**
 * Publishes the outbox to the bus, in id order, and marks rows published in the transaction that read them.
 *
 * Invariants:
 * - Rows are selected by "not yet published", never by "id after the last one seen", so a row whose
 *   transaction commits after a higher id was published is still published.
 * - A row is marked published only after the bus accepted it; a failed publish rolls back and is retried
 *   (so a row may be published more than once, never zero times), and no later row overtakes it.
 * - At most one relay publishes: the leader holds a session advisory lock on the connection it publishes on.
 *   If that connection dies, its transaction dies with it and a standby takes the lock over.
 *
 * The relay keeps one pool connection checked out while it runs and, while it leads, LISTENs on `outbox` on a
 * connection of its own (`listen` of @fin/db), so that a commit to the outbox wakes it before the next poll.
 */
export function createOutboxRelay({
  pool,
  bus,
  logger,
  batchSize = 100,
  pollIntervalMs = 1_000,
  batchIntervalMs = 3,
  standbyIntervalMs = 2_000,
  retentionMs = 24 * 60 * 60 * 1_000,
  cleanupIntervalMs = 10 * 60 * 1_000,
  metricsIntervalMs = 15_000,
  backoff: backoffOptions,
}: OutboxRelayOptions): OutboxRelay {
  const log = logger.child({ component: 'outbox-relay' });
  const backoff: Backoff = { initialMs: 500, maxMs: 30_000, ...backoffOptions };
  const stopping = new AbortController();
  let running: Promise<void> | undefined;
  let leader = false;
  // Set by NOTIFY (or a broken connection) so that the next idle wait returns at once.
  let pending = false;
  let wake: (() => void) | undefined;

  function notify(): void {
    pending = true;
    wake?.();
  }

  function idle(ms: number): Promise<void> {
    if (pending || stopping.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        stopping.signal.removeEventListener('abort', done);
        wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      stopping.signal.addEventListener('abort', done, { once: true });
      wake = done;
    });
  }

  async function publishBatch(client: PoolClient): Promise<number | 'failed'> {
    await client.query('BEGIN');
    try {
      // The envelope is read as the text it was stored as and sent as is: no parsing and serialising again.
      const { rows } = await client.query<OutboxRow>({
        name: 'outbox-relay-batch',
        text: `SELECT id::text AS id, topic, message_key, envelope::text AS envelope, headers FROM outbox
               WHERE published_at IS NULL ORDER BY outbox.id LIMIT $1 FOR UPDATE SKIP LOCKED`,
        values: [batchSize],
      });
      if (rows.length > 0) {
        try {
          await bus.publish(rows.map((row) => ({ topic: row.topic, key: row.message_key, envelope: row.envelope, headers: row.headers })));
        } catch (error) {
          await client.query('ROLLBACK');
          const ids = rows.map((row) => row.id);
          await client.query('UPDATE outbox SET attempts = attempts + 1, last_error = $2 WHERE id = ANY($1::bigint[])', [
            ids,
            errorMessage(error).slice(0, 2_000),
          ]);
          log.warn({ err: error, firstId: ids[0], count: ids.length }, 'Publishing outbox rows failed; will retry');
          return 'failed';
        }
        // Marked only after the bus accepted the rows; a crash before the commit leaves them to be published again.
        await client.query({
          name: 'outbox-relay-mark',
          text: 'UPDATE outbox SET published_at = now(), attempts = attempts + 1, last_error = NULL WHERE id = ANY($1::bigint[])',
          values: [rows.map((row) => row.id)],
        });
        if (log.isLevelEnabled('debug')) log.debug({ ids: rows.map((row) => row.id) }, 'Published outbox rows');
      }
      await client.query('COMMIT');
      return rows.length;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  }

  async function cleanup(client: PoolClient): Promise<void> {
    let deleted = 0;
    for (;;) {
      const { rowCount } = await client.query(
        `DELETE FROM outbox WHERE id IN (
           SELECT id FROM outbox WHERE published_at < now() - $1 * interval '1 millisecond' LIMIT $2)`,
        [retentionMs, CLEANUP_CHUNK],
      );
      deleted += rowCount ?? 0;
      if ((rowCount ?? 0) < CLEANUP_CHUNK || stopping.signal.aborted) break;
    }
    if (deleted > 0) log.info({ deleted }, 'Deleted published outbox rows past retention');
  }

  /**
   * The outbox's backlog and its oldest row's age, for the metrics. Read by the leader only (one query every
   * `metricsIntervalMs` for the whole deployment), on a pool connection of its own, so the figures keep coming
   * while a publish hangs on an unreachable broker, which is when they matter.
   */
  function measureBacklog(): () => Promise<void> {
    const refresher = refreshEvery(
      metricsIntervalMs,
      async () => {
        const {
          rows: [row],
        } = await pool.query<{ rows: number; age: number }>(
          `SELECT count(*)::int AS rows, COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 AS age
           FROM outbox WHERE published_at IS NULL`,
        );
        outboxUnpublishedRows.set(row?.rows ?? 0);
        outboxOldestUnpublishedAge.set(Math.max(0, row?.age ?? 0));
      },
      (error) => log.warn({ err: error }, 'Counting the unpublished outbox rows failed'),
    );
    refresher.start();
    return async () => {
      await refresher.stop();
      // A standby reports no backlog: the figures across pods are read with max().
      outboxUnpublishedRows.set(0);
      outboxOldestUnpublishedAge.set(0);
    };
  }

  async function lead(client: PoolClient): Promise<void> {
    let failures = 0;
    let nextCleanup = 0;
    let lastBatchAt = -Infinity;
    let lastBatchFull = false;
    while (!stopping.signal.aborted) {
      // Busy: the previous batch began moments ago. Rows keep arriving for a few ms and go out together. (A full
      // batch has more waiting: the next one reads them at once.)
      const sincePrevious = performance.now() - lastBatchAt;
      if (!lastBatchFull && sincePrevious < batchIntervalMs && !(await sleep(batchIntervalMs - sincePrevious, stopping.signal))) break;
      pending = false;
      lastBatchAt = performance.now();
      const published = await publishBatch(client);
      lastBatchFull = published === batchSize;
      if (Date.now() >= nextCleanup) {
        await cleanup(client);
        nextCleanup = Date.now() + cleanupIntervalMs;
      }
      if (published === 'failed') {
        failures += 1;
        await sleep(backoffDelay(backoff, failures), stopping.signal);
        continue;
      }
      failures = 0;
      if (published < batchSize) await idle(Math.min(pollIntervalMs, Math.max(0, nextCleanup - Date.now())));
    }
  }

  /** One database session: stand by until the leader lock is ours, then lead until stopped. */
  async function session(client: PoolClient): Promise<void> {
    for (;;) {
      const { rows } = await client.query<{ acquired: boolean }>('SELECT pg_try_advisory_lock($1::int, 0) AS acquired', [
        RELAY_LEADER_LOCK_CLASS,
      ]);
      if (rows[0]?.acquired) break;
      if (!(await sleep(standbyIntervalMs, stopping.signal))) return;
    }
    leader = true;
    outboxRelayLeader.inc();
    const stopMeasuring = measureBacklog();
    log.info('Outbox relay is leader');
    // Only the leader listens: a standby has nothing to wake for. Rows committed before LISTEN was in place
    // (or while its connection was down) are read by the batch that `onListening` wakes.
    const listener = listen('outbox', notify, {
      pool,
      logger: log,
      onListening: notify,
      reconnectDelayMs: backoff.initialMs,
      maxReconnectDelayMs: backoff.maxMs,
    });
    try {
      await lead(client);
    } finally {
      leader = false;
      outboxRelayLeader.dec();
      await stopMeasuring();
      await listener.close();
    }
    await client.query('SELECT pg_advisory_unlock($1::int, 0)', [RELAY_LEADER_LOCK_CLASS]);
  }

  async function run(): Promise<void> {
    let failures = 0;
    while (!stopping.signal.aborted) {
      let client: PoolClient | undefined;
      const onError = (error: Error) => {
        log.warn({ err: error }, 'Outbox relay connection failed');
        notify();
      };
      try {
        client = await pool.connect();
        client.on('error', onError);
        await session(client);
        client.release();
        failures = 0;
      } catch (error) {
        failures += 1;
        log.error({ err: error }, 'Outbox relay lost its database session; reconnecting');
        // Destroying the connection also releases the leader lock, should the session still hold it.
        client?.release(error instanceof Error ? error : true);
        await sleep(backoffDelay(backoff, failures), stopping.signal);
      } finally {
        client?.off('error', onError);
      }
    }
  }

  return {
    start() {
      running ??= run();
    },
    async stop() {
      stopping.abort();
      await running;
    },
    isLeader: () => leader,
  };
}
