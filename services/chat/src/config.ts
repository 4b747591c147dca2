import { aiConfigShape } from '@fin/ai';
import { int, logConfigShape, port, secret, url } from '@fin/config';
import { CHAT_CONTEXT_PAIRS } from '@fin/contracts';
import { customerToolsConfigShape } from '@fin/customer-tools';
import type { Logger } from '@fin/log';
import { metricsConfigShape } from '@fin/metrics';
import { z } from 'zod';
import { databasePoolConfigShape } from '@fin/db';

/** The chat service's environment. See docs/configuration.md (Chat). */
export const chatConfigShape = {
  ...aiConfigShape,
  ...customerToolsConfigShape,
  PORT: port().default(8084),
  HOST: z.string().default('127.0.0.1'),
  ...metricsConfigShape(9084),
  DATABASE_URL: url(['postgres', 'postgresql']),
  ...databasePoolConfigShape,
  INTERNAL_SIGNING_SECRET: secret(z.string().min(32, 'must be at least 32 characters (e.g. `openssl rand -hex 32`)')),
  ...logConfigShape(),
  /** Completed exchanges (a user message and its reply) of a conversation the model sees; older ones are left out. */
  CHAT_CONTEXT_PAIRS: int(1, 100).default(CHAT_CONTEXT_PAIRS),
  /**
   * Past CHAT_CONTEXT_PAIRS, the oldest exchanges are dropped this many at a time (default: half of it, so the
   * model sees the last 6–10), so that a conversation's start, and with it its cached prompt prefix, stays the
   * same for several turns instead of changing on every one.
   */
  CHAT_CONTEXT_TRIM_PAIRS: int(1, 100).optional(),
  /** A `: keep-alive` comment this often on every open stream, so proxies do not close a quiet one. */
  CHAT_HEARTBEAT_MS: int(1_000, 300_000).default(15_000),
  /**
   * How long a reply keeps running after its last client disconnected, so that a client which reconnects
   * (EventSource does so by itself) can re-attach with Last-Event-ID; then the model call is aborted and the
   * reply recorded as interrupted. 0 aborts at once.
   */
  CHAT_DETACH_GRACE_MS: int(0, 60_000).default(5_000),
  /**
   * Deprecated name of DATABASE_POOL_MAX (turns are short transactions; streams hold none), still read so that
   * a deployment setting it keeps its pool size: when set, it wins, and the start-up logs a warning.
   */
  CHAT_DB_POOL_SIZE: int(1, 100).optional(),
  /**
   * Shutdown: open requests and streams get this long. Replies still being written stop 2 s before it (or at
   * once when it is shorter), each stream ending with an `error` event, and are recorded as interrupted.
   */
  SHUTDOWN_DRAIN_TIMEOUT_MS: int(0, 600_000).default(20_000),
};

export type ChatConfig = z.output<z.ZodObject<typeof chatConfigShape>>;

/** The deprecated pool-size variable still works; the start-up says which value is used and what to set instead. */
export function checkChatConfig(config: ChatConfig, logger: Pick<Logger, 'warn'>): void {
  if (config.CHAT_DB_POOL_SIZE !== undefined) {
    logger.warn(
      { CHAT_DB_POOL_SIZE: config.CHAT_DB_POOL_SIZE, DATABASE_POOL_MAX: config.DATABASE_POOL_MAX },
      'CHAT_DB_POOL_SIZE is deprecated and sets the pool size in place of DATABASE_POOL_MAX; set DATABASE_POOL_MAX instead',
    );
  }
}
