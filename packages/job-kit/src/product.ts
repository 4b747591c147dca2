// What the AI product services (news, stock-report) share on top of submitJob and createJobWorker: the cached
// product endpoint (validate → cache key → submit → 200 from the cache or 202 with the job to poll), its cache and
// idempotency headers, how an engine failure reads on the status endpoint, and starting the roles of a process.
// job-kit does not depend on the AI engine: the engine comes in through the service's factories, and its
// errors are recognised by their shape (see classifyFailure).
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jobUrls, type AsyncJobResponse } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { connectKafkaBus, createOutboxRelay, type EventBus, type JobType, type KafkaConfig } from '@fin/events';
import {
  badRequest,
  callerOf,
  closeStarted,
  createLifecycle,
  createServiceApp,
  createShutdown,
  listen,
  onShutdownSignals,
  route,
  identityKey,
  verifyIdentity,
  type Closer,
  type Lifecycle,
  type RouteContext,
  type RouteInput,
} from '@fin/http';
import type { Logger } from '@fin/log';
import { startMetricsServer } from '@fin/metrics';
import { cacheKeysFor, submitJob, type CachedOutcome, type CacheKeyParts, type CacheKeys, type SubmitOutcome } from '@fin/job-store';
import { createJobWorker, type FailureVerdict, type JobWorker, type RunOutcome } from './worker';

// ------------------------------------------------------------------------------------------------ API role

type ServiceApp = ReturnType<typeof createServiceApp>;
/** A request schema as route() takes it (a zod schema), and what it parses to. */
type RequestSchema = NonNullable<Parameters<typeof route>[0]['body']>;
type RequestOf<S extends RequestSchema> = RouteInput<undefined, undefined, S>['body'];

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** `Idempotency-Key`: 1–255 visible ASCII characters, optional. */
export function idempotencyKeyOf(req: RouteContext['req']): string | undefined {
  const key = req.header('idempotency-key');
  if (key === undefined) return undefined;
  if (!IDEMPOTENCY_KEY.test(key)) throw badRequest('Idempotency-Key: must be 1 to 255 visible ASCII characters.');
  return key;
}

/** `Cache-Control: no-cache` (or no-store) asks for a fresh run instead of a cached result. */
export function bypassesCache(req: RouteContext['req']): boolean {
  return /\bno-(cache|store)\b/i.test(req.header('cache-control') ?? '');
}

/** Sets Cache-Status (RFC 9211) and, for a hit, Age. A replayed Idempotency-Key says nothing about the cache. */
export function describeCache(res: RouteContext['res'], outcome: SubmitOutcome, bypass: boolean): void {
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
}

/** A product whose results are cached for 7 days and computed by a job on a miss. */
export interface CachedProduct<S extends RequestSchema> {
  jobType: JobType;
  path: string;
  /** The contract's request schema: a request that fails it is a 400 naming each bad field. */
  request: S;
  /** The contract's completed response (job fields + result), checked before a cached result is answered. */
  response: { parse(value: unknown): unknown };
  /** The prompt that writes the result (`name@version`): part of the cache key, so a new prompt never serves old results. */
  promptVersion: string;
  /**
   * Everything else that changes the result (e.g. sorted symbols, language), and the caller's custom data: a
   * request with data gets a cache entry of its tenant's own, never served to another tenant (as does a run that
   * offered the tenant's customer tools: submitJob adds those).
   */
  cacheKey(request: RequestOf<S>): Pick<CacheKeyParts, 'parameters' | 'data'>;
}

/** Validated cached results kept per source job (bounded; the oldest go first). */
const MAX_VALIDATED_RESULTS = 256;

/**
 * The contract's response for a cached result, as JSON text. A result is validated and serialised the first time
 * it is served and kept by its source job (a completed job's result never changes), so a hit neither parses the
 * cached result (the database sends it as text) nor validates or serialises it again: only the caller's own
 * job id is written in front of the stored body.
 */
