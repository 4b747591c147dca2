// The service as main.ts runs it (here on the in-process bus): status out, events observed, reaper requests published
// by the relay, and the fixed shutdown order.
import { ConfigError, parseConfig } from '@fin/config';
import { JobStatusResponse } from '@fin/contracts';
import { type Pool, createPool } from '@fin/db';
import { type JobRequestedPayload, type JobStateEventPayload, type MemoryEventBus, createMemoryBus, jobRequestTopics } from '@fin/events';
import { attemptRecorder, claimJob } from '@fin/job-store';
import { createShutdown, serveDefinition, served } from '@fin/http';
import { type TestDatabase, createTestDatabase, testCustomerToolsKey, uniqueName, waitFor } from '@fin/testing';
import { jobsConfigShape } from '../src/config';
import type { ServedService } from '@fin/http';
import { jobsService } from '../src/service';
import { NEWS_RESULT, createTenant, insertJob, jobsConfig, signedGet, testLogger } from './support';

describe('the jobs service', () => {
  let db: TestDatabase;
  let pool: Pool;
  let bus: MemoryEventBus;
  let service: ServedService;
  const exits: number[] = [];
  const closed: string[] = [];
  const logger = testLogger();
  const observed: JobStateEventPayload[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'jobs-service-test' });
    bus = createMemoryBus({ logger });
    service = served(
      await serveDefinition(jobsService, {
        config: jobsConfig(db.url, { JOB_REAPER_INTERVAL_MS: '50' }),
        logger,
        shared: {
          bus,
          pool,
          outboxRelay: { pollIntervalMs: 50, standbyIntervalMs: 50 },
          onJobEvent: (event) => void observed.push(event),
        },
      }),
    );
  });
  afterAll(async () => {
    // Nothing left to close when the shutdown test already ran.
    if (service.server.listening) await new Promise((resolve) => service.server.close(resolve));
    if (closed.length === 0) for (const closer of service.closers) await closer.close();
    await bus.close();
    await pool.end();
    await db.drop();
  });

  const getStatus = async (id: string, tenantId: string) => {
    const path = `/api/jobs/news/${id}/status`;
    const res = await fetch(`${service.url}${path}`, { headers: signedGet(path, tenantId) });
    return { code: res.status, body: await res.json() };
  };

  it('answers the status endpoint with what the runner wrote, and observes the events the relay publishes', async () => {
    const tenantId = await createTenant(pool);
    const id = await insertJob(pool, { tenantId });
    const job = (await claimJob(pool, { jobId: id, jobType: 'news', workerId: 'worker-1', leaseMs: 30_000 }))!;
    const runner = attemptRecorder({ pool, workerId: 'worker-1', retryDelayMs: 1_000 }, job);
    await runner.progress(40, 'Ranking news by relevance');
    // Written by the runner itself: the status endpoint answers it at once, whatever the relay and bus are doing.
    expect((await getStatus(id, tenantId)).body).toEqual({
      job_id: id,
      status: 'running',
      progress: 40,
      currently_working_on: 'Ranking news by relevance',
    });
    await runner.complete({ result: NEWS_RESULT, customerToolSet: null });
    expect(JobStatusResponse.parse((await getStatus(id, tenantId)).body).status).toBe('completed');
    // The relay publishes both events and the observer receives them, in order.
    const seen = await waitFor(
      () => {
        const mine = observed.filter((event) => event.job_id === id);
        return mine.length === 2 && mine;
      },
      { what: 'the observer to receive both events' },
    );
    expect(seen.map((event) => [event.seq, event.status])).toEqual([
      [1001, 'running'],
      [1002, 'completed'],
    ]);
  });

  it('publishes the reaper requests of an expired lease through the outbox relay', async () => {
    const requested: JobRequestedPayload[] = [];
    const observer = await bus.subscribe({
      topic: jobRequestTopics.news,
      groupId: uniqueName('observer'),
      handler: async (envelope) => void requested.push(envelope.payload),
    });
    try {
      const tenantId = await createTenant(pool);
      const id = await insertJob(pool, { tenantId, status: 'running', attempts: 1, leaseOwner: 'worker-1', leaseSeconds: -1 });
      const request = await waitFor(() => requested.find((payload) => payload.job_id === id), { what: 'the job to be requested again' });
      expect(request).toMatchObject({ job_id: id, job_type: 'news', tenant_id: tenantId, attempt: 2 });
      // The relay marks its batch published after handing it to the bus, which may deliver it before the mark commits.
      const rows = await waitFor(
        async () => {
          const { rows: found } = await pool.query<{ published: boolean }>(
            'SELECT published_at IS NOT NULL AS published FROM outbox WHERE message_key = $1',
            [id],
          );
          return found.every((row) => row.published) && found;
        },
        { what: 'the relay to mark the request published' },
      );
      expect(rows).toEqual([{ published: true }]);
    } finally {
      await observer.stop();
    }
  });

  it("shuts down in order: readiness off, HTTP stopped, then the streams' subscription, observer, webhooks, reaper, job gauges and relay", async () => {
    await expect(fetch(`${service.url}/readyz`).then((res) => res.status)).resolves.toBe(200);
    const shutdown = createShutdown({
      logger,
      lifecycle: service.lifecycle,
      servers: [service.server],
      drainTimeoutMs: 1_000,
      closers: service.closers.map((closer) => ({
        name: closer.name,
        close: async () => {
          await closer.close();
          closed.push(closer.name);
        },
      })),
      exit: (code) => void exits.push(code),
    });
    await shutdown('SIGTERM');
    expect(exits).toEqual([0]);
    expect(service.lifecycle.shuttingDown).toBe(true);
    expect(service.server.listening).toBe(false);
    expect(closed).toEqual([
      'job event streams subscription',
      'job event observer',
      'webhook consumer',
      'webhook dispatcher',
      'webhook connections',
      'lease reaper',
      'job gauges',
      'outbox relay',
    ]);
  });
});

describe('jobs configuration', () => {
  const valid = {
    DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/fin_api',
    INTERNAL_SIGNING_SECRET: 'x'.repeat(32),
    KAFKA_BROKERS: '127.0.0.1:19092, 127.0.0.1:19093',
    CUSTOMER_TOOLS_ENCRYPTION_KEY: testCustomerToolsKey(),
  };

  it('parses the environment with its defaults', () => {
    expect(parseConfig(jobsConfigShape, valid)).toMatchObject({
      PORT: 8085,
      HOST: '127.0.0.1',
      KAFKA_BROKERS: ['127.0.0.1:19092', '127.0.0.1:19093'],
      KAFKA_CLIENT_ID: 'jobs',
      JOB_REAPER_INTERVAL_MS: 2_000,
      LOG_LEVEL: 'info',
    });
  });

  it('names every bad variable and never echoes the secret', () => {
    let error: unknown;
    try {
      parseConfig(jobsConfigShape, {
        DATABASE_URL: valid.DATABASE_URL,
        INTERNAL_SIGNING_SECRET: 'short-secret',
        JOB_REAPER_INTERVAL_MS: 'soon',
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const variables = (error as ConfigError).issues.map((issue) => issue.variable).sort();
    expect(variables).toEqual(['CUSTOMER_TOOLS_ENCRYPTION_KEY', 'INTERNAL_SIGNING_SECRET', 'JOB_REAPER_INTERVAL_MS', 'KAFKA_BROKERS']);
    expect((error as ConfigError).message).not.toContain('short-secret');
  });
});
