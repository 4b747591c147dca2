import { bool, int, logConfigShape, port, secret, url } from '@fin/config';
import { DEFAULT_MAX_TOOLS_PER_TENANT, customerToolsConfigShape } from '@fin/customer-tools';
import { metricsConfigShape } from '@fin/metrics';
import { DEFAULT_KEY_TTL_DAYS } from './accounts';
import { z } from 'zod';
import { databasePoolConfigShape } from '@fin/db';

/** The portal's environment. See docs/customer-tools.md and docs/configuration.md. */
export const portalConfigShape = {
  ...customerToolsConfigShape,
  PORT: port().default(8086),
  HOST: z.string().default('127.0.0.1'),
  ...metricsConfigShape(9086),
  DATABASE_URL: url(['postgres', 'postgresql']),
  ...databasePoolConfigShape,
  INTERNAL_SIGNING_SECRET: secret(z.string().min(32, 'must be at least 32 characters (e.g. `openssl rand -hex 32`)')),
  /** Signs the portal's session cookies: the portal's own, never INTERNAL_SIGNING_SECRET (the services hold that one). */
  PORTAL_SESSION_SECRET: secret(z.string().min(32, 'must be at least 32 characters (e.g. `openssl rand -hex 32`)')),
  ...logConfigShape(),
  /** Session cookies only over HTTPS. Turn off only to use the portal over plain http on a host other than localhost. */
  PORTAL_COOKIE_SECURE: bool().default(true),
  /** How long a portal sign-in lasts (the key's revocation ends it earlier). */
  PORTAL_SESSION_TTL_MS: int(60_000, 7 * 24 * 3_600_000).default(8 * 3_600_000),
  CUSTOMER_TOOLS_MAX_PER_TENANT: int(1, 1_000).default(DEFAULT_MAX_TOOLS_PER_TENANT),
  /** Days until an API key generated in the portal expires. */
  PORTAL_KEY_TTL_DAYS: int(1, 3_650).default(DEFAULT_KEY_TTL_DAYS),
  /** Sign-in attempts per minute from one client address (IPv6: per /64), and for one tenant. */
  PORTAL_SIGN_IN_LIMIT_PER_CLIENT: int(1, 10_000_000).default(20),
  PORTAL_SIGN_IN_LIMIT_PER_TENANT: int(1, 10_000_000).default(30),
  /** Test-button calls per minute from one client address, and for one tenant. */
  PORTAL_TEST_CALL_LIMIT_PER_CLIENT: int(1, 10_000_000).default(10),
  PORTAL_TEST_CALL_LIMIT_PER_TENANT: int(1, 10_000_000).default(30),
  /** Proxies in front of the portal that append to X-Forwarded-For: 1 for the gateway, 2 with an ingress before it. */
  PORTAL_CLIENT_ADDRESS_HOPS: int(1, 10).default(1),
  SHUTDOWN_DRAIN_TIMEOUT_MS: int(0, 600_000).default(20_000),
};

export type PortalConfig = z.output<z.ZodObject<typeof portalConfigShape>>;