function cachedResponder(product: { response: { parse(value: unknown): unknown } }) {
  /** Source job → the response body after its job_id: `"status":"completed","from_cache":true,…}`. */
  const serialised = new Map<string, string>();
  return (outcome: CachedOutcome): string => {
    let rest = serialised.get(outcome.sourceJobId);
    if (rest === undefined) {
      const result = JSON.parse(outcome.resultJson) as Record<string, unknown>;
      const body = product.response.parse({ job_id: outcome.sourceJobId, status: 'completed', from_cache: true, ...result }) as Record<string, unknown>;
      const { job_id: _sourceJob, ...fields } = body;
      // Never empty (status and from_cache are always there), so the text after `{` is a list of fields and `}`.
      rest = JSON.stringify(fields).slice(1);
      if (serialised.size >= MAX_VALIDATED_RESULTS) serialised.delete(serialised.keys().next().value as string);
      serialised.set(outcome.sourceJobId, rest);
    }
    return `{"job_id":${JSON.stringify(outcome.jobId)},${rest}`;
  };
}

function productCacheKeys<S extends RequestSchema>(product: CachedProduct<S>, tenantId: string, request: RequestOf<S>): CacheKeys {
  const { parameters, data } = product.cacheKey(request);
  return cacheKeysFor({ jobType: product.jobType, parameters: { ...parameters, prompt: product.promptVersion }, tenantId, data });
}

/**
 * The API role of a cached product: `POST <path>` validates the request, then answers from the cache (200,
 * `from_cache: true`, `Cache-Status: hit` and `Age`) or with the job to poll (202, `Location` = the status URL).
 * Identical requests of a tenant in flight share a job; `Idempotency-Key` replays; `Cache-Control: no-cache`
 * forces a fresh run. Tenant identity comes from the gateway's signed headers.
 */
export function createCachedProductApp<S extends RequestSchema>(product: CachedProduct<S>, deps: ProductAppDeps): ServiceApp {
  const { pool, logger, signingSecret, lifecycle, maxAttempts = 3 } = deps;
  const { jobType } = product;
  const cachedResponse = cachedResponder(product);
  return createServiceApp({
    name: jobType,
    logger,
    lifecycle,
    readiness: async () => {
      await pool.query('SELECT 1');
    },
    routes: (app) => {
      app.post(
        product.path,
        verifyIdentity(identityKey(signingSecret, jobType), { logger }),
        route({ body: product.request }, async ({ body }, { req, res }) => {
          const { tenantId } = callerOf(res);
          const bypass = bypassesCache(req);
          const outcome = await submitJob(pool, {
            tenantId,
            jobType,
            // The parsed request (symbols normalised, defaults filled in) is what the worker runs.
            request: { ...(body as Record<string, unknown>) },
            cacheKeys: productCacheKeys(product, tenantId, body),
            bypassCache: bypass,
            idempotencyKey: idempotencyKeyOf(req),
            maxAttempts,
          });
          describeCache(res, outcome, bypass);
          if (outcome.kind === 'cached') {
            res.type('application/json').send(cachedResponse(outcome));
            return undefined;
          }
          const result = outcome.kind === 'replayed' ? outcome.result : undefined;
          if (result) return product.response.parse({ job_id: outcome.jobId, status: 'completed', from_cache: false, ...result });
          const urls = jobUrls(jobType, outcome.jobId);
          res.status(202).setHeader('Location', urls.status_url);
          const envelope: AsyncJobResponse = { job_id: outcome.jobId, status: 'pending', from_cache: false, ...urls };
          return envelope;
        }),
      );
    },
  });
}

// --------------------------------------------------------------------------------------------- worker role

const TEMPORARY: FailureVerdict = {
  retry: true,
  type: 'service_unavailable',
  detail: 'The AI model was temporarily unavailable, so the job could not complete. Submit it again in a moment.',
};

/** The verdict for each kind of AI engine failure (`AiErrorKind` of @fin/ai); other kinds get ENGINE_DEFAULT. */
const ENGINE_FAILURES: Readonly<Record<string, FailureVerdict>> = {
  rate_limited: TEMPORARY,
  overloaded: TEMPORARY,
  upstream: TEMPORARY,
  timeout: TEMPORARY,
  connection: TEMPORARY,
  invalid_output: { retry: true, type: 'internal_error', detail: 'The AI model did not produce a valid result.' },
  limit_exceeded: { retry: false, type: 'internal_error', detail: 'The research exceeded its processing limits.' },
  refused: { retry: false, type: 'validation_error', detail: 'The AI model declined this request.' },
};
const ENGINE_DEFAULT: FailureVerdict = { retry: false, type: 'internal_error', detail: 'The AI service could not process the job.' };

