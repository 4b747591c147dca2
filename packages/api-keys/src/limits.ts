// Per-account rate limits: what is counted, the defaults, and the overrides a tenant may carry. The gateway
// enforces them (services/gateway/src/rate-limit); the key store validates and stores a tenant's overrides.
import { CHAT_STREAMS_PER_ACCOUNT, CHAT_TURNS_PER_MINUTE, FILINGS_REQUESTS_PER_MINUTE, RATE_LIMITS_PER_MINUTE } from '@fin/contracts';

/**
 * What is counted per account (tenant) and minute, across all of its API keys: the spec's three products, job
 * polling, customer-tool calls, chat turns (every POST /api/chat and GET /api/chat/stream), and the filings routes.
 */
export const LIMITED_PRODUCTS = ['news', 'stock-report', 'analysis', 'jobs', 'tools', 'webhooks', 'chat-turns', 'filings'] as const;
export type LimitedProduct = (typeof LIMITED_PRODUCTS)[number];

/**
 * Requests per account (tenant, all of its API keys together) per minute. news, stock-report and analysis are
 * the spec's table, whose limits are the account's ("higher limits are arranged with the account manager"): a
 * second key must not double them. Job polling allows a client to poll ten jobs at the suggested 2-second pace
 * (30/min each) with room to spare; customer-tool calls are management operations that nobody needs more than
 * once a second; chat turns (each starts a model call, or re-attaches to one) are a turn a second, which a person
 * typing never reaches and which bounds what a client churning connections can start; filings requests are a
 * second's worth (each may cost a request of the deployment's 10 a second to SEC EDGAR). A tenant's
 * `rate_limit_overrides` replace these per product (see docs/operations.md).
 */
export const DEFAULT_LIMITS: Readonly<Record<LimitedProduct, number>> = Object.freeze({
  ...RATE_LIMITS_PER_MINUTE,
  jobs: 600,
  tools: 60,
  webhooks: 60,
  'chat-turns': CHAT_TURNS_PER_MINUTE,
  filings: FILINGS_REQUESTS_PER_MINUTE,
});

/**
 * The row of rate_limit_counters an account's per-minute count of `product` lives in. The gateway's limiter names
 * it so (its store's `<product>:` prefix and the `tenant:<id>` key); the portal adds to the same row what it queues
 * for the same limit (test events and redeliveries from its pages), so the two ways count as one.
 */
export function accountCounterKey(product: LimitedProduct, tenantId: string): string {
  return `${product}:tenant:${tenantId}`;
}

/** The account's per-minute limit of `product`: its override, else the default. */
export function accountLimit(product: LimitedProduct, overrides: Readonly<Record<string, number>>): number {
  return overrides[product] ?? DEFAULT_LIMITS[product];
}

/** Concurrent chat requests per account (spec: 10 concurrent streams). A tenant override under `chat` replaces it. */
export const DEFAULT_CHAT_CONCURRENCY = CHAT_STREAMS_PER_ACCOUNT;

/**
 * The override naming an account's daily token budget: model tokens (all input, cache writes and reads included,
 * and output) per UTC day, all of its keys together. No default: the gateway's DAILY_TOKEN_BUDGET, if set.
 */
export const DAILY_TOKEN_BUDGET_LIMIT = 'daily-tokens';

/** Names an override may use: the per-minute products, `chat` (concurrent streams) and the daily token budget. */
export type OverridableLimit = LimitedProduct | 'chat' | typeof DAILY_TOKEN_BUDGET_LIMIT;
export const OVERRIDABLE_LIMITS: readonly OverridableLimit[] = [...LIMITED_PRODUCTS, 'chat', DAILY_TOKEN_BUDGET_LIMIT];

/** tenants.rate_limit_overrides → {limit name: positive integer}; anything else in the JSON is ignored. */
export function parseLimitOverrides(raw: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return out;
  for (const [name, value] of Object.entries(raw)) {
    if (typeof value === 'number' && Number.isInteger(value) && value > 0) out[name] = value;
  }
  return out;
}
