import { DEFAULT_CHAT_CONCURRENCY, DEFAULT_LIMITS } from '@fin/api-keys';
import type { Pool } from '@fin/db';
import { tooManyRequests, type AppError, type SpentBudget } from '@fin/http';
import type { Logger } from '@fin/log';
import type { Request, Response } from 'express';
import { rateLimit, type RateLimitInfo } from 'express-rate-limit';
import type { Principal } from '../auth/types';
import { createChatSlots } from './chat-slots';
import { DEFAULT_SYNC_MS, FailOpenBreaker, PostgresRateLimitStore } from './postgres-store';
import { createTokenBudget, type BudgetAdmission, type SpendingProduct } from './token-budget';
import type { LimitedProduct, RateLimits } from './types';

export interface RateLimitsOptions {
  pool: Pool;
  logger: Logger;
  /** Per-account requests per window, by product; unspecified products keep DEFAULT_LIMITS. */
  limits?: Partial<Record<LimitedProduct, number>>;
  /** Fixed window length. Default 60 s (the limits are per minute). */
  windowMs?: number;
  /** Concurrent chat requests per account. Default 10. */
  chatConcurrency?: number;
  /**
   * The chat service's CHAT_DETACH_GRACE_MS: how long a reply runs on after its client left. A slot given back
   * as `detached` stays taken this long plus a margin. Default 5 s (the chat service's default).
   */
  chatDetachGraceMs?: number;
  /** A chat slot not renewed for this long is reclaimed. Default 30 s. */
  chatLeaseMs?: number;
  /** How often held chat slots are renewed. Default 10 s. */
  chatHeartbeatMs?: number;
  /** How often ended counter windows and expired chat slots are deleted. Default 60 s. */
  sweepIntervalMs?: number;
  /** A counter update slower than this counts as a store failure (the request passes). Default 2 s. */
  storeTimeoutMs?: number;
  /** After a store failure, requests pass uncounted for this long without trying the database. Default 5 s. */
  failOpenCooldownMs?: number;
  /** How often hits counted locally are sent to the shared counters (see CounterSync). Default 100 ms. */
  syncMs?: number;
  /** Model tokens per account per UTC day for tenants without a `daily-tokens` override (undefined: no budget). */
  dailyTokenBudget?: number;
  /** Tokens the daily budget reserves per admitted request, by product (token-budget.ts's defaults otherwise). */
  tokenEstimates?: Partial<Record<SpendingProduct, number>>;
  /** How long a daily-budget reservation no job holds lives. Default 15 minutes. */
  tokenReservationTtlMs?: number;
}

/** What starts model work, so the daily token budget applies to it before its per-minute limit (as usage_daily names it). */
const SPENDING: Partial<Record<LimitedProduct, SpendingProduct>> = {
  news: 'news',
  'stock-report': 'stock-report',
  analysis: 'analysis',
  'chat-turns': 'chat',
};

export interface PostgresRateLimits extends RateLimits {
  /** The per-minute defaults in force (before tenant overrides). */
  readonly limits: Readonly<Record<LimitedProduct, number>>;
  /** Deletes counter rows whose window ended and chat slots whose lease expired (also run on an interval). */
  sweep(): Promise<{ counters: number; chatSlots: number }>;
  /** Sends the hits counted locally to the shared counters now (otherwise done every `syncMs`). */
  sync(): Promise<void>;
}

const DESCRIBED: Record<LimitedProduct, string> = {
  news: 'news requests',
  'stock-report': 'stock-report requests',
  analysis: 'analysis requests',
  jobs: 'job status or result requests',
  tools: 'customer-tool requests',
  webhooks: 'webhook requests',
  'chat-turns': 'chat requests',
  filings: 'filings requests',
};
const LOG_EVERY_MS = 10_000;
/**
 * Added to the chat service's detach grace before a detached slot frees: the service starts its grace when it
 * sees the connection close, a moment after the gateway did, and the model call stops a moment after the grace.
 */
const DETACH_MARGIN_MS = 1_000;
// Handed by express-rate-limit's handler to our own `next`, which turns it into the 429 with its headers.
const LIMITED = Symbol('rate limited');

