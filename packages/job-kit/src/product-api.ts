// The API role of a cached product (news, stock-report): validate → cache key → submit → 200 from the cache or
// 202 with the job to poll, with its cache and idempotency headers. Submission itself (the cache, coalescing,
// idempotency) is job-store's submitJob.
import { jobUrls, type API_ROUTES, type AsyncJobResponse } from '@fin/contracts';
import type { Pool } from '@fin/db';
import type { JobType } from '@fin/events';
import {
  createHandlerApp,
  createLifecycle,
  tokenBudgetRefusal,
  type HandlerTable,
  type Lifecycle,
  type RouteContext,
  type RouteInput,
  type ServiceApp,
} from '@fin/http';
import type { Logger } from '@fin/log';
import type { AddressPolicy } from '@fin/customer-tools';
import { performance } from 'node:perf_hooks';
import { cacheKeysFor, recordCachedAnswer, submitJob, type CacheKeyParts, type CacheKeys, type SubmitOutcome } from '@fin/job-store';
import { checkCallbackUrl, leaveCallback } from './callbacks';
import { noHotResults, type HotResults } from './hot-results';
/** The contract entries of the cached products: each names its path, request schema and headers. */
type ProductRoute = typeof API_ROUTES.createNews | typeof API_ROUTES.createStockReport;
/** What a job runs: the request without its callback_url (which belongs to the request, not the job). */
type RequestOf<R extends ProductRoute> = Omit<RouteInput<R>['body'], 'callback_url'>;

/** `Cache-Control: no-cache` (or no-store) asks for a fresh run instead of a cached result. */
function bypassesCache(cacheControl: string | undefined): boolean {
  return /\bno-(cache|store)\b/i.test(cacheControl ?? '');
}

/** Cache-Status (RFC 9211) and Age of a hit on an entry produced at `producedAt` that expires at `expiresAt`. */
function describeHit(res: RouteContext['res'], producedAt: Date, expiresAt: Date): void {
  const now = Date.now();
  const ttl = Math.max(0, Math.floor((expiresAt.getTime() - now) / 1000));
  res.setHeader('Cache-Status', `fin-api; hit; ttl=${ttl}`);
  res.setHeader('Age', String(Math.max(0, Math.floor((now - producedAt.getTime()) / 1000))));
}

/** Sets Cache-Status and, for a hit, Age. A replayed Idempotency-Key says nothing about the cache. */
function describeCache(res: RouteContext['res'], outcome: SubmitOutcome, bypass: boolean): void {
  if (outcome.kind === 'cached') describeHit(res, outcome.producedAt, outcome.expiresAt);
  else if (outcome.kind !== 'replayed') {
    res.setHeader('Cache-Status', `fin-api; fwd=${bypass ? 'bypass' : 'miss'}${outcome.kind === 'joined' ? '; collapsed' : ''}`);
  }
}

/** What a product's API role is built from; main.ts (or a test) supplies it. */
export interface ProductAppDeps {
  pool: Pool;
  logger: Logger;
  signingSecret: string;
  lifecycle?: Lifecycle;
  /** Attempts per job: a dead worker or a temporary model error uses one. */
  maxAttempts?: number;
  /** Which callback_url hosts are refused at once (tests allow loopback, as CUSTOMER_TOOLS_ALLOW_LOOPBACK does). */
  callbackPolicy?: AddressPolicy;
  /** Hits kept in memory and answered from there (hot-results.ts); without, every request asks the database. */
  hotResults?: HotResults;
}

/** A product whose results are cached for 7 days and computed by a job on a miss. */
export interface CachedProduct<R extends ProductRoute> {
  jobType: JobType;
  /**
   * The product's contract entry: its path, its request schema (a request that fails it is a 400 naming each bad
   * field), its headers, and its completed response (job fields + result, served from the cache with 200), which
   * is checked before a result is answered.
   */
  route: R;
  /** The prompt that writes the result (`name@version`): part of the cache key, so a new prompt never serves old results. */
  promptVersion: string;
  /**
   * Everything else that changes the result (e.g. sorted symbols, language), and the caller's custom data: a
   * request with data gets a cache entry of its tenant's own, never served to another tenant (as does a run that
   * offered the tenant's customer tools: submitJob adds those).
   */
  cacheKey(request: RequestOf<R>): Pick<CacheKeyParts, 'parameters' | 'data'>;
}

/**
 * The response body of a cached result after its `job_id` (`"status":"completed","from_cache":true,…}`), as UTF-8
 * bytes: the stored result parsed and validated against the contract's response once per source job, then kept with
 * the copies in memory (a completed job's result never changes), so that a hit neither parses, validates, serialises
 * nor encodes it again, only the caller's own job id is written in front.
 */
function responseRest(response: { parse(value: unknown): unknown }, sourceJobId: string, resultJson: string): Buffer {
  const stored = JSON.parse(resultJson) as Record<string, unknown>;
  const body = response.parse({ job_id: sourceJobId, status: 'completed', from_cache: true, ...stored }) as Record<string, unknown>;
  const { job_id: _sourceJob, ...fields } = body;
  // Never empty (status and from_cache are always there), so the text after `{` is a list of fields and `}`.
  return Buffer.from(JSON.stringify(fields).slice(1));
}

