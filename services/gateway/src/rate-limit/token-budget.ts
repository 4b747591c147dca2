// The daily token budget of an account: past it, the account's new work (a news, stock-report or analysis
// request, a chat message) is refused with a 429 until the next UTC midnight; jobs and replies already running
// finish, reading results goes on, and a request that spends nothing (a cache hit, a job in flight joined, a
// replayed Idempotency-Key) is still answered: the product service decides that (overBudget below). What an account used is the sum of its usage_daily rows of the day, which
// every job attempt and chat reply adds to when it ends; what is running is held by reservations: each admitted
// request reserves its product's estimate (token_reservations, written by token_budget_reserve under the account's
// lock, so any number of gateway replicas admit in turn), which the job it made holds until it ends.
import { randomUUID } from 'node:crypto';
import { DAILY_TOKEN_BUDGET_LIMIT } from '@fin/api-keys';
import type { Pool } from '@fin/db';
import { nextUtcMidnight, tokenBudgetRefusal, type SpentBudget } from '@fin/http';
import type { Logger } from '@fin/log';
import type { Request, Response } from 'express';
import type { Principal } from '../auth/types';

/** The products whose requests start model work, as usage_daily names them. */
export type SpendingProduct = 'news' | 'stock-report' | 'analysis' | 'chat';

/**
 * Tokens reserved per admitted request when the configuration gives no other figure: what one job of the product
 * was billed (all input, cache writes and reads included, and output) in `npm run bench -- ai-cost` on today's
 * default models, rounded up: news 16,764, stock report 25,266, analysis 29,830, a chat turn that searches 11,372
 * (docs/gateway.md#daily-token-budget). The sum does not depend on prompt caching, which changes the price of the
 * input, not its count.
 */
export const DEFAULT_TOKEN_ESTIMATES: Readonly<Record<SpendingProduct, number>> = Object.freeze({
  news: 17_000,
  'stock-report': 26_000,
  analysis: 30_000,
  chat: 12_000,
});

export interface TokenBudgetOptions {
  pool: Pool;
  logger: Logger;
  /** Tokens per account per UTC day when the tenant has no `daily-tokens` override; undefined: no budget. */
  defaultBudget?: number;
  /** Tokens reserved per admitted request, by product (DEFAULT_TOKEN_ESTIMATES for those not given). */
  estimates?: Partial<Record<SpendingProduct, number>>;
  /**
   * How long a reservation no job holds lives (a request being answered, a chat reply): past it, it no longer
   * counts and the reaper deletes it. Default 15 minutes.
   */
  reservationTtlMs?: number;
  /** How long a reservation a job holds lives at most (its end, or the reaper once it ended, deletes it sooner). Default 24 h. */
  jobReservationTtlMs?: number;
  /** How long a chat reply's reservation is kept after its client left (the reply runs on that long). Default 6 s. */
  chatHoldMs?: number;
  /** How long a refusal is repeated without asking the database again. Default 1 s. */
  refusalCacheMs?: number;
}

/**
 * Admits one request of `principal` (429 for a chat turn past the budget); resolves to the account's spent budget
 * when the request goes on past it, to be answered only from what exists (see overBudget), else to undefined.
 */
export type BudgetAdmission = (principal: Principal, req: Request, res: Response) => Promise<SpentBudget | undefined>;

export interface TokenBudget {
  /** The admission of one product's requests. */
  forProduct(product: SpendingProduct): BudgetAdmission;
  /** Releases the reservations kept for chat replies whose clients left, and waits for every statement in flight. */
  close(): Promise<void>;
}

const LOG_EVERY_MS = 10_000;
/** A job's status URL, as the product services answer it in Location (a 202, a streamed analysis, a failed job). */
const JOB_LOCATION = /^\/api\/jobs\/[a-z-]+\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\/status$/;

/**
 * Whether a request of `product` can start model work. Every news, stock-report and analysis request and every
 * POST /api/chat can; GET /api/chat/stream starts a turn only when it carries a message and no Last-Event-ID (with
 * one, the chat service re-attaches to the reply it names and never sends the message; without a message it
 * follows the conversation's latest reply). A Last-Event-ID on any other request is ignored by its service, so
 * it lifts nothing: it once let every product's requests past a spent budget.
 */
function startsModelWork(product: SpendingProduct, req: Request): boolean {
  if (product !== 'chat' || req.method !== 'GET') return true;
  return req.query.message !== undefined && req.get('last-event-id') === undefined;
}

/** The job a response names in its Location header, if any. */
function jobOf(res: Response): string | undefined {
  const location = res.getHeader('location');
  return typeof location === 'string' ? JOB_LOCATION.exec(location)?.[1] : undefined;
}

/** What token_budget_reserve answers: whether the request was admitted, and the account's day so far. */
interface ReserveRow {
  reserved: boolean;
  used: string;
  held: string;
}

function spentBudget(budget: number, used: number, held: number): SpentBudget {
  return { limit: budget, used, held, resetAt: Math.floor(nextUtcMidnight(new Date()).getTime() / 1000) };
}

/**
 * A request past the budget. A chat turn always starts model work: refused here. A news, stock-report or analysis
 * request may be answered by what exists (a cache hit, an identical job in flight, a replayed Idempotency-Key),
 * which spends nothing: it goes on, with the spent budget in the caller's identity, and its service answers it from
 * what exists or refuses it with the same 429 (tokenBudgetRefusal).
 */
function overBudget(product: SpendingProduct, spent: SpentBudget): SpentBudget {
  if (product === 'chat') throw tokenBudgetRefusal(spent);
  return spent;
}

