// What the jobs service's tests share: a quiet logger, tenants and jobs written the way the product services
// write them, and signed identity headers as the gateway sends them.
import { randomUUID } from 'node:crypto';
import { parseConfig } from '@fin/config';
import { type Pool, type Queryable } from '@fin/db';
import { createMemoryBus } from '@fin/events';
import { createHandlerApp, identityKey, signIdentity, type ServiceApp } from '@fin/http';
import { createLogger, type Logger } from '@fin/log';
import { testCustomerToolsKey } from '@fin/testing';
import { jobsConfigShape, type JobsConfig } from '../src/config';
import { jobsService } from '../src/service';

export const SECRET = 'jobs-test-secret-0123456789abcdef0123';

/** Silent unless LOG_LEVEL is set (e.g. LOG_LEVEL=debug jest). */
/** The service's config as main.ts parses it, on a free port; a test hands the unit its bus, so the brokers go unused. */
export function jobsConfig(databaseUrl: string, env: Record<string, string> = {}): JobsConfig {
  return parseConfig(jobsConfigShape, {
    DATABASE_URL: databaseUrl,
    KAFKA_BROKERS: '127.0.0.1:1',
    INTERNAL_SIGNING_SECRET: SECRET,
    CUSTOMER_TOOLS_ENCRYPTION_KEY: testCustomerToolsKey(),
    PORT: '0',
    ...env,
  });
}

/** The job-status endpoints as the service's definition makes them, and how to close what the unit made. */
export interface JobsApi {
  app: ServiceApp;
  close(): Promise<void>;
}

/**
 * The jobs unit made by its definition on `pool` and an in-process bus, as the HTTP app runService serves, but not
 * started: no reaper, gauges or relay run, so what the endpoints read is all that goes through `pool` (the webhook
 * dispatcher, which the unit runs as it is made, looks for deliveries once a minute).
 */
export async function jobsApi(databaseUrl: string, pool: Pool): Promise<JobsApi> {
  const logger = testLogger();
  const bus = createMemoryBus({ logger });
  const config = jobsConfig(databaseUrl, { WEBHOOK_DISPATCH_INTERVAL_MS: '60000' });
  const unit = await jobsService.unit({ config, logger, units: new Map(), pool, bus, outboxRelay: false });
  return {
    app: createHandlerApp(unit, { logger, signingSecret: SECRET }),
    async close() {
      for (const closer of unit.closers) await closer.close();
      await bus.close();
    },
  };
}

export function testLogger(): Logger {
  return createLogger({ service: 'jobs-test', level: process.env.LOG_LEVEL ?? 'silent' });
}

export async function createTenant(db: Queryable, name = `tenant-${randomUUID()}`): Promise<string> {
  const { rows } = await db.query<{ id: string }>('INSERT INTO tenants (name) VALUES ($1) RETURNING id::text AS id', [name]);
  return rows[0]!.id;
}

export interface JobFields {
  tenantId: string;
  type?: 'news' | 'stock-report' | 'analysis';
  status?: 'pending' | 'running' | 'completed' | 'failed';
  progress?: number;
  currentlyWorkingOn?: string | null;
  request?: Record<string, unknown>;
  result?: Record<string, unknown> | null;
  error?: { type: string; detail: string } | null;
  cacheKey?: string | null;
  attempts?: number;
  maxAttempts?: number;
  leaseOwner?: string | null;
  /** Lease end relative to now, in seconds (negative: expired). */
  leaseSeconds?: number | null;
  eventSeq?: number;
}

/** Inserts a job row; returns its id. */
export async function insertJob(db: Queryable, fields: JobFields): Promise<string> {
  const id = randomUUID();
  await db.query(
    `INSERT INTO jobs (id, tenant_id, type, status, progress, currently_working_on, request, result, error, cache_key,
                       attempts, max_attempts, lease_owner, lease_expires_at, event_seq)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
             CASE WHEN $14::float8 IS NULL THEN NULL ELSE now() + $14::float8 * interval '1 second' END, $15)`,
    [
      id,
      fields.tenantId,
      fields.type ?? 'news',
      fields.status ?? 'pending',
      fields.progress ?? 0,
      fields.currentlyWorkingOn ?? null,
      JSON.stringify(fields.request ?? { symbols: ['AAPL'], n: 5 }),
      fields.result == null ? null : JSON.stringify(fields.result),
      fields.error == null ? null : JSON.stringify(fields.error),
      fields.cacheKey ?? null,
      fields.attempts ?? 0,
      fields.maxAttempts ?? 3,
      fields.leaseOwner ?? null,
      fields.leaseSeconds ?? null,
      fields.eventSeq ?? 0,
    ],
  );
  return id;
}

export interface JobRowState {
  status: string;
  progress: number;
  currently_working_on: string | null;
  result: Record<string, unknown> | null;
  error: { type: string; detail: string } | null;
  event_seq: number;
  attempts: number;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  input_tokens: number;
  output_tokens: number;
  started_at: Date | null;
  finished_at: Date | null;
}

export async function jobRow(db: Queryable, id: string): Promise<JobRowState> {
  const { rows } = await db.query<JobRowState>(
    `SELECT status, progress, currently_working_on, result, error, event_seq, attempts, lease_owner, lease_expires_at,
            input_tokens, output_tokens, started_at, finished_at
     FROM jobs WHERE id = $1`,
    [id],
  );
  if (rows[0] === undefined) throw new Error(`no job ${id}`);
  return rows[0];
}

export const NEWS_RESULT = {
  news: [
    {
      title: 'Apple beats estimates',
      content: 'Revenue rose 8%.',
      sources: ['https://example.com/a'],
      further_reading: [],
      citations: [
        {
          url: 'https://example.com/a',
          title: 'Apple beats estimates',
          publisher: 'Example News',
          published_at: '2026-11-18',
          quote: 'Revenue rose 8% in the quarter.',
          source: 'market_data',
        },
      ],
      relevance_score: 0.9,
    },
  ],
};

/** Identity headers for a GET of `path` by `tenantId`, signed as the gateway signs them. */
export function signedGet(path: string, tenantId: string, secret = SECRET): Record<string, string> {
  return signIdentity(
    { requestId: `req-${randomUUID()}`, caller: { tenantId, keyId: `key-${tenantId}`, scopes: ['news', 'stock-report', 'analysis'] } },
    identityKey(secret, 'jobs'),
    { method: 'GET', path },
  );
}
