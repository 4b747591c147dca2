// The contract between the gateway's HTTP layer (app.ts, routing) and rate limiting.
import type { RequestHandler } from 'express';
import type { Principal } from '../auth/types';

/** What is counted per key and minute: the spec's three products plus job polling and customer-tool calls. */
export const LIMITED_PRODUCTS = ['news', 'stock-report', 'analysis', 'jobs', 'tools'] as const;
export type LimitedProduct = (typeof LIMITED_PRODUCTS)[number];

export interface RateLimits {
  /**
   * Express middleware counting one hit for `res.locals.principal` (a Principal) on `product`. Sets
   * X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (Unix seconds) on every response it
   * passes; over the limit it calls next() with an AppError 429 carrying those headers and Retry-After.
   */
  forProduct(product: LimitedProduct): RequestHandler;
  /**
   * Takes one of the principal's key's concurrent chat-stream slots (10 per key across all replicas) and
   * returns its release function. Throws AppError 429 when all are taken. A slot whose holder died is
   * reclaimed (slots are leased, and the lease is renewed while the stream lives).
   */
  acquireChatSlot(principal: Principal): Promise<() => Promise<void>>;
  close(): Promise<void>;
}
