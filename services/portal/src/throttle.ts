// Throttles on the portal's two costly actions: signing in (a key lookup per attempt) and the test button (a
// request to the customer's API, up to its time limit). Each is counted per client address and per tenant in
// fixed one-minute windows, in the rate_limit_counters table the gateway counts in (rows prefixed `portal:`,
// added by the same statement, @fin/db's addCounterHits),
// so every portal replica counts against the same numbers; the gateway's sweep deletes ended windows.
//
// The gateway's limiter is keyed by API key and lives in the gateway; these pages are anonymous until sign-in,
// so they are counted here, where the client address and the signed-in tenant are known. What a page does that the
// API limits too (queuing a webhook delivery) counts in the gateway's own per-account counter (hitAccountLimit).
import { isIPv4, isIPv6 } from 'node:net';
import { accountCounterKey, type LimitedProduct } from '@fin/api-keys';
import { addCounterHits, type CounterRow, type Pool } from '@fin/db';
import type { Request } from 'express';

export type ThrottledAction = 'sign_in' | 'test_call';

export interface ThrottleLimits {
  /** Attempts per window from one client address (an IPv6 client counts by its /64). */
  perClient: number;
  /** Attempts per window for one tenant, from anywhere. */
  perTenant: number;
}

export interface PortalThrottleOptions {
  pool: Pool;
  limits: Record<ThrottledAction, ThrottleLimits>;
  /** Default 60 s: the limits are per minute. */
  windowMs?: number;
}

/** An attempt over a limit: what to tell the client, and when to come back. */
export interface Refusal {
  detail: string;
  retryAfterSeconds: number;
}

export interface PortalThrottle {
  /**
   * Counts one request against the account's per-minute limit of `product`, in the very counter the gateway's
   * limiter counts the API's requests in (accountCounterKey): what a page queues cannot exceed what the API may.
   * A refusal when the account is over `limit`.
   */
  hitAccountLimit(product: LimitedProduct, tenantId: string, limit: number): Promise<Refusal | null>;
  /**
   * Counts one attempt of `action` for each party given (the client, and the tenant once known); a refusal when
   * any of them is over its limit. Refused attempts count too, so retrying early does not help.
   */
  hit(action: ThrottledAction, who: { client?: string; tenantId?: string }): Promise<Refusal | null>;
}

const DESCRIBED: Record<ThrottledAction, string> = { sign_in: 'sign-in attempts', test_call: 'test calls' };
/** As the gateway describes its limits. */
const ACCOUNT_DESCRIBED: Partial<Record<LimitedProduct, string>> = { webhooks: 'webhook requests' };

export function createPortalThrottle({ pool, limits, windowMs = 60_000 }: PortalThrottleOptions): PortalThrottle {
  return {
    async hitAccountLimit(product, tenantId, limit) {
      const key = accountCounterKey(product, tenantId);
      const { rows } = await pool.query<CounterRow>(addCounterHits([key], [1], windowMs));
      const row = rows[0];
      if (row === undefined || row.hits <= limit) return null;
      const retryAfterSeconds = Math.max(1, Math.ceil((row.reset_at.getTime() - Date.now()) / 1000));
      return {
        detail: `Rate limit exceeded: this account may make ${limit} ${ACCOUNT_DESCRIBED[product] ?? `${product} requests`} per minute, all of its API keys and the portal together. Retry in ${retryAfterSeconds} s.`,
        retryAfterSeconds,
      };
    },
    async hit(action, { client, tenantId }) {
      const parties: { key: string; limit: number; who: string }[] = [];
      if (client !== undefined)
        parties.push({ key: `portal:${action}:client:${client}`, limit: limits[action].perClient, who: 'from this address' });
      if (tenantId !== undefined)
        parties.push({ key: `portal:${action}:tenant:${tenantId}`, limit: limits[action].perTenant, who: 'for this account' });
      if (parties.length === 0) return null;
      const { rows } = await pool.query<CounterRow>(
        addCounterHits(
          parties.map((party) => party.key),
          parties.map(() => 1),
          windowMs,
        ),
      );
      for (const party of parties) {
        const row = rows.find((candidate) => candidate.counter_key === party.key);
        if (row === undefined || row.hits <= party.limit) continue;
        const retryAfterSeconds = Math.max(1, Math.ceil((row.reset_at.getTime() - Date.now()) / 1000));
        return {
          detail: `Too many ${DESCRIBED[action]} ${party.who}: at most ${party.limit} per ${Math.round(windowMs / 1000)} s. Retry in ${retryAfterSeconds} s.`,
          retryAfterSeconds,
        };
      }
      return null;
    },
  };
}

/** A /64 for IPv6 (one subscriber usually holds a whole /64), the address itself for IPv4. */
function clientKey(address: string): string {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare)?.[1];
  if (mapped !== undefined) return mapped;
  if (isIPv4(bare)) return bare;
  if (!isIPv6(bare)) return 'unknown';
  const [head = '', tail] = bare.toLowerCase().split('::');
  const front = head === '' ? [] : head.split(':');
  const back = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? front : [...front, ...Array<string>(8 - front.length - back.length).fill('0'), ...back];
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/**
 * The client's address, as the proxies in front of the portal recorded it. Each appends the address it was
 * reached from to X-Forwarded-For, so the entry `hops` from the right is the one the outermost trusted proxy saw
 * (hops 1: the gateway; 2: an ingress in front of the gateway). Entries further left are the client's own claims.
 */
export function clientAddressOf(req: Request, hops: number): string {
  const header = req.headers['x-forwarded-for'];
  const entries = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  const address = entries.length >= hops ? entries[entries.length - hops] : (entries[0] ?? req.socket.remoteAddress);
  return clientKey(address ?? '');
}