/**
 * What a client reads on the status endpoint when a run fails: the reason in plain words, no internals.
 * The engine's errors are `AiError`s (name `AiError`, a `kind`); anything else is our own fault and is retried.
 */
export function classifyFailure(error: unknown): FailureVerdict {
  if (error instanceof Error && error.name === 'AiError') {
    const { kind } = error as Error & { kind?: unknown };
    return (typeof kind === 'string' && Object.hasOwn(ENGINE_FAILURES, kind) ? ENGINE_FAILURES[kind] : undefined) ?? ENGINE_DEFAULT;
  }
  return { retry: true, type: 'internal_error', detail: 'An internal error stopped the job.' };
}

/** What a product's worker role is built from. */
export interface ProductWorkerDeps<Engine> {
  pool: Pool;
  bus: EventBus;
  engine: Engine;
  logger: Logger;
  /** A run that takes longer fails (`gateway_timeout`). */
  timeLimitMs: number;
  concurrency?: number;
  leaseMs?: number;
}

/** How the engine is told about a run: the AI engine's own run context (abort signal, progress sentences). */
export interface ProductRunContext {
  signal: AbortSignal;
  onProgress(percent: number, currentlyWorkingOn: string): void;
  /** The job's tenant and id: the engine offers that tenant's customer tools and audits their calls under the job. */
  caller: { tenantId: string; jobId: string };
}

export interface ProductWorkerOptions extends Omit<ProductWorkerDeps<unknown>, 'engine'> {
  jobType: JobType;
  /** Parses the stored request with the product's contract and runs it on the engine. */
  run(request: Record<string, unknown>, ctx: ProductRunContext): Promise<RunOutcome>;
}

/** A product's worker role: each job of its type runs on the engine; failures are classified by classifyFailure. */
export function createProductWorker({ run, ...options }: ProductWorkerOptions): JobWorker {
  return createJobWorker({
    ...options,
    classify: classifyFailure,
    run: (job, ctx) => run(job.request, { signal: ctx.signal, onProgress: ctx.progress, caller: { tenantId: job.tenantId, jobId: job.id } }),
  });
}

// ------------------------------------------------------------------------------------------ the process

export type ProductRole = 'api' | 'worker' | 'all';

type SettingName<P extends string> = `${P}_TIME_LIMIT_MS` | `${P}_WORKER_CONCURRENCY` | `${P}_MAX_ATTEMPTS` | `${P}_LEASE_MS`;

/**
 * The configuration a product service process needs. Its own variables carry the service's prefix (`NEWS_`,
 * `STOCK_REPORT_`): `<P>_ROLE`, `<P>_TIME_LIMIT_MS`, `<P>_WORKER_CONCURRENCY`, `<P>_MAX_ATTEMPTS`, `<P>_LEASE_MS`.
 */
export type ProductServiceConfig<P extends string> = KafkaConfig & {
  PORT: number;
  HOST: string;
  DATABASE_URL: string;
  INTERNAL_SIGNING_SECRET: string;
} & { [K in `${P}_ROLE`]: ProductRole } & { [K in SettingName<P>]: number };

export interface ProductService {
  lifecycle: Lifecycle;
  /** The HTTP server (API role). */
  server?: Server;
  /** In shutdown order, after the HTTP server has drained. */
  closers: Closer[];
}

interface Closable {
  close(): Promise<void>;
}

/** Resources a single-process setup shares between services; each is created from config when absent. */
export interface SharedResources<Engine> {
  pool?: Pool;
  bus?: EventBus;
  engine?: Engine;
}

