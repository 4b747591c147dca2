import { listen, type Pool } from '@fin/db';
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

function parsePayload(payload: string): KeyChange | undefined {
  const match = /^(key|tenant):([0-9a-f-]{36})$/.exec(payload);
  return match ? { kind: match[1] as KeyChange['kind'], id: match[2] as string } : undefined;
}

/**
 * LISTENs on api_key_changed (through `listen` of @fin/db: a connection of its own, outside the pool, replaced
 * with backoff whenever it is lost or fails a probe) and hands every change to `onChange`.
 */
export function listenForKeyChanges(options: KeyChangeListenerOptions): KeyChangeListener {
  const logger = options.logger.child({ component: 'key-change-listener' });
  const listener = listen(
    KEY_CHANGE_CHANNEL,
    (payload) => {
      const change = parsePayload(payload);
      if (change) options.onChange(change);
      else logger.warn({ payload }, 'ignoring an unreadable api_key_changed notification');
    },
    {
      pool: options.pool,
      logger,
      reconnectDelayMs: options.reconnectDelayMs,
      pingIntervalMs: options.pingIntervalMs,
      onListening: () => options.onConnected(),
      onLost: () => options.onDisconnected(),
    },
  );
  return {
    get connected() {
      return listener.listening;
    },
    close: () => listener.close(),
  };
}
