// The refusal of an account whose daily token budget is spent. The gateway decides that the budget is spent; a
// request that spends nothing (answered from the cache, joined onto a job already in flight, an Idempotency-Key
// replayed) must still pass, and only the product service knows whether it is one of those. So the gateway
// forwards such a request with the spent budget in the caller's signed identity, and the service answers it from
// what exists or refuses it with this error: the same body and headers as the gateway's own refusal.
import { tooManyRequests, type AppError } from './errors';

/** What the gateway found when it refused to reserve: the account's budget, what it used today and what is held. */
export interface SpentBudget {
  /** Model tokens per UTC day. */
  limit: number;
  /** Tokens used today (UTC). */
  used: number;
  /** Tokens reserved by work in progress. */
  held: number;
  /** When new work is accepted again (the next UTC midnight), in Unix seconds. */
  resetAt: number;
}

const ENCODED = /^(\d{1,16}):(\d{1,16}):(\d{1,16}):(\d{1,16})$/;

/** The next UTC midnight after `now`. */
export function nextUtcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}

/** A spent budget as it travels in the signed identity: `limit:used:held:resetAt`. */
export function encodeSpentBudget(spent: SpentBudget): string {
  return [spent.limit, spent.used, spent.held, spent.resetAt].map((value) => String(Math.max(0, Math.floor(value)))).join(':');
}

/** The spent budget of a signed identity header; undefined for an empty or malformed value. */
export function decodeSpentBudget(value: string): SpentBudget | undefined {
  const match = ENCODED.exec(value);
  if (match === null) return undefined;
  const [limit, used, held, resetAt] = match.slice(1).map(Number) as [number, number, number, number];
  return { limit, used, held, resetAt };
}

/**
 * The 429 of new work past the daily token budget (rate_limit_exceeded, Retry-After until the reset,
 * X-Token-Budget-Limit and X-Token-Budget-Reset), whether the gateway or a product service says it.
 */
export function tokenBudgetRefusal(spent: SpentBudget, now: Date = new Date()): AppError {
  const reset = new Date(spent.resetAt * 1000);
  const running = spent.held > 0 ? ` and ${spent.held.toLocaleString('en')} more is held for work in progress` : '';
  return tooManyRequests(
    `Daily token budget used: this account may use ${spent.limit.toLocaleString('en')} model tokens per UTC day (all of its API keys together) and has used ${spent.used.toLocaleString('en')} today${running}. New requests are accepted again at ${reset.toISOString()}; jobs already running finish, their results stay available, and requests the cache answers still pass.`,
    (reset.getTime() - now.getTime()) / 1000,
    { 'X-Token-Budget-Limit': String(spent.limit), 'X-Token-Budget-Reset': String(spent.resetAt) },
  );
}
