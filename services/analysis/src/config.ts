import { aiConfigShape } from '@fin/ai';
import { int, logConfigShape, port, secret, url } from '@fin/config';
import { customerToolsConfigShape } from '@fin/customer-tools';
import { edgarConfigShape } from '@fin/edgar';
import { kafkaConfigShape } from '@fin/events';
import { metricsConfigShape } from '@fin/metrics';
import { z } from 'zod';
import { databasePoolConfigShape } from '@fin/db';
import { DEFAULT_TENANT_CAP, DEFAULT_WORKER_CONCURRENCY } from '@fin/job-kit';

/** The analysis service's environment (API role, worker role or both). See docs/configuration.md. */
export const analysisConfigShape = {
  ...aiConfigShape,
  ...customerToolsConfigShape,
  /**
   * SEC EDGAR, read by the analyses both roles run (the sec_filings tool: 10-K/10-Q sections, 8-K items):
   * EDGAR_USER_AGENT, EDGAR_OFFLINE, … (docs/configuration.md). Online (as the AI, unless EDGAR_OFFLINE says
   * otherwise) EDGAR_USER_AGENT is required.
   */
  ...edgarConfigShape,
  ...kafkaConfigShape('analysis'),
  PORT: port().default(8083),
  HOST: z.string().default('127.0.0.1'),
  // @fin/metrics' metricsConfigShape(9083), spelled out until that package is linked into this one.
  ...metricsConfigShape(9083),
  /** api: answers POST /api/analysis (and runs streamed analyses); worker: runs analysis jobs; all: both. */
  ANALYSIS_ROLE: z.enum(['api', 'worker', 'all']).default('all'),
  DATABASE_URL: url(['postgres', 'postgresql']),
  ...databasePoolConfigShape,
  INTERNAL_SIGNING_SECRET: secret(z.string().min(32, 'must be at least 32 characters (e.g. `openssl rand -hex 32`)')),
  ...logConfigShape(),
  /** An analysis that runs longer fails (the spec's typical time is 30–90 s). */
  ANALYSIS_TIME_LIMIT_MS: int(1_000, 900_000).default(180_000),
  /** Queued analyses one worker process runs at once. An analysis mostly waits on the model: a slot costs memory, not CPU. */
  ANALYSIS_WORKER_CONCURRENCY: int(1, 2_000).default(DEFAULT_WORKER_CONCURRENCY),
  /**
   * Queued analyses one tenant may have running at once across every worker replica (counted from live leases when a job is
   * claimed): one account's backlog cannot take every slot. docs/jobs.md#fair-order-between-tenants.
   */
  ANALYSIS_WORKER_TENANT_CAP: int(1, 100_000).default(DEFAULT_TENANT_CAP),
  /** How often (±25 %) a worker looks for jobs it was not woken for: a wake-up lost, or work queued while it was full. */
  WORKER_POLL_INTERVAL_MS: int(100, 60_000).default(1_500),
  ANALYSIS_MAX_ATTEMPTS: int(1, 10).default(3),
  /** How long a claim on a job lasts without renewal: a process that dies is noticed after this. */
  ANALYSIS_LEASE_MS: int(1_000, 600_000).default(15_000),
  /**
   * On SIGTERM the worker stops claiming jobs and lets those in flight finish for this long (an analysis takes 30–90 s) (their model calls are
   * paid for), then hands back the rest. k8s: terminationGracePeriodSeconds covers it plus a margin.
   */
  WORKER_DRAIN_TIMEOUT_MS: int(0, 3_600_000).default(120_000),
  /**
   * How long a non-streamed request waits for its job before answering 202. Below the gateway's 120 s wait for
   * response headers, and by default below the 60 s idle timeout of common load balancers.
   */
  ANALYSIS_INLINE_WAIT_MS: int(0, 110_000).default(30_000),
  /** While nothing else is sent, an open stream gets a `: keep-alive` comment this often. */
  ANALYSIS_STREAM_HEARTBEAT_MS: int(100, 120_000).default(15_000),
  /** Before `done`, how long a stream waits for the job-status service to record the result (0: not at all). */
  ANALYSIS_STREAM_DONE_WAIT_MS: int(0, 60_000).default(5_000),
  /** On shutdown, how long open streams may still finish before they end with a `service_unavailable` error. */
  ANALYSIS_STREAM_SHUTDOWN_GRACE_MS: int(0, 600_000).default(10_000),
  /** How often waiting requests re-read their job when no notification arrived (a missed one, a lost connection). */
  ANALYSIS_JOB_POLL_MS: int(50, 60_000).default(2_000),
  SHUTDOWN_DRAIN_TIMEOUT_MS: int(0, 600_000).default(20_000),
};

export type AnalysisConfig = z.output<z.ZodObject<typeof analysisConfigShape>>;