/**
 * The daily token budget's admission per product. For an account under a budget (the tenant's `daily-tokens`
 * override, else `defaultBudget`; with neither, a request passes without a query), one statement
 * (token_budget_reserve) admits the request while what the account used today and what its live reservations hold
 * stay below the budget, and reserves the product's estimate; otherwise the request is over budget (overBudget: a
 * chat turn gets the 429 here, any other request goes on marked, to be answered only from what exists). So requests arriving together at the
 * edge of a budget take it past by at most one estimate (the last admitted), measured by the estimates.
 *
 * When the response ends, the reservation is handed to the job it names (Location: a queued job, a streamed
 * analysis whose client left) while that job runs, and the job's end deletes it; otherwise (a cache hit, a job
 * that already ended, an error, a chat reply) it is deleted, a chat reply's a little later when its client left.
 *
 * When the database cannot be reached the request passes (as the rate limits do): the budget bounds spending, and
 * an outage of its store must not become one of the API. A request that starts no model work (startsModelWork: a
 * re-attach to a chat reply, following a conversation's latest reply) always passes.
 */
export function createTokenBudget({
  pool,
  logger,
  defaultBudget,
  estimates = {},
  reservationTtlMs = 15 * 60_000,
  jobReservationTtlMs = 24 * 3_600_000,
  chatHoldMs = 6_000,
  refusalCacheMs = 1_000,
}: TokenBudgetOptions): TokenBudget {
  const estimateOf = (product: SpendingProduct) => estimates[product] ?? DEFAULT_TOKEN_ESTIMATES[product];
  const refused = new Map<string, { at: number; budget: number; used: number; held: number }>();
  const held = new Map<string, NodeJS.Timeout>();
  const inFlight = new Set<Promise<unknown>>();
  let lastLoggedAt = 0;
  const warn = (error: unknown, message: string) => {
    if (Date.now() - lastLoggedAt < LOG_EVERY_MS) return;
    lastLoggedAt = Date.now();
    logger.warn({ err: error }, message);
  };
  const track = (work: Promise<unknown>) => {
    const settled = work.catch((error: unknown) =>
      warn(error, 'could not settle a daily-budget reservation (it expires, or the reaper settles it)'),
    );
    inFlight.add(settled);
    void settled.finally(() => inFlight.delete(settled));
  };

  const release = (id: string): Promise<unknown> =>
    pool.query({ name: 'gateway-token-budget-release', text: 'DELETE FROM token_reservations WHERE id = $1', values: [id] });

  /** The reservation goes to the job while it runs (one reservation per job: a joined request's goes); else it goes. */
  const attach = async (id: string, jobId: string): Promise<void> => {
    try {
      await pool.query({
        name: 'gateway-token-budget-attach',
        text: `WITH attached AS (
                 UPDATE token_reservations r SET job_id = $2, expires_at = now() + $3 * interval '1 millisecond'
                  WHERE r.id = $1
                    AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = $2 AND j.tenant_id = r.tenant_id AND j.status IN ('pending', 'running'))
                    AND NOT EXISTS (SELECT 1 FROM token_reservations o WHERE o.job_id = $2)
                  RETURNING r.id)
               DELETE FROM token_reservations WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM attached)`,
        values: [id, jobId, jobReservationTtlMs],
      });
    } catch (error) {
      // Two requests joined onto one job attaching at once: the unique index keeps the first.
      if ((error as { code?: unknown }).code !== '23505') throw error;
      await release(id);
    }
  };

  const settle = (id: string, product: SpendingProduct, res: Response) => {
    const jobId = jobOf(res);
    if (jobId !== undefined) track(attach(id, jobId));
    else if (product === 'chat' && !res.writableFinished) {
      // The client left: the reply runs on for the chat service's detach grace.
      held.set(
        id,
        setTimeout(() => {
          held.delete(id);
          track(release(id));
        }, chatHoldMs).unref(),
      );
    } else track(release(id));
  };

  const forProduct = (product: SpendingProduct): BudgetAdmission => {
    const estimate = estimateOf(product);
    return async (principal, req, res) => {
      const budget = principal.limitOverrides[DAILY_TOKEN_BUDGET_LIMIT] ?? defaultBudget;
      if (budget === undefined || !startsModelWork(product, req)) return undefined;
      const { tenantId } = principal;
      const cached = refused.get(tenantId);
      if (cached !== undefined && Date.now() - cached.at < refusalCacheMs && cached.budget === budget) {
        return overBudget(product, spentBudget(budget, cached.used, cached.held));
      }
      const id = randomUUID();
      let row: ReserveRow | undefined;
      try {
        const { rows } = await pool.query<ReserveRow>({
          name: 'gateway-token-budget-reserve',
          text: 'SELECT reserved, used::text, held::text FROM token_budget_reserve($1, $2, $3, $4, $5, $6)',
          values: [tenantId, budget, estimate, id, product, reservationTtlMs],
        });
        row = rows[0];
      } catch (error) {
        warn(error, 'could not reserve from the daily token budget (failing open: requests pass)');
        return undefined;
      }
      if (row !== undefined && !row.reserved) {
        const used = Number(row.used);
        const holding = Number(row.held);
        if (refused.size > 10_000) refused.clear();
        refused.set(tenantId, { at: Date.now(), budget, used, held: holding });
        return overBudget(product, spentBudget(budget, used, holding));
      }
      refused.delete(tenantId);
      res.once('close', () => settle(id, product, res));
      return undefined;
    };
  };

  return {
    forProduct,
    async close() {
      for (const [id, timer] of held) {
        clearTimeout(timer);
        track(release(id));
      }
      held.clear();
      while (inFlight.size > 0) await Promise.all([...inFlight]);
    },
  };
}
