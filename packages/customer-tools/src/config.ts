import { bool, crossChecked, int, secret } from '@fin/config';
import type { Pool } from '@fin/db';
import type { Logger } from '@fin/log';
import { z } from 'zod';
import { DEFAULT_MAX_RESPONSE_BYTES, createToolExecutor } from './executor';
import { createCustomerToolRuntime, type CustomerToolRuntime } from './runtime';
import { createKeyring, parseEncryptionKey, type EncryptionKey, type Keyring } from './secrets';
import type { AddressPolicy } from './address';

const encryptionKey = () =>
  z.string().transform((raw, ctx): EncryptionKey => {
    const parsed = parseEncryptionKey(raw);
    if (typeof parsed === 'string') {
      ctx.addIssue({ code: 'custom', message: parsed });
      return z.NEVER;
    }
    return parsed;
  });

const encryptionKeys = () =>
  z.string().transform((raw, ctx): EncryptionKey[] => {
    const keys: EncryptionKey[] = [];
    for (const item of raw
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== '')) {
      const parsed = parseEncryptionKey(item);
      if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: parsed });
      else keys.push(parsed);
    }
    return keys;
  });

/**
 * The environment of every process that stores or calls customer tools (the portal, and product workers that
 * offer customer tools to the model). See docs/customer-tools.md.
 */
export const customerToolsConfigShape = {
  /** `<key id>:<base64 of 32 bytes>`; seals header secrets written from now on. */
  CUSTOMER_TOOLS_ENCRYPTION_KEY: secret(encryptionKey()),
  /** Comma-separated earlier keys, same format: they only open what they sealed, until re-encryption. */
  CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS: secret(encryptionKeys()).optional(),
  /** TESTS ONLY: also allow 127.0.0.0/8 and ::1 as tool targets. Never widens to any other range. */
  CUSTOMER_TOOLS_ALLOW_LOOPBACK: bool().default(false),
  /**
   * DEVELOPMENT ONLY: webhook endpoints and callback_url may be a receiver on this machine over plain http
   * (`http://localhost:…`, `http://127.0.0.1:…`, `http://[::1]:…`), so that `npm start` users can receive webhooks on
   * a laptop (docs/products.md#receiving-webhooks-on-your-own-machine). Customer tools are not widened. Refused with NODE_ENV=production (the images).
   */
  WEBHOOK_ALLOW_LOCAL_HTTP: crossChecked(bool().default(false), (config) =>
    config.WEBHOOK_ALLOW_LOCAL_HTTP === true && config.NODE_ENV === 'production'
      ? [
          {
            variable: 'WEBHOOK_ALLOW_LOCAL_HTTP',
            message:
              'is for development only (webhooks to http://localhost) and is refused with NODE_ENV=production: unset it, or run without NODE_ENV=production on a development machine',
          },
        ]
      : [],
  ),
  /** Read only to refuse development-only settings (WEBHOOK_ALLOW_LOCAL_HTTP) in production. */
  NODE_ENV: z.string().optional(),
  /** Largest response body read from a customer's API; the call is cut off beyond it. */
  CUSTOMER_TOOLS_MAX_RESPONSE_BYTES: int(1_024, 16 * 1024 * 1024).default(DEFAULT_MAX_RESPONSE_BYTES),
};

export type CustomerToolsConfig = z.output<z.ZodObject<typeof customerToolsConfigShape>>;

/**
 * Which webhook and callback_url targets this process accepts: loopback ones when CUSTOMER_TOOLS_ALLOW_LOOPBACK
 * (tests) or WEBHOOK_ALLOW_LOCAL_HTTP (development, which also allows them over plain http) is on.
 */
export function webhookTargetPolicy(
  config: Partial<Pick<CustomerToolsConfig, 'CUSTOMER_TOOLS_ALLOW_LOOPBACK' | 'WEBHOOK_ALLOW_LOCAL_HTTP'>>,
): AddressPolicy {
  const localHttp = config.WEBHOOK_ALLOW_LOCAL_HTTP === true;
  return { allowLoopback: config.CUSTOMER_TOOLS_ALLOW_LOOPBACK === true || localHttp, allowLocalHttp: localHttp };
}

export function keyringFromConfig(config: CustomerToolsConfig): Keyring {
  return createKeyring(config.CUSTOMER_TOOLS_ENCRYPTION_KEY, config.CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS ?? []);
}

/** The runtime a product worker (or the portal) uses, built from its config. Close it at shutdown. */
export function createCustomerToolsFromConfig(
  config: CustomerToolsConfig,
  { pool, logger }: { pool: Pool; logger?: Logger },
): CustomerToolRuntime {
  const executor = createToolExecutor({
    allowLoopback: config.CUSTOMER_TOOLS_ALLOW_LOOPBACK,
    maxResponseBytes: config.CUSTOMER_TOOLS_MAX_RESPONSE_BYTES,
  });
  if (config.CUSTOMER_TOOLS_ALLOW_LOOPBACK)
    logger?.warn('CUSTOMER_TOOLS_ALLOW_LOOPBACK is on: customer tools may call loopback addresses. This is for tests only.');
  return createCustomerToolRuntime({ pool, keyring: keyringFromConfig(config), executor, ...(logger === undefined ? {} : { logger }) });
}
