import { aiConfigShape } from '@fin/ai';
import { int, logConfigShape, port, secret, url } from '@fin/config';
import { customerToolsConfigShape } from '@fin/customer-tools';
import { edgarConfigShape } from '@fin/edgar';
import { kafkaConfigShape } from '@fin/events';
import { metricsConfigShape } from '@fin/metrics';
import { z } from 'zod';
import { databasePoolConfigShape } from '@fin/db';
import { DEFAULT_HOT_RESULTS_MAX_BYTES, DEFAULT_TENANT_CAP, DEFAULT_WORKER_CONCURRENCY } from '@fin/job-kit';

/** The stock-report service's environment (API role, worker role or both). See docs/configuration.md. */
export const stockReportConfigShape = {
  ...aiConfigShape,
  ...customerToolsConfigShape,
  /** SEC EDGAR, read by the filings routes (API role): EDGAR_USER_AGENT, EDGAR_OFFLINE, … (docs/configuration.md). */
  ...edgarConfigShape,
  ...kafkaConfigShape('stock-report'),
  PORT: port().default(8082),
  HOST: z.string().default('127.0.0.1'),
  ...metricsConfigShape(9082),
  /** api: answers POST /api/products/stock-report; worker: runs stock-report jobs; all: both in one process. */
  STOCK_REPORT_ROLE: z.enum(['api', 'worker', 'all']).default('all'),
  DATABASE_URL: url(['postgres', 'postgresql']),
  ...databasePoolConfigShape,
  INTERNAL_SIGNING_SECRET: secret(z.string().min(32, 'must be at least 32 characters (e.g. `openssl rand -hex 32`)')),
  ...logConfigShape(),
  /** A report that runs longer fails. One symbol takes about 10–20 s and a comparison 30–45 s: twice that, with room. */
  STOCK_REPORT_TIME_LIMIT_MS: int(1_000, 600_000).default(90_000),
  /** Reports are long model runs that mostly wait on the API: a slot costs memory, not CPU (docs/deployment.md#capacity-planning). */
  STOCK_REPORT_WORKER_CONCURRENCY: int(1, 2_000).default(DEFAULT_WORKER_CONCURRENCY),
  /**
   * Reports one tenant may have running at once across every worker replica (counted from live leases when a job is
   * claimed): one account's backlog cannot take every slot. docs/jobs.md#fair-order-between-tenants.
   */
  STOCK_REPORT_WORKER_TENANT_CAP: int(1, 100_000).default(DEFAULT_TENANT_CAP),
  /** How often (±25 %) a worker looks for jobs it was not woken for: a wake-up lost, or work queued while it was full. */
  WORKER_POLL_INTERVAL_MS: int(100, 60_000).default(1_500),
  STOCK_REPORT_MAX_ATTEMPTS: int(1, 10).default(3),
  /** How long a worker's claim on a job lasts without renewal: a worker that dies is replaced after this. */
  STOCK_REPORT_LEASE_MS: int(1_000, 600_000).default(15_000),
  /**
   * Memory the API role's copies of cache hits may take (result bytes plus a fixed overhead per copy; the least
   * recently used go first): a hit held there is answered without a database round trip while the entry is unexpired
   * and unchanged (docs/jobs.md#cache-hits-from-memory). 0 keeps none.
   */
  HOT_RESULTS_MAX_BYTES: int(0, 4 * 1024 * 1024 * 1024).default(DEFAULT_HOT_RESULTS_MAX_BYTES),
  /**
   * On SIGTERM the worker stops claiming jobs and lets those in flight finish for this long (a comparison takes 30–45 s) (their model calls are
   * paid for), then hands back the rest. k8s: terminationGracePeriodSeconds covers it plus a margin.
   */
  WORKER_DRAIN_TIMEOUT_MS: int(0, 3_600_000).default(60_000),
  SHUTDOWN_DRAIN_TIMEOUT_MS: int(0, 600_000).default(20_000),
};

export type StockReportConfig = z.output<z.ZodObject<typeof stockReportConfigShape>>;
