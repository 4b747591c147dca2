import { aiConfigShape } from '@fin/ai';
import { int, logConfigShape, port, secret, url } from '@fin/config';
import { customerToolsConfigShape } from '@fin/customer-tools';
import { edgarConfigShape } from '@fin/edgar';
import { kafkaConfigShape } from '@fin/events';
import { metricsConfigShape } from '@fin/metrics';
import { z } from 'zod';
import { databasePoolConfigShape } from '@fin/db';
import { DEFAULT_HOT_RESULTS_MAX_BYTES, DEFAULT_TENANT_CAP, DEFAULT_WORKER_CONCURRENCY } from '@fin/job-kit';

/** The news service's environment (API role, worker role or both). See docs/configuration.md. */
export const newsConfigShape = {
  ...aiConfigShape,
  ...customerToolsConfigShape,
  /**
   * SEC EDGAR, read by the worker's runs (the sec_filings tool: companies' 8-K items): EDGAR_USER_AGENT, EDGAR_OFFLINE,
   * … (docs/configuration.md). Online (as the AI, unless EDGAR_OFFLINE says otherwise) EDGAR_USER_AGENT is required.
   */
  ...edgarConfigShape,
  ...kafkaConfigShape('news'),
  PORT: port().default(8081),
  HOST: z.string().default('127.0.0.1'),
  ...metricsConfigShape(9081),
  /** api: answers POST /api/products/news; worker: runs news jobs; all: both in one process. */
  NEWS_ROLE: z.enum(['api', 'worker', 'all']).default('all'),
  DATABASE_URL: url(['postgres', 'postgresql']),
  ...databasePoolConfigShape,
  INTERNAL_SIGNING_SECRET: secret(z.string().min(32, 'must be at least 32 characters (e.g. `openssl rand -hex 32`)')),
  ...logConfigShape(),
  /**
   * A news job whose model work runs longer fails (the time waiting for the model budget does not count). Five items
   * take a few seconds; the longest answer a request may ask for (20 items: 512 + 448 × 20 output tokens, capped at
   * AI_MAX_OUTPUT_TOKENS, 8,192) takes ~70 s at Haiku's ~120 tokens a second, with the search round before it:
   * 90 s, so that no request the API accepts is bound to fail (the capacity benchmark's n = 17–20 jobs did at 30 s).
   */
  NEWS_TIME_LIMIT_MS: int(1_000, 600_000).default(90_000),
  /** Jobs one worker process runs at once. A job mostly waits on the model, so a slot costs memory, not CPU. */
  NEWS_WORKER_CONCURRENCY: int(1, 2_000).default(DEFAULT_WORKER_CONCURRENCY),
  /**
   * News jobs one tenant may have running at once across every worker replica (counted from live leases when a job is
   * claimed): one account's backlog cannot take every slot. docs/jobs.md#fair-order-between-tenants.
   */
  NEWS_WORKER_TENANT_CAP: int(1, 100_000).default(DEFAULT_TENANT_CAP),
  /** How often (±25 %) a worker looks for jobs it was not woken for: a wake-up lost, or work queued while it was full. */
  WORKER_POLL_INTERVAL_MS: int(100, 60_000).default(1_500),
  NEWS_MAX_ATTEMPTS: int(1, 10).default(3),
  /** How long a worker's claim on a job lasts without renewal: a worker that dies is replaced after this. */
  NEWS_LEASE_MS: int(1_000, 600_000).default(15_000),
  /**
   * Memory the API role's copies of cache hits may take (result bytes plus a fixed overhead per copy; the least
   * recently used go first): a hit held there is answered without a database round trip while the entry is unexpired
   * and unchanged (docs/jobs.md#cache-hits-from-memory). 0 keeps none.
   */
  HOT_RESULTS_MAX_BYTES: int(0, 4 * 1024 * 1024 * 1024).default(DEFAULT_HOT_RESULTS_MAX_BYTES),
  /**
   * On SIGTERM the worker stops claiming jobs and lets those in flight finish for this long (a news job takes seconds) (their model calls are
   * paid for), then hands back the rest. k8s: terminationGracePeriodSeconds covers it plus a margin.
   */
  WORKER_DRAIN_TIMEOUT_MS: int(0, 3_600_000).default(25_000),
  SHUTDOWN_DRAIN_TIMEOUT_MS: int(0, 600_000).default(20_000),
};

export type NewsConfig = z.output<z.ZodObject<typeof newsConfigShape>>;
