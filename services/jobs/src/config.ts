import { int, logConfigShape, port, secret, url } from '@fin/config';
import { databasePoolConfigShape } from '@fin/db';
import { kafkaConfigShape } from '@fin/events';
import { metricsConfigShape } from '@fin/metrics';
import { webhooksConfigShape } from '@fin/webhooks';
import { z } from 'zod';
import { DEFAULT_FINISHED_STATUS_MAX_BYTES } from './job-queries';

/** The job-status service's environment. See docs/jobs.md#configuration. */
export const jobsConfigShape = {
  ...kafkaConfigShape('jobs'),
  PORT: port().default(8085),
  HOST: z.string().default('127.0.0.1'),
  ...metricsConfigShape(9085),
  DATABASE_URL: url(['postgres', 'postgresql']),
  /** Connections to Postgres; the status endpoint is one primary-key read per request. */
  ...databasePoolConfigShape,
  ...logConfigShape(),
  /** Verifies the identity headers the gateway signs; every service holds the same value. */
  INTERNAL_SIGNING_SECRET: secret(z.string().min(32, 'must be at least 32 characters (e.g. `openssl rand -hex 32`)')),
  /** How often the lease reaper looks for jobs whose worker stopped renewing its lease. */
  JOB_REAPER_INTERVAL_MS: int(50, 3_600_000).default(2_000),
  /** A job no worker has claimed for this long is failed with a reason instead of staying pending forever. */
  JOB_UNCLAIMED_TIMEOUT_MS: int(1_000, 86_400_000).default(300_000),
  /**
   * How often the service reads every consumer group's lag from the broker (fin_kafka_consumer_lag); 0 turns it
   * off. Every replica reads it: a few small admin requests per group and topic each time.
   */
  KAFKA_LAG_INTERVAL_MS: int(0, 3_600_000).default(30_000),
  /**
   * Memory for finished jobs' status answers, which never change (their JSON plus a fixed overhead each; the least
   * recently used go first): a finished job's status is answered without a database read after its first. 0 keeps none.
   */
  JOBS_FINISHED_STATUS_MAX_BYTES: int(0, 1024 * 1024 * 1024).default(DEFAULT_FINISHED_STATUS_MAX_BYTES),
  /** A `: keep-alive` comment on every open job event stream this often; each tick also re-reads the streams' jobs. */
  JOB_EVENTS_KEEP_ALIVE_MS: int(100, 300_000).default(15_000),
  /** Job event streams open at once in one process; beyond, 503. */
  JOB_EVENTS_MAX_STREAMS: int(1, 1_000_000).default(10_000),
  /** Job event streams open at once per account in one process; beyond, 429. */
  JOB_EVENTS_MAX_STREAMS_PER_ACCOUNT: int(1, 100_000).default(100),
  /** Webhook delivery: the key that opens signing secrets, time limit and retry schedule (docs/products.md#webhooks). */
  ...webhooksConfigShape,
  /** On SIGTERM: time between failing readiness and refusing connections, for endpoints to update. */
  SHUTDOWN_UNREADY_DELAY_MS: int(0, 60_000).default(0),
  /** On SIGTERM: how long open requests may take to finish before they are cut. */
  SHUTDOWN_DRAIN_TIMEOUT_MS: int(0, 600_000).default(10_000),
};

export type JobsConfig = z.output<z.ZodObject<typeof jobsConfigShape>>;
