import { randomUUID } from 'node:crypto';
import { aiConfigShape, createAiEngine, SampleMarketDataProvider, type AiEngine } from '@fin/ai';
import { parseConfig } from '@fin/config';
import { startFakeAnthropic, type FakeAnthropic, type ReplyHandler } from '@fin/fakes';
import { createPool, type Pool } from '@fin/db';
import { createMemoryBus } from '@fin/events';
import { createHandlerApp, identityKey, signIdentity, type ServiceApp, type ServiceUnit } from '@fin/http';
import { createLogger } from '@fin/log';
import { createTestDatabase, testCustomerToolsKey, type TestDatabase } from '@fin/testing';
import { analysisConfigShape, type AnalysisConfig } from '../src/config';
import { analysisService } from '../src/service';

export const SECRET = 'x'.repeat(40);
export const PATH = '/api/analysis';
export const logger = createLogger({ service: 'analysis-test', level: 'silent' });

export interface TestBed {
  db: TestDatabase;
  pool: Pool;
  tenantA: string;
  tenantB: string;
  fake: FakeAnthropic;
  engine: AiEngine;
  close(): Promise<void>;
}

/** A database of the file's own with two tenants, and an AI engine whose real SDK talks to a fake Messages API. */
export async function createTestBed(options: { handler?: ReplyHandler } = {}): Promise<TestBed> {
  const db = await createTestDatabase();
  const pool = createPool({ connectionString: db.url, applicationName: 'analysis-test', max: 10 });
  const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('a'), ('b') RETURNING id");
  const [tenantA, tenantB] = rows.map((row) => row.id) as [string, string];
  const fake = await startFakeAnthropic({ handler: options.handler });
  const config = parseConfig(aiConfigShape, {
    ANTHROPIC_API_KEY: 'sk-ant-test-0000000000',
    ANTHROPIC_BASE_URL: fake.url,
    AI_MAX_RETRIES: '0',
    AI_WEB_SEARCH: 'false',
  });
  const engine = await createAiEngine({ config, logger, marketData: new SampleMarketDataProvider() });
  return {
    db,
    pool,
    tenantA,
    tenantB,
    fake,
    engine,
    async close() {
      await engine.close();
      await fake.close();
      await pool.end();
      await db.drop();
    },
  };
}

/** The service's config as main.ts parses it (the API role, on a free port), with the test's variables. */
export function analysisConfig(bed: TestBed, env: Record<string, string> = {}): AnalysisConfig {
  return parseConfig(analysisConfigShape, {
    DATABASE_URL: bed.db.url,
    INTERNAL_SIGNING_SECRET: SECRET,
    KAFKA_BROKERS: '127.0.0.1:1',
    CUSTOMER_TOOLS_ENCRYPTION_KEY: testCustomerToolsKey(),
    ANALYSIS_ROLE: 'api',
    PORT: '0',
    ...env,
  });
}

/** The API role made by the service's definition, as the HTTP app runService serves, and how to close it. */
export interface AnalysisApi {
  app: ServiceApp;
  unit: ServiceUnit;
  close(): Promise<void>;
}

/**
 * The analysis unit of `analysisConfig(bed, env)` on the bed's pool and engine and an in-process bus, not started:
 * its relay stays idle, so the job events the requests write stay in the outbox for the tests to read.
 */
export async function analysisApi(bed: TestBed, env: Record<string, string> = {}): Promise<AnalysisApi> {
  const bus = createMemoryBus({ logger });
  const unit = await analysisService.unit({
    config: analysisConfig(bed, env),
    logger,
    units: new Map(),
    pool: bed.pool,
    bus,
    engine: bed.engine,
  });
  return {
    app: createHandlerApp(unit, { logger, signingSecret: SECRET }),
    unit,
    async close() {
      for (const closer of unit.closers) await closer.close();
      await bus.close();
    },
  };
}

/** The identity headers the gateway would add for `tenantId` posting `body` (sent as JSON, or as the string given). */
export function signed(tenantId: string, body?: unknown, path = PATH): Record<string, string> {
  const bytes = body === undefined || typeof body === 'string' ? body : JSON.stringify(body);
  return {
    ...signIdentity(
      { requestId: randomUUID(), caller: { tenantId, keyId: randomUUID(), scopes: ['analysis'] } },
      identityKey(SECRET, 'analysis'),
      { method: 'POST', path, body: bytes },
    ),
  };
}

export interface OutboxEvent {
  topic: string;
  payload: {
    seq?: number;
    status?: string;
    progress?: number;
    result?: Record<string, unknown>;
    error?: { type: string; detail: string };
    request?: Record<string, unknown>;
  };
}

export async function outboxOf(pool: Pool, jobId: string): Promise<OutboxEvent[]> {
  const { rows } = await pool.query<{ topic: string; envelope: { payload: OutboxEvent['payload'] } }>(
    'SELECT topic, envelope FROM outbox WHERE message_key = $1 ORDER BY id',
    [jobId],
  );
  return rows.map((row) => ({ topic: row.topic, payload: row.envelope.payload }));
}

/** What the job-status service does with a final event: the job row takes its status, result or error. */
export async function finishJob(
  pool: Pool,
  jobId: string,
  outcome: { result: Record<string, unknown> } | { error: { type: string; detail: string } },
): Promise<void> {
  if ('result' in outcome) {
    await pool.query("UPDATE jobs SET status = 'completed', progress = 100, result = $2, finished_at = now() WHERE id = $1", [
      jobId,
      JSON.stringify(outcome.result),
    ]);
  } else {
    await pool.query("UPDATE jobs SET status = 'failed', error = $2, finished_at = now() WHERE id = $1", [
      jobId,
      JSON.stringify(outcome.error),
    ]);
  }
}

export interface SseFrame {
  event?: string;
  data?: unknown;
  comment?: string;
}

/** An SSE response read frame by frame, as a browser's EventSource would (comments included). */
export async function* sseFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<SseFrame> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const bytes of body) {
    buffer += decoder.decode(bytes, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const frame: SseFrame = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) frame.comment = line.slice(1).trim();
        else if (line.startsWith('event: ')) frame.event = line.slice(7);
        else if (line.startsWith('data: ')) frame.data = JSON.parse(line.slice(6)) as unknown;
      }
      yield frame;
    }
  }
}
