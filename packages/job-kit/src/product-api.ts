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
import { cacheKeysFor, submitJob, type CachedOutcome, type CacheKeyParts, type CacheKeys, type SubmitOutcome } from '@fin/job-store';
import { checkCallbackUrl, leaveCallback } from './callbacks';
/** The contract entries of the cached products: each names its path, request schema and headers. */
type ProductRoute = typeof API_ROUTES.createNews | typeof API_ROUTES.createStockReport;
/** What a job runs: the request without its callback_url (which belongs to the request, not the job). */
type RequestOf<R extends ProductRoute> = Omit<RouteInput<R>['body'], 'callback_url'>;

/** `Cache-Control: no-cache` (or no-store) asks for a fresh run instead of a cached result. */
function bypassesCache(cacheControl: string | undefined): boolean {
  return /\bno-(cache|store)\b/i.test(cacheControl ?? '');
}

/** Sets Cache-Status (RFC 9211) and, for a hit, Age. A replayed Idempotency-Key says nothing about the cache. */
function describeCache(res: RouteContext['res'], outcome: SubmitOutcome, bypass: boolean): void {
  if (outcome.kind === 'cached') {
    const now = Date.now();
    const ttl = Math.max(0, Math.floor((outcome.expiresAt.getTime() - now) / 1000));
    res.setHeader('Cache-Status', `fin-api; hit; ttl=${ttl}`);
    res.setHeader('Age', String(Math.max(0, Math.floor((now - outcome.producedAt.getTime()) / 1000))));
  } else if (outcome.kind !== 'replayed') {
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

/** Validated cached results kept per source job, and the source last served per request (bounded; the oldest go first). */
const MAX_VALIDATED_RESULTS = 256;

/** The response body of a cached result after its `job_id`, as bytes: `"status":"completed","from_cache":true,…}`. */
interface HeldResult {
  sourceJobId: string;
  rest: Buffer;
}

/** Inserts into a bounded map, dropping the oldest entry beyond MAX_VALIDATED_RESULTS. */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  if (map.size >= MAX_VALIDATED_RESULTS) map.delete(map.keys().next().value as string);
  map.set(key, value);
}

/**
 * The contract's response for a cached result. A result is validated and serialised the first time it is served
 * and kept by its source job (a completed job's result never changes), as UTF-8 bytes: a hit neither parses,
 * validates, serialises nor encodes it again, only the caller's own job id is written in front. And the lookup of
 * a request whose source is held asks the database not to send the result again (submitJob's `heldResult`).
 */
function cachedResponder(response: { parse(value: unknown): unknown }) {
  const bySource = new Map<string, HeldResult>();
  /** A request's own cache key → the result last served for it. */
  const byRequest = new Map<string, HeldResult>();
  return {
    /** The result last served for this request, if still held. */
    held: (requestKey: string): HeldResult | undefined => byRequest.get(requestKey),
    body(requestKey: string, outcome: CachedOutcome, held: HeldResult | undefined): Buffer {
      let result = held?.sourceJobId === outcome.sourceJobId ? held : bySource.get(outcome.sourceJobId);
      if (result === undefined) {
        if (outcome.resultJson === undefined) throw new Error(`the result of job ${outcome.sourceJobId} was neither sent nor held`);
        const stored = JSON.parse(outcome.resultJson) as Record<string, unknown>;
        const body = response.parse({ job_id: outcome.sourceJobId, status: 'completed', from_cache: true, ...stored }) as Record<
          string,
          unknown
        >;
        const { job_id: _sourceJob, ...fields } = body;
        // Never empty (status and from_cache are always there), so the text after `{` is a list of fields and `}`.
        result = { sourceJobId: outcome.sourceJobId, rest: Buffer.from(JSON.stringify(fields).slice(1)) };
        remember(bySource, outcome.sourceJobId, result);
      }
      if (byRequest.get(requestKey) !== result) remember(byRequest, requestKey, result);
      return Buffer.concat([Buffer.from(`{"job_id":${JSON.stringify(outcome.jobId)},`), result.rest]);
    },
  };
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
  const { pool, maxAttempts = 3, callbackPolicy } = deps;
  const { jobType } = product;
  const response = product.route.responses['200'].json;
  const cached = cachedResponder(response);
  const handler = async ({ body, headers, caller }: RouteInput<ProductRoute>, { res }: RouteContext) => {
    const { tenantId } = caller;
    const bypass = bypassesCache(headers['Cache-Control']);
    // The callback belongs to this request, not to the job (which identical requests may share).
    const { callback_url: callbackUrl, ...request } = body;
    await checkCallbackUrl(pool, tenantId, callbackUrl, callbackPolicy);
    const cacheKeys = productCacheKeys(product, tenantId, request as RequestOf<R>);
    // Taken before the lookup: the body held now is the one answered if the lookup finds the same source.
    const held = cached.held(cacheKeys.own);
    const outcome = await submitJob(pool, {
      tenantId,
      jobType,
      // The parsed request (symbols normalised, defaults filled in) is what the worker runs.
      request: { ...request },
      cacheKeys,
      bypassCache: bypass,
      idempotencyKey: headers['Idempotency-Key'],
      maxAttempts,
      ...(held === undefined ? {} : { heldResult: held.sourceJobId }),
      // Past the account's daily token budget a hit, a joined job or a replay is answered (none spends anything);
      // a request that needs a new job gets the gateway's 429.
      ...(caller.spentBudget === undefined ? {} : { newWorkRefusal: tokenBudgetRefusal(caller.spentBudget) }),
    });
    describeCache(res, outcome, bypass);
    if (outcome.kind === 'cached') {
      res.type('application/json').send(cached.body(cacheKeys.own, outcome, held));
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
