// The contract between the gateway's HTTP layer (app.ts, routing) and rate limiting.
import type { LimitedProduct } from '@fin/api-keys';
import type { SpentBudget } from '@fin/http';
import type { Request, Response } from 'express';
import type { Principal } from '../auth/types';

// What is counted per account and minute, and the defaults, belong to the key store with the tenants' overrides.
export { type LimitedProduct } from '@fin/api-keys';

export interface RateLimits {
  /**
   * Counts one request of `principal`'s account on `product` (and, for a product that starts model work, admits it
   * to the account's daily token budget). Sets X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (Unix
   * seconds) on `res`; over the limit it rejects with an AppError 429 carrying those headers and Retry-After.
   * Resolves to the account's spent daily budget when the request goes on past it, to be answered only from what
   * exists (the service is told, in the caller), else to undefined.
   */
  admit(product: LimitedProduct, principal: Principal, req: Request, res: Response): Promise<SpentBudget | undefined>;
  /**
   * Takes one of the principal's account's concurrent chat slots (10 per tenant across all its keys and all
   * replicas) and returns its release function. Throws AppError 429 when all are taken. A slot whose holder
   * died is reclaimed (slots are leased, and the lease is renewed while the stream lives).
   */
  acquireChatSlot(principal: Principal): Promise<ReleaseChatSlot>;
  close(): Promise<void>;
}

/**
 * Gives a chat slot back. `ended`: the reply is over (the service ended its response), the slot is free at once.
 * `detached`: the client left, or the stream was cut, before the service ended its response; the chat service
 * keeps such a reply running for its detach grace (CHAT_DETACH_GRACE_MS), so the slot stays taken that long.
 */
export type ReleaseChatSlot = (how: 'ended' | 'detached') => Promise<void>;
