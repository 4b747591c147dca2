import { createServer, type Server } from 'node:net';
import { createPool, type Pool } from '@fin/db';
import { createMemoryBus } from '@fin/events';
import { createServiceApp } from '@fin/http';
import { createLogger } from '@fin/log';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { startProductService, type JobWorker, type ProductServiceConfig } from '../src';

const logger = createLogger({ service: 'product-service-test', level: 'silent' });

describe('startProductService', () => {
  let db: TestDatabase;
  let pool: Pool;
  let taken: Server;
  let port: number;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'product-service-test', max: 4 });
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    port = (taken.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => taken.close(resolve));
    await pool.end();
    await db.drop();
  });

  it('fails start-up with the cause when its port is in use, after stopping the worker, engine and relay it started', async () => {
    const bus = createMemoryBus({ logger });
    const stopped: string[] = [];
    const worker: JobWorker = { workerId: 'w', start: async () => undefined, stop: async () => void stopped.push('worker') };
    const config: ProductServiceConfig = {
      PORT: port,
      HOST: '127.0.0.1',
      DATABASE_URL: db.url,
      DATABASE_POOL_MAX: 10,
      INTERNAL_SIGNING_SECRET: 'product-service-test-secret-0123456789',
      KAFKA_BROKERS: ['127.0.0.1:1'],
      KAFKA_CLIENT_ID: 'news',
      KAFKA_TOPIC_PREFIX: '',
      KAFKA_SESSION_TIMEOUT_MS: 30_000,
      KAFKA_SSL: false,
      KAFKA_SSL_REJECT_UNAUTHORIZED: true,
      KAFKA_ENSURE_TOPICS: true,
    };
    const start = startProductService({
      jobType: 'news',
      config,
      settings: { role: 'all', timeLimitMs: 1_000, workerConcurrency: 1, maxAttempts: 3, leaseMs: 1_000, drainTimeoutMs: 0 },
      logger,
      pool,
      bus,
      createEngine: async () => ({ close: async () => void stopped.push('engine') }),
      createApp: () => createServiceApp({ name: 'news', logger, readiness: async () => undefined, routes: () => undefined }),
      createWorker: () => worker,
    });
    // Before: the listen error was emitted with no listener (an uncaught exception) and the promise never settled.
    await expect(start).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(stopped).toEqual(['worker', 'engine']);
    // The pool it was given is still the caller's, open; the relay it started no longer holds a connection.
    expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    expect(pool.totalCount - pool.idleCount).toBe(0);
    await bus.close();
  });
});
