import type { Pool, PoolClient } from '@fin/db';
import type { Logger } from '@fin/log';

/** Channel the api_keys/tenants triggers notify on (migration 1763769600000_gateway-keys-and-limits). */
const KEY_CHANGE_CHANNEL = 'api_key_changed';

export interface KeyChange {
  kind: 'key' | 'tenant';
  id: string;
}

export interface KeyChangeListenerOptions {
  pool: Pool;
  logger: Logger;
  onChange(change: KeyChange): void;
  /** The connection is (re)established. Notifications sent while it was down are lost: drop what was cached. */
  onConnected(): void;
  onDisconnected(): void;
  /** First reconnect delay; doubles per failed attempt up to 10 s. */
  reconnectDelayMs: number;
  /** How often the idle LISTEN connection is probed, so a silently dead one (no FIN) is noticed. */
  pingIntervalMs: number;
}

export interface KeyChangeListener {
  readonly connected: boolean;
  close(): Promise<void>;
}

const MAX_RECONNECT_DELAY_MS = 10_000;

function parsePayload(payload: string | undefined): KeyChange | undefined {
  const match = /^(key|tenant):([0-9a-f-]{36})$/.exec(payload ?? '');
  return match ? { kind: match[1] as KeyChange['kind'], id: match[2] as string } : undefined;
}

/**
 * Holds one pooled connection that LISTENs on api_key_changed, and reconnects (with backoff) whenever it is
 * lost: an error or end event, or a failed probe. The connection is taken from the pool, so the pool must be
 * ended after close().
 */
export function listenForKeyChanges(options: KeyChangeListenerOptions): KeyChangeListener {
  const { pool, logger } = options;
  let current: PoolClient | undefined;
  let stopped = false;
  let attempt = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  let pingTimer: NodeJS.Timeout | undefined;
  let connecting: Promise<void> | undefined;
  const released = new WeakSet<PoolClient>();

  const destroy = (client: PoolClient) => {
    if (released.has(client)) return;
    released.add(client);
    // A truthy argument makes the pool close the connection instead of reusing it (it holds a LISTEN).
    client.release(true);
  };

  const scheduleReconnect = () => {
    if (stopped || retryTimer) return;
    const delay = Math.min(MAX_RECONNECT_DELAY_MS, options.reconnectDelayMs * 2 ** attempt);
    attempt++;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      connect();
    }, delay * (0.8 + Math.random() * 0.4));
    retryTimer.unref();
  };

  const lost = (client: PoolClient, error: unknown) => {
    if (client !== current) return;
    current = undefined;
    clearInterval(pingTimer);
    destroy(client);
    options.onDisconnected();
    if (stopped) return;
    logger.warn({ err: error }, 'lost the API-key change listener; cached keys are trusted only briefly until it is back');
    scheduleReconnect();
  };

  const connect = () => {
    connecting = (async () => {
      let client: PoolClient | undefined;
      try {
        client = await pool.connect();
        const self = client;
        // A checked-out client's errors are not handled by the pool; unhandled, they would crash the process.
        self.on('error', (error) => lost(self, error));
        self.on('end', () => lost(self, new Error('connection ended')));
        self.on('notification', (message) => {
          if (message.channel !== KEY_CHANGE_CHANNEL) return;
          const change = parsePayload(message.payload);
          if (change) options.onChange(change);
          else logger.warn({ payload: message.payload }, 'ignoring an unreadable api_key_changed notification');
        });
        await self.query(`LISTEN ${KEY_CHANGE_CHANNEL}`);
        if (stopped) {
          destroy(self);
          return;
        }
        current = self;
        if (attempt > 0) logger.info('listening for API-key changes again');
        attempt = 0;
        options.onConnected();
        // pg reads `query_timeout` per query too; its typings only declare the client-wide option.
        const probe: { text: string; query_timeout: number } = { text: 'SELECT 1', query_timeout: Math.max(1_000, options.pingIntervalMs / 2) };
        pingTimer = setInterval(() => {
          self.query(probe).catch((error: unknown) => lost(self, error));
        }, options.pingIntervalMs);
        pingTimer.unref();
      } catch (error) {
        if (client && client !== current) destroy(client);
        if (stopped) return;
        logger.warn({ err: error }, 'cannot listen for API-key changes; retrying');
        scheduleReconnect();
      }
    })();
  };

  connect();

  return {
    get connected() {
      return current !== undefined;
    },
    async close() {
      stopped = true;
      clearTimeout(retryTimer);
      clearInterval(pingTimer);
      await connecting;
      if (current) {
        const client = current;
        current = undefined;
        destroy(client);
      }
    },
  };
}