/** The whole response body of a hit answered under `jobId`. */
function hitBody(jobId: string, rest: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`{"job_id":${JSON.stringify(jobId)},`), rest]);
}

function productCacheKeys<R extends ProductRoute>(product: CachedProduct<R>, tenantId: string, request: RequestOf<R>): CacheKeys {
  const { parameters, data } = product.cacheKey(request);
  return cacheKeysFor({ jobType: product.jobType, parameters: { ...parameters, prompt: product.promptVersion }, tenantId, data });
}

/** What the handlers of a cached product need (no signing secret: they never see a signature). */
export type ProductHandlerDeps = Omit<ProductAppDeps, 'signingSecret' | 'lifecycle'>;

/**
 * The handler of a cached product: validated request → answered from the cache (200, `from_cache: true`,
 * `Cache-Status: hit` and `Age`) or with the job to poll (202, `Location` = the status URL). Identical requests of
 * a tenant in flight share a job; `Idempotency-Key` replays; `Cache-Control: no-cache` forces a fresh run.
 */
export function cachedProductHandlers<R extends ProductRoute>(product: CachedProduct<R>, deps: ProductHandlerDeps): HandlerTable {
  const { pool, maxAttempts = 3, callbackPolicy, hotResults = noHotResults } = deps;
  const { jobType } = product;
  const response = product.route.responses['200'].json;
  const handler = async ({ body, headers, caller }: RouteInput<ProductRoute>, { res }: RouteContext) => {
    const { tenantId } = caller;
    const bypass = bypassesCache(headers['Cache-Control']);
    const idempotencyKey = headers['Idempotency-Key'];
    // The callback belongs to this request, not to the job (which identical requests may share).
    const { callback_url: callbackUrl, ...request } = body;
    const cacheKeys = productCacheKeys(product, tenantId, request as RequestOf<R>);
    // A plain request (no refresh asked for, no Idempotency-Key to record, no callback_url to check) is answered from
    // memory when the tenant's answer to it is held there and still what the database would answer.
    if (!bypass && idempotencyKey === undefined && callbackUrl === undefined) {
      const hot = hotResults.servable(cacheKeys.own);
      if (hot !== undefined) {
        recordCachedAnswer(jobType, tenantId, hot.jobId);
        describeHit(res, hot.producedAt, hot.expiresAt);
        res.type('application/json').send(hitBody(hot.jobId, hot.rest));
        return undefined;
      }
    }
    await checkCallbackUrl(pool, tenantId, callbackUrl, callbackPolicy);
    // Taken before the lookup: the bytes held now are the ones answered if the lookup finds the same source.
    const held = hotResults.held(cacheKeys.own);
    const mark = hotResults.mark();
    const sentAt = performance.now();
    const outcome = await submitJob(pool, {
      tenantId,
      jobType,
      // The parsed request (symbols normalised, defaults filled in) is what the worker runs.
      request: { ...request },
      cacheKeys,
      bypassCache: bypass,
      idempotencyKey,
      maxAttempts,
      ...(held === undefined ? {} : { heldResult: held.sourceJobId }),
      // Past the account's daily token budget a hit, a joined job or a replay is answered (none spends anything);
      // a request that needs a new job gets the gateway's 429.
      ...(caller.spentBudget === undefined ? {} : { newWorkRefusal: tokenBudgetRefusal(caller.spentBudget) }),
    });
    describeCache(res, outcome, bypass);
    if (outcome.kind === 'cached') {
      const { jobId, sourceJobId, producedAt, expiresAt, resultJson } = outcome;
      let rest = held?.sourceJobId === sourceJobId ? held.rest : hotResults.bytesOf(sourceJobId);
      if (rest === undefined) {
        if (resultJson === undefined) throw new Error(`the result of job ${sourceJobId} was neither sent nor held`);
        rest = responseRest(response, sourceJobId, resultJson);
      }
      hotResults.remember(
        { requestKey: cacheKeys.own, tenantId, jobId, sourceJobId, producedAt, expiresAt, rest },
        outcome.ttlMs,
        sentAt,
        mark,
      );
      res.type('application/json').send(hitBody(jobId, rest));
      return undefined;
    }
    await leaveCallback(pool, tenantId, outcome.jobId, callbackUrl);
    const result = outcome.kind === 'replayed' ? outcome.result : undefined;
    if (result) return response.parse({ job_id: outcome.jobId, status: 'completed', from_cache: false, ...result });
    const urls = jobUrls(jobType, outcome.jobId);
    res.status(202).setHeader('Location', urls.status_url);
    const envelope: AsyncJobResponse = { job_id: outcome.jobId, status: 'pending', from_cache: false, ...urls };
    return envelope;
  };
  return { [product.route.id]: handler };
}

/** The API role of a cached product as an HTTP app of its own (tests; a cluster composes it through runService). */
export function createCachedProductApp<R extends ProductRoute>(product: CachedProduct<R>, deps: ProductAppDeps): ServiceApp {
  const { pool, logger, signingSecret, lifecycle = createLifecycle() } = deps;
  return createHandlerApp(
    {
      name: product.jobType,
      handlers: cachedProductHandlers(product, deps),
      readiness: async () => {
        await pool.query('SELECT 1');
      },
      lifecycle,
      start: async () => {},
      closers: [],
    },
    { logger, signingSecret },
  );
}
