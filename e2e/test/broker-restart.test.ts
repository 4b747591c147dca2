import { offlineAnalyst } from '@fin/ai';
import { AsyncJobResponse } from '@fin/contracts';
import { startFakeAnthropic, startFakeFinnhub, type FakeAnthropic, type FakeFinnhub } from '@fin/fakes';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { ownBroker, type OwnBroker } from '../src/broker';
import { sharedEnv, startSystem, type System } from '../src/system';

const SYMBOLS = ['AAPL', 'MSFT', 'NVDA', 'GOOGL', 'AMZN', 'TSLA'];
const JOBS = 200;

/** A Kafka broker restart in the middle of a burst of jobs loses none of them. */
describe('a Kafka broker restart during a burst of 200 jobs', () => {
  let db: TestDatabase;
  let broker: OwnBroker;
  let claude: FakeAnthropic;
  let finnhub: FakeFinnhub;
  let system: System;
  let key: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    broker = await ownBroker();
    await broker.start();
    claude = await startFakeAnthropic({ handler: offlineAnalyst(), recordRequests: false });
    finnhub = await startFakeFinnhub({ token: 'finnhub-e2e-token' });
    const env = {
      ...sharedEnv({ databaseUrl: db.url, anthropicUrl: claude.url, finnhubUrl: finnhub.apiBaseUrl, finnhubToken: 'finnhub-e2e-token' }),
      KAFKA_BROKERS: broker.brokers,
    };
    system = await startSystem(env, { NEWS_WORKER_CONCURRENCY: '8' });
    key = system.tenantKey('burst');
  }, 120_000);

  afterAll(async () => {
    for (const service of system?.services ?? []) {
      if (service.child.exitCode !== null || process.env.E2E_DEBUG)
        console.log(`--- ${service.name} (exit ${service.child.exitCode})\n${service.output()}`);
    }
    await system?.stop();
    await Promise.all([claude?.close(), finnhub?.close()]);
    await broker?.destroy();
    await db?.drop();
  });

  it('accepts every job while the broker is down and completes all of them after', async () => {
    // 200 distinct requests (no cache hits, no coalescing): symbol × n × language.
    const requests = Array.from({ length: JOBS }, (_, i) => ({
      symbols: [SYMBOLS[i % SYMBOLS.length]!],
      n: 1 + (Math.floor(i / SYMBOLS.length) % 20),
      language: i < 120 ? 'en' : 'de',
    }));
    const post = (body: unknown) =>
      fetch(`${system.gatewayUrl}/api/products/news`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-API-Key': key },
        body: JSON.stringify(body),
      });

    const accepted: string[] = [];
    const submit = async (batch: typeof requests) => {
      const responses = await Promise.all(batch.map(post));
      for (const res of responses) {
        expect(res.status).toBe(202);
        accepted.push(AsyncJobResponse.parse(await res.json()).job_id);
      }
    };
    await submit(requests.slice(0, 70));
    await broker.stop();
    // Accepted while the broker is down: the job and its request event are in Postgres (the outbox).
    await submit(requests.slice(70, 140));
    await broker.start();
    await submit(requests.slice(140));
    expect(new Set(accepted).size).toBe(JOBS);

    const client = new pg.Client(db.url);
    await client.connect();
    try {
      const counts = await waitFor(
        async () => {
          const { rows } = await client.query<{ status: string; n: string }>(
            'SELECT status, count(*) AS n FROM jobs WHERE id = ANY($1::uuid[]) GROUP BY status',
            [accepted],
          );
          const byStatus = Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]));
          return byStatus.completed === JOBS && byStatus;
        },
        { timeoutMs: 120_000, intervalMs: 500, what: 'all 200 jobs to complete' },
      );
      expect(counts).toEqual({ completed: JOBS });
    } finally {
      await client.end();
    }
    // Longer than the wait above plus the restart: the producers' and consumers' reconnection back-off after a
    // broker restart can take tens of seconds on a loaded machine, which is what this test allows for.
  }, 180_000);
});
