import pg from 'pg';

/** What the listener logs through: the caller's logger (a pino logger fits), so its lines carry the caller's fields. */
interface ListenLogger {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

interface ListenOptions {
  /**
   * The database, by the pool's connection settings. The listener opens a connection of its own with them rather
   * than taking one of the pool's: a LISTEN holds its connection for the life of the process, which would shrink
   * the pool for every query, and a reconnect would queue behind queries when the pool is busy.
   */
  pool: pg.Pool;
  logger: ListenLogger;
  /**
   * Called each time LISTEN is in place: on the first connection and after every reconnect. Whatever was
   * notified before that (or while the connection was down) is lost, so this is where a caller catches up.
   */
  onListening?: () => void;
  /** Called when a listening connection is lost (not on close()). */
  onLost?: () => void;
  /** First reconnect delay (default 500 ms); doubles per failed attempt up to `maxReconnectDelayMs` (default 10 s). */
  reconnectDelayMs?: number;
  maxReconnectDelayMs?: number;
  /**
   * How often the idle connection is probed. A connection that died without a FIN (a dropped network path)
   * raises no error by itself; without a probe it would go on listening to nothing.
   */
  pingIntervalMs?: number;
  /**
   * A fallback poll, run every `intervalMs` whether or not the connection is up (never two at a time), for
   * callers whose notifications may be missed between a connection's silent death and its discovery.
   */
  poll?: { intervalMs: number; run: () => Promise<void> };
}

export interface Listener {
  /** LISTEN is in place on a live connection. */
  readonly listening: boolean;
  /** Stops reconnecting and polling, ends the connection and resolves once it is closed and a poll in flight is done. */
  close(): Promise<void>;
}

// Channels are code, never input; unquoted, so that the statement reads `LISTEN name` in pg_stat_activity.
const CHANNEL_NAME = /^[a-z_][a-z0-9_]*$/;

/**
 * LISTENs on `channels` and hands every notification to `handler` (which must not throw; one that does is
 * logged). A lost connection is replaced, after a jittered backoff, for as long as the listener is open.
 */
export function listen(
  channels: string | readonly string[],
  handler: (payload: string, channel: string) => void,
  options: ListenOptions,
): Listener {
  const names = typeof channels === 'string' ? [channels] : [...channels];
  if (names.length === 0) throw new TypeError('listen needs at least one channel');
  for (const name of names) if (!CHANNEL_NAME.test(name)) throw new TypeError(`not a plain channel name: ${name}`);
  const { pool, logger, onListening, onLost, reconnectDelayMs = 500, maxReconnectDelayMs = 10_000, pingIntervalMs, poll } = options;
  const label = names.join(', ');

  let closed = false;
  /** The connection being set up or listening. A client that is no longer this one is being ended; its events are ignored. */
  let current: pg.Client | undefined;
  let listening = false;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  let pingTimer: NodeJS.Timeout | undefined;
  let pollTimer: NodeJS.Timeout | undefined;
  let connecting: Promise<void> | undefined;
  let polling: Promise<void> | undefined;
  const ending = new Set<Promise<void>>();

  const safely = (what: string, call: () => void) => {
    try {
      call();
    } catch (error) {
      logger.error({ err: error, channels: names }, `${what} failed`);
    }
  };

  /**
   * Ends `client`; close() waits for it. Only a listening connection gets a goodbye: the socket of one being set
   * up or already failed is closed at once, so that nothing waits on a server that does not answer.
   */
  const end = (client: pg.Client, graceful: boolean) => {
    const ended: Promise<void> = client
      .end()
      .catch(() => undefined)
      .finally(() => ending.delete(ended));
    if (!graceful) client.connection.stream.destroy();
    ending.add(ended);
  };

  const lost = (client: pg.Client, error: unknown) => {
    if (client !== current) return;
    current = undefined;
    clearInterval(pingTimer);
    end(client, false);
    const wasListening = listening;
    listening = false;
    if (wasListening && onLost) safely('onLost', onLost);
    logger.warn(
      { err: error, channels: names },
      wasListening ? `lost the LISTEN connection on ${label}; reconnecting` : `cannot LISTEN on ${label}; retrying`,
    );
    const delay = Math.min(maxReconnectDelayMs, reconnectDelayMs * 2 ** failures++);
    // Jittered, so that replicas cut off together (a database restart) do not all come back at the same instant.
    retryTimer = setTimeout(connect, delay * (0.8 + Math.random() * 0.4));
    retryTimer.unref();
  };

  function connect(): void {
    retryTimer = undefined;
    if (closed) return;
    const client = new pg.Client(pool.options);
    current = client;
    // A client's errors arrive as events; one without a listener would crash the process.
    client.on('error', (error) => lost(client, error));
    client.on('end', () => lost(client, new Error('connection ended')));
    client.on('notification', ({ channel, payload }) => {
      if (!closed) safely(`handling a notification on ${channel}`, () => handler(payload ?? '', channel));
    });
    connecting = (async () => {
      // pg never settles connect() for a client ended while connecting: its 'end' event settles the attempt.
      const ended = new Promise<never>((_resolve, reject) => client.once('end', () => reject(new Error('connection ended'))));
      ended.catch(() => undefined);
      try {
        await Promise.race([client.connect(), ended]);
        for (const name of names) await client.query(`LISTEN ${name}`);
      } catch (error) {
        lost(client, error);
        return;
      }
      // Closed meanwhile, or lost (its error event came before the statement failed).
      if (client !== current) return;
      listening = true;
      if (failures > 0) logger.info({ channels: names }, `listening on ${label} again`);
      failures = 0;
      if (pingIntervalMs !== undefined) {
        // pg reads `query_timeout` per query too; its typings only declare the client-wide option.
        const probe: { text: string; query_timeout: number } = { text: 'SELECT 1', query_timeout: Math.max(1_000, pingIntervalMs / 2) };
        pingTimer = setInterval(() => {
          client.query(probe).catch((error: unknown) => lost(client, error));
        }, pingIntervalMs);
        pingTimer.unref();
      }
      if (onListening) safely('onListening', onListening);
    })();
  }

  if (poll) {
    pollTimer = setInterval(() => {
      polling ??= poll
        .run()
        .catch((error: unknown) => logger.warn({ err: error, channels: names }, 'the fallback poll failed'))
        .finally(() => {
          polling = undefined;
        });
    }, poll.intervalMs);
    pollTimer.unref();
  }

  connect();

  return {
    get listening() {
      return listening;
    },
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      clearInterval(pingTimer);
      clearInterval(pollTimer);
      const client = current;
      current = undefined;
      if (client) end(client, listening);
      listening = false;
      await connecting;
      await polling;
      await Promise.all(ending);
    },
  };
}
