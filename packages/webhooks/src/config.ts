// The environment of the process that sends webhooks (the jobs service). Signing secrets are opened with the
// customer-tools keyring, so it reads the same key variables as every process that seals or opens them.
import { int } from '@fin/config';
import {
  createKeyring,
  createToolExecutor,
  customerToolsConfigShape,
  webhookTargetPolicy,
  type Keyring,
  type ToolExecutor,
} from '@fin/customer-tools';
import type { Logger } from '@fin/log';
import type { z } from 'zod';
import { DEFAULT_RETRY_SCHEDULE } from './backoff';
import {
  DEFAULT_DELIVERY_TIMEOUT_MS,
  DEFAULT_HOST_ATTEMPTS_PER_MINUTE,
  DEFAULT_MAX_IN_FLIGHT,
  DEFAULT_PER_TARGET_CONCURRENCY,
  DEFAULT_PER_TENANT_CONCURRENCY,
} from './dispatcher';
import { DEFAULT_RETRY_WINDOW_MS } from './store';

/** What is read of a receiver's answer: enough for the recorded excerpt; a larger 2xx is still delivered. */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** How long a receiver's resolved address is used (and a connection to it kept at most). */
const RESOLUTION_TTL_MS = 30_000;

export const webhooksConfigShape = {
  /** The customer-tools key (`<id>:<base64 of 32 bytes>`) that sealed the signing secrets: required, deliveries must go. */
  CUSTOMER_TOOLS_ENCRYPTION_KEY: customerToolsConfigShape.CUSTOMER_TOOLS_ENCRYPTION_KEY,
  CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS: customerToolsConfigShape.CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS,
  /** TESTS ONLY: also allow 127.0.0.0/8 and ::1 as delivery targets (as for customer tools). */
  CUSTOMER_TOOLS_ALLOW_LOOPBACK: customerToolsConfigShape.CUSTOMER_TOOLS_ALLOW_LOOPBACK,
  /** DEVELOPMENT ONLY: deliveries may go to http://localhost receivers (refused with NODE_ENV=production). */
  WEBHOOK_ALLOW_LOCAL_HTTP: customerToolsConfigShape.WEBHOOK_ALLOW_LOCAL_HTTP,
  NODE_ENV: customerToolsConfigShape.NODE_ENV,
  /** How often due deliveries are looked for (a queued event wakes the dispatcher at once). */
  WEBHOOK_DISPATCH_INTERVAL_MS: int(50, 60_000).default(1_000),
  /** Time limit of one delivery attempt. */
  WEBHOOK_TIMEOUT_MS: int(100, 30_000).default(DEFAULT_DELIVERY_TIMEOUT_MS),
  /** Delay after the first failed attempt; each further one doubles it, up to WEBHOOK_RETRY_MAX_DELAY_MS. */
  WEBHOOK_RETRY_BASE_MS: int(10, 3_600_000).default(DEFAULT_RETRY_SCHEDULE.baseMs),
  WEBHOOK_RETRY_MAX_DELAY_MS: int(10, 86_400_000).default(DEFAULT_RETRY_SCHEDULE.maxMs),
  /** How long a delivery is retried before it is marked failed. */
  WEBHOOK_RETRY_WINDOW_MS: int(1_000, 7 * 86_400_000).default(DEFAULT_RETRY_WINDOW_MS),
  /** Attempts in flight in one process. */
  WEBHOOK_MAX_IN_FLIGHT: int(1, 10_000).default(DEFAULT_MAX_IN_FLIGHT),
  /** Attempts in flight to one endpoint (or one callback URL of an account), every replica together. */
  WEBHOOK_ENDPOINT_CONCURRENCY: int(1, 100).default(DEFAULT_PER_TARGET_CONCURRENCY),
  /** Attempts in flight for one account, every replica together. */
  WEBHOOK_ACCOUNT_CONCURRENCY: int(1, 1_000).default(DEFAULT_PER_TENANT_CONCURRENCY),
  /** Attempts one account sends to one destination (an address, a registrable domain) in any minute, every replica together; beyond, deliveries wait. */
  WEBHOOK_HOST_ATTEMPTS_PER_MINUTE: int(1, 100_000).default(DEFAULT_HOST_ATTEMPTS_PER_MINUTE),
};

export type WebhooksConfig = z.output<z.ZodObject<typeof webhooksConfigShape>>;

/** The settings' defaults, for a process handed its settings in code (tests) rather than parsed from the environment. */
export const WEBHOOK_DEFAULTS = {
  CUSTOMER_TOOLS_ALLOW_LOOPBACK: false,
  WEBHOOK_ALLOW_LOCAL_HTTP: false,
  WEBHOOK_DISPATCH_INTERVAL_MS: 1_000,
  WEBHOOK_TIMEOUT_MS: DEFAULT_DELIVERY_TIMEOUT_MS,
  WEBHOOK_RETRY_BASE_MS: DEFAULT_RETRY_SCHEDULE.baseMs,
  WEBHOOK_RETRY_MAX_DELAY_MS: DEFAULT_RETRY_SCHEDULE.maxMs,
  WEBHOOK_RETRY_WINDOW_MS: DEFAULT_RETRY_WINDOW_MS,
  WEBHOOK_MAX_IN_FLIGHT: DEFAULT_MAX_IN_FLIGHT,
  WEBHOOK_ENDPOINT_CONCURRENCY: DEFAULT_PER_TARGET_CONCURRENCY,
  WEBHOOK_ACCOUNT_CONCURRENCY: DEFAULT_PER_TENANT_CONCURRENCY,
  WEBHOOK_HOST_ATTEMPTS_PER_MINUTE: DEFAULT_HOST_ATTEMPTS_PER_MINUTE,
} satisfies Partial<WebhooksConfig>;

/** The keyring and executor deliveries are signed and sent with; null when no key is given (tests only). */
export function webhookSenderFromConfig(
  config: Omit<WebhooksConfig, 'CUSTOMER_TOOLS_ENCRYPTION_KEY'> & Partial<Pick<WebhooksConfig, 'CUSTOMER_TOOLS_ENCRYPTION_KEY'>>,
  logger: Logger,
): { keyring: Keyring; executor: ToolExecutor } | null {
  const current = config.CUSTOMER_TOOLS_ENCRYPTION_KEY;
  if (current === undefined) {
    logger.warn('no customer-tools key given: webhook deliveries are queued but not sent by this process');
    return null;
  }
  if (config.CUSTOMER_TOOLS_ALLOW_LOOPBACK)
    logger.warn('CUSTOMER_TOOLS_ALLOW_LOOPBACK is on: webhooks may be delivered to loopback addresses. This is for tests only.');
  if (config.WEBHOOK_ALLOW_LOCAL_HTTP)
    logger.warn('WEBHOOK_ALLOW_LOCAL_HTTP is on: webhooks may be delivered to http://localhost receivers. This is for development only.');
  const policy = webhookTargetPolicy(config);
  return {
    keyring: createKeyring(current, config.CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS ?? []),
    // As many connections to one host as attempts may be in flight: accounts whose endpoints share a host (a
    // webhook relay, say) never wait for a connection another account's hanging endpoint holds.
    executor: createToolExecutor({
      allowLoopback: policy.allowLoopback === true,
      allowLocalHttp: policy.allowLocalHttp === true,
      maxResponseBytes: MAX_RESPONSE_BYTES,
      connectionsPerOrigin: config.WEBHOOK_MAX_IN_FLIGHT,
      // The address an attempt is counted against (per-destination limit) is the one it connects to.
      resolutionTtlMs: RESOLUTION_TTL_MS,
    }),
  };
}
