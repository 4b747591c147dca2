// The daily token budget of an account: past it, the account's new work (a news, stock-report or analysis
// request, a chat message) is refused with a 429 until the next UTC midnight; jobs and replies already running
// finish, and reading results goes on. What an account used is the sum of its usage_daily rows of the day, which
// every job attempt and chat reply adds to when it ends.
import { DAILY_TOKEN_BUDGET_LIMIT } from '@fin/api-keys';
import type { Pool } from '@fin/db';
import { tooManyRequests } from '@fin/http';
import type { Logger } from '@fin/log';
import type { RequestHandler, Response } from 'express';
import type { Principal } from '../auth/types';

export interface TokenBudgetOptions {
  pool: Pool;
  logger: Logger;
  /** Tokens per account per UTC day when the tenant has no `daily-tokens` override; undefined: no budget. */
  defaultBudget?: number;
  /** How long an account's usage of the day is reused before it is read again. Default 2 s. */
  cacheMs?: number;
}

const LOG_EVERY_MS = 10_000;

/** The next UTC midnight after `now`. */
function nextUtcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}

/**
 * Middleware refusing new work of an account that has used its daily token budget (the tenant's `daily-tokens`
 * override, else `defaultBudget`). With neither, it passes without a query. When the database cannot be read the
 * request passes (as the rate limits do): the budget bounds spending, and an outage of its store must not become
 * one of the API. A re-attach to a chat reply (Last-Event-ID) starts no work and always passes.
 */
export function createTokenBudget({ pool, logger, defaultBudget, cacheMs = 2_000 }: TokenBudgetOptions): RequestHandler {
  const used = new Map<string, { at: number; tokens: Promise<number> }>();
  let lastLoggedAt = 0;
  const usedToday = (tenantId: string): Promise<number> => {
    const now = Date.now();
    const cached = used.get(tenantId);
    if (cached && now - cached.at < cacheMs) return cached.tokens;
    const tokens = pool
      .query<{ tokens: string }>({
        name: 'gateway-tokens-used-today',
        text: `SELECT COALESCE(sum(input_tokens + cache_creation_input_tokens + cache_read_input_tokens + output_tokens), 0)::text AS tokens
                 FROM usage_daily WHERE tenant_id = $1 AND day = (now() AT TIME ZONE 'UTC')::date`,
        values: [tenantId],
      })
      .then(({ rows }) => Number(rows[0]?.tokens ?? 0));
    if (used.size > 10_000) used.clear();
    used.set(tenantId, { at: now, tokens });
    tokens.catch(() => used.delete(tenantId));
    return tokens;
  };

  return (req, res: Response, next) => {
    const principal = res.locals.principal as Principal | undefined;
    const budget = principal?.limitOverrides[DAILY_TOKEN_BUDGET_LIMIT] ?? defaultBudget;
    if (principal === undefined || budget === undefined || req.get('last-event-id') !== undefined) {
      next();
      return;
    }
    usedToday(principal.tenantId).then(
      (tokens) => {
        if (tokens < budget) {
          next();
          return;
        }
        const now = new Date();
        const reset = nextUtcMidnight(now);
        next(
          tooManyRequests(
            `Daily token budget used: this account may use ${budget.toLocaleString('en')} model tokens per UTC day (all of its API keys together) and has used ${tokens.toLocaleString('en')} today. New requests are accepted again at ${reset.toISOString()}; jobs already running finish, and their results stay available.`,
            (reset.getTime() - now.getTime()) / 1000,
            { 'X-Token-Budget-Limit': String(budget), 'X-Token-Budget-Reset': String(Math.floor(reset.getTime() / 1000)) },
          ),
        );
      },
      (error: unknown) => {
        if (Date.now() - lastLoggedAt >= LOG_EVERY_MS) {
          lastLoggedAt = Date.now();
          logger.warn({ err: error }, 'could not read the daily token usage (failing open: requests pass)');
        }
        next();
      },
    );
  };
}