function headersFor(info: RateLimitInfo): Record<string, string> {
  const headers: Record<string, string> = {
    'X-RateLimit-Limit': String(info.limit),
    'X-RateLimit-Remaining': String(info.remaining),
  };
  // The spec's X-RateLimit-Reset is a Unix time in seconds (express-rate-limit's draft headers send
  // seconds-until-reset instead), rounded up so the window has ended by then.
  if (info.resetTime) headers['X-RateLimit-Reset'] = String(Math.ceil(info.resetTime.getTime() / 1000));
  return headers;
}

function limitExceeded(product: LimitedProduct, info: RateLimitInfo, headers: Record<string, string>): AppError {
  const retryAfter = Math.max(1, Math.ceil(((info.resetTime?.getTime() ?? Date.now() + 1000) - Date.now()) / 1000));
  return tooManyRequests(
    `Rate limit exceeded: this account may make ${info.limit} ${DESCRIBED[product]} per minute, all of its API keys together. Retry in ${retryAfter} s.`,
    retryAfter,
    headers,
  );
}

/** Counts one request of `principal` on a product: the spent daily budget it goes on with, if any (RateLimits.admit). */
type Admission = (principal: Principal, req: Request, res: Response) => Promise<SpentBudget | undefined>;

/** What the limiter passed on as an error (express-rate-limit passes the errors it caught, which are Errors). */
function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error('the rate limiter failed', { cause: error });
}

/** The counter of an account: every key of the tenant counts against it. */
const accountCounter = (principal: Principal) => `tenant:${principal.tenantId}`;

/**
 * Rate limits shared by every gateway replica: per-minute counters per account (tenant) and product in Postgres
 * (atomic upserts through express-rate-limit with our store, which counts locally while the limit is far and
 * synchronises every replica's counts in batches; see CounterSync and docs/gateway.md) and leased chat slots per
 * account. The spec's limits are the account's:
 * keys are free to mint, so a per-key count would give a tenant as many limits as it makes keys.
 *
 * When the database cannot be reached, requests pass uncounted (fail open) and a warning is logged at most
 * every 10 s: limiting protects capacity, and refusing all traffic because the counter store is down would be
 * the larger outage. Authentication does not fail open.
 */