export interface ProductServiceOptions<P extends string, Engine extends Closable> extends SharedResources<Engine> {
  jobType: JobType;
  /** The prefix of the service's own variables, e.g. `STOCK_REPORT`. */
  envPrefix: P;
  config: ProductServiceConfig<P>;
  logger: Logger;
  /** The AI engine, created only for the worker role (and only when none is shared), on the process's pool. */
  createEngine(pool: Pool): Promise<Engine>;
  createApp(deps: ProductAppDeps): ServiceApp;
  createWorker(deps: ProductWorkerDeps<Engine>): JobWorker;
}

/**
 * Starts the roles this process runs (`<P>_ROLE`): the API, the worker, or both. Every process also runs a
 * standby-capable outbox relay, so job requests and events are published while any process of the product is up.
 */
export async function startProductService<P extends string, Engine extends Closable>(options: ProductServiceOptions<P, Engine>): Promise<ProductService> {
  const { jobType, envPrefix, config, logger } = options;
  const role = config[`${envPrefix}_ROLE` as const];
  const settings: { [K in SettingName<P>]: number } = config;
  const setting = (name: SettingName<P>): number => settings[name];
  const pool = options.pool ?? createPool({ connectionString: config.DATABASE_URL, applicationName: `${jobType}-${role}`, max: 10 });
  const bus = options.bus ?? (await connectKafkaBus(config, logger));
  const lifecycle = createLifecycle();
  const engine = role === 'api' ? undefined : (options.engine ?? (await options.createEngine(pool)));
  const relay = createOutboxRelay({ pool, bus, logger });
  relay.start();
  // Closed after the HTTP server and the worker have stopped.
  const last: Closer[] = [
    ...(engine && !options.engine ? [{ name: 'AI engine', close: () => engine.close() }] : []),
    { name: 'outbox relay', close: () => relay.stop() },
    ...(options.bus ? [] : [{ name: 'event bus', close: () => bus.close() }]),
    ...(options.pool ? [] : [{ name: 'database pool', close: () => pool.end() }]),
  ];
  const closers: Closer[] = [];

  let server: Server | undefined;
  try {
    if (engine) {
      const worker = options.createWorker({
        pool,
        bus,
        engine,
        logger,
        timeLimitMs: setting(`${envPrefix}_TIME_LIMIT_MS`),
        concurrency: setting(`${envPrefix}_WORKER_CONCURRENCY`),
        leaseMs: setting(`${envPrefix}_LEASE_MS`),
      });
      await worker.start();
      closers.push({ name: `${jobType} worker`, close: () => worker.stop() });
    }
    if (role !== 'worker') {
      const app = options.createApp({ pool, logger, signingSecret: config.INTERNAL_SIGNING_SECRET, lifecycle, maxAttempts: setting(`${envPrefix}_MAX_ATTEMPTS`) });
      server = await listen(app, config.PORT, config.HOST);
      const { port } = server.address() as AddressInfo;
      logger.info({ url: `http://${config.HOST}:${port}`, role }, `${jobType} service listening`);
    }
  } catch (error) {
    // A failed start (the port in use, say) stops what already runs, in shutdown order, and reports the cause.
    await closeStarted([...closers, ...last]);
    throw error;
  }
  closers.push(...last);
  return { lifecycle, server, closers };
}

/**
 * A product service's main: starts it, then on SIGTERM/SIGINT shuts down in the fixed order (readiness off, HTTP
 * drains, worker and relay stop, bus and pool close); a second signal exits at once. A failed start exits 1.
 */
export function runProductProcess(
  name: string,
  start: () => Promise<{ logger: Logger; service: ProductService; drainTimeoutMs: number; metrics: { port: number; host: string } }>,
): void {
  start()
    .then(async ({ logger, service, drainTimeoutMs, metrics: where }) => {
      const metrics = await startMetricsServer({ ...where, logger });
      onShutdownSignals(
        createShutdown({
          logger,
          lifecycle: service.lifecycle,
          servers: service.server ? [service.server] : [],
          drainTimeoutMs,
          closers: [...service.closers, { name: 'metrics listener', close: () => metrics.close() }],
          exit: (code) => process.exit(code),
        }),
      );
    })
    .catch((error: unknown) => {
      process.stderr.write(`${name} service failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    });
}