export function createRateLimits({
  pool,
  logger,
  limits: overrides = {},
  windowMs = 60_000,
  chatConcurrency = DEFAULT_CHAT_CONCURRENCY,
  chatDetachGraceMs = 5_000,
  chatLeaseMs = 30_000,
  chatHeartbeatMs = 10_000,
  sweepIntervalMs = 60_000,
  storeTimeoutMs = 2_000,
  failOpenCooldownMs = 5_000,
  syncMs = DEFAULT_SYNC_MS,
  dailyTokenBudget,
  tokenEstimates,
  tokenReservationTtlMs,
}: RateLimitsOptions): PostgresRateLimits {
  const budget = createTokenBudget({
    pool,
    logger,
    ...(dailyTokenBudget === undefined ? {} : { defaultBudget: dailyTokenBudget }),
    ...(tokenEstimates === undefined ? {} : { estimates: tokenEstimates }),
    ...(tokenReservationTtlMs === undefined ? {} : { reservationTtlMs: tokenReservationTtlMs }),
    chatHoldMs: chatDetachGraceMs + DETACH_MARGIN_MS,
  });
  const limits: Readonly<Record<LimitedProduct, number>> = Object.freeze({ ...DEFAULT_LIMITS, ...overrides });
  const breaker = new FailOpenBreaker(failOpenCooldownMs);
  const chat = createChatSlots({
    pool,
    logger,
    maxConcurrent: chatConcurrency,
    leaseMs: chatLeaseMs,
    heartbeatMs: chatHeartbeatMs,
    detachedHoldMs: chatDetachGraceMs + DETACH_MARGIN_MS,
  });
  const admissions = new Map<LimitedProduct, Admission>();
  // express-rate-limit asks its `limit` and `keyGenerator` about a request with the request and response alone: the
  // principal being counted is looked up here, set for the length of its count.
  const counting = new WeakMap<Response, Principal>();
  const principalOf = (res: Response): Principal => {
    const principal = counting.get(res);
    if (principal === undefined) throw new Error('express-rate-limit asked about a request outside its count');
    return principal;
  };
  const stores: PostgresRateLimitStore[] = [];

  let lastLoggedAt = 0;
  let suppressed = 0;
  const storeLogger = {
    error: (error: unknown, message?: string) => {
      const now = Date.now();
      if (now - lastLoggedAt < LOG_EVERY_MS) {
        suppressed++;
        return;
      }
      lastLoggedAt = now;
      logger.warn({ err: error, suppressed }, `${message ?? 'rate limiting failed'} (failing open: requests pass uncounted)`);
      suppressed = 0;
    },
    warn: (error: unknown, message?: string) => logger.warn({ err: error }, message ?? 'express-rate-limit warning'),
  };

  const build = (product: LimitedProduct): Admission => {
    const property = `rateLimit:${product}`;
    const store = new PostgresRateLimitStore(pool, `${product}:`, windowMs, breaker, storeTimeoutMs, syncMs);
    stores.push(store);
    const limitOf = (res: Response) => principalOf(res).limitOverrides[product] ?? limits[product];
    const limiter = rateLimit({
      windowMs,
      limit: (_req, res) => limitOf(res),
      keyGenerator: (_req, res) => {
        const counter = accountCounter(principalOf(res));
        store.limitFor(counter, limitOf(res));
        return counter;
      },
      store,
      requestPropertyName: property,
      // Headers are set below, in the spec's form.
      legacyHeaders: false,
      standardHeaders: false,
      passOnStoreError: true,
      handler: (_req, _res, next) => next(LIMITED),
      logger: storeLogger,
    });
    const count = (principal: Principal, req: Request, res: Response): Promise<void> =>
      new Promise((resolve, reject) => {
        counting.set(res, principal);
        void limiter(req, res, (error?: unknown) => {
          counting.delete(res);
          const info = (req as unknown as Record<string, RateLimitInfo | undefined>)[property];
          if (!info) {
            // Not counted: the store failed (fail open) or the limiter threw.
            if (error === undefined) resolve();
            else reject(asError(error));
            return;
          }
          const headers = headersFor(info);
          if (!res.headersSent) res.set(headers);
          if (error === undefined) resolve();
          else reject(error === LIMITED ? limitExceeded(product, info, headers) : asError(error));
        });
      });
    const spending = SPENDING[product];
    if (spending === undefined)
      return async (principal, req, res) => {
        await count(principal, req, res);
        return undefined;
      };
    const reserve: BudgetAdmission = budget.forProduct(spending);
    return async (principal, req, res) => {
      const spent = await reserve(principal, req, res);
      await count(principal, req, res);
      return spent;
    };
  };

  const sweep = async () => {
    const counters = await pool.query('DELETE FROM rate_limit_counters WHERE reset_at <= now()');
    const slots = await pool.query('DELETE FROM chat_stream_slots WHERE lease_expires_at <= now()');
    return { counters: counters.rowCount ?? 0, chatSlots: slots.rowCount ?? 0 };
  };
  let sweeping: Promise<unknown> = Promise.resolve();
  const sweepTimer = setInterval(() => {
    sweeping = sweep().catch((error: unknown) => logger.warn({ err: error }, 'could not delete expired rate-limit rows'));
  }, sweepIntervalMs);
  sweepTimer.unref();

  return {
    limits,
    admit(product, principal, req, res) {
      let admission = admissions.get(product);
      if (!admission) {
        admission = build(product);
        admissions.set(product, admission);
      }
      return admission(principal, req, res);
    },
    acquireChatSlot: (principal) => chat.acquire(principal),
    sweep,
    async sync() {
      await Promise.all(stores.map((store) => store.sync()));
    },
    async close() {
      clearInterval(sweepTimer);
      await sweeping;
      // Hits counted locally go to the shared counters before the pool closes.
      await Promise.all(
        stores.map((store) =>
          store.close().catch((error: unknown) => logger.warn({ err: error }, 'could not send the last rate-limit counts')),
        ),
      );
      await chat.close();
      await budget.close();
    },
  };
}
