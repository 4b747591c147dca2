import { connect, createServer, type Server } from 'node:net';
import { createPool, type Pool } from '@fin/db';
import { createMemoryBus } from '@fin/events';
import { serveUnit } from '@fin/http';
import { createLogger } from '@fin/log';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { createProductUnit, type JobWorker, type ProductServiceConfig, type ProductServiceOptions } from '../src';

const logger = createLogger({ service: 'product-service-test', level: 'silent' });

/**
 * A TCP stand-in for a transaction pooler in front of the database: it forwards everything and records whether a
 * statement that needs a session of its own (LISTEN, a session advisory lock) went through it.
 */
async function startPoolerStandIn(databaseUrl: string) {
  const target = new URL(databaseUrl);
  const seen = new Set<string>();
  const server = createServer((socket) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    socket.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      for (const statement of ['LISTEN ', 'pg_try_advisory_lock', 'pg_advisory_unlock']) if (text.includes(statement)) seen.add(statement);
    });
    socket.pipe(upstream).pipe(socket);
    const close = () => {
      socket.destroy();
      upstream.destroy();
    };
    socket.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(databaseUrl);
  url.host = `127.0.0.1:${(server.address() as { port: number }).port}`;
  return { url: url.toString(), seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** The product unit served on its config's PORT, as runService serves it. */
async function startProduct(options: ProductServiceOptions<{ close(): Promise<void> }>) {
  const { config, logger } = options;
  return serveUnit(await createProductUnit(options), {
    port: config.PORT,
    host: config.HOST,
    signingSecret: config.INTERNAL_SIGNING_SECRET,
    logger,
  });
}

describe('a product unit, served', () => {
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
    const start = startProduct({
      jobType: 'news',
      config,
      settings: {
        role: 'all',
        timeLimitMs: 1_000,
        workerConcurrency: 1,
        tenantCap: 10,
        pollIntervalMs: 1_000,
        maxAttempts: 3,
        leaseMs: 1_000,
        drainTimeoutMs: 0,
      },
      logger,
      pool,
      bus,
      createEngine: async () => ({ close: async () => void stopped.push('engine') }),
      createHandlers: () => ({}),
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

  it('keeps LISTEN and the relay leader lock on DATABASE_DIRECT_URL, off the (pooled) DATABASE_URL', async () => {
    const pooler = await startPoolerStandIn(db.url);
    const bus = createMemoryBus({ logger });
    const config: ProductServiceConfig = {
      PORT: 0,
      HOST: '127.0.0.1',
      DATABASE_URL: pooler.url,
      DATABASE_POOL_MAX: 4,
      DATABASE_DIRECT_URL: db.url,
      INTERNAL_SIGNING_SECRET: 'product-service-test-secret-0123456789',
      KAFKA_BROKERS: ['127.0.0.1:1'],
      KAFKA_CLIENT_ID: 'news',
      KAFKA_TOPIC_PREFIX: '',
      KAFKA_SESSION_TIMEOUT_MS: 30_000,
      KAFKA_SSL: false,
      KAFKA_SSL_REJECT_UNAUTHORIZED: true,
      KAFKA_ENSURE_TOPICS: true,
    };
    const service = await startProduct({
      jobType: 'news',
      config,
      settings: {
        role: 'api',
        timeLimitMs: 1_000,
        workerConcurrency: 1,
        tenantCap: 10,
        pollIntervalMs: 1_000,
        maxAttempts: 3,
        leaseMs: 1_000,
        drainTimeoutMs: 0,
      },
      logger,
      bus,
      createEngine: async () => ({ close: async () => undefined }),
      createHandlers: () => ({}),
      createWorker: () => ({ workerId: 'w', start: async () => undefined, stop: async () => undefined }),
    });
    try {
      // The relay leads on a direct session: its lock and its LISTEN are held by `news-api-direct` connections.
      const holders = await waitFor(
        async () => {
          const { rows } = await pool.query<{ application_name: string; what: string }>(
            `SELECT a.application_name, 'lock' AS what FROM pg_locks l JOIN pg_stat_activity a USING (pid)
              WHERE l.locktype = 'advisory' AND a.datname = current_database()
             UNION ALL
             SELECT application_name, 'listen' FROM pg_stat_activity WHERE query = 'LISTEN outbox' AND datname = current_database()`,
          );
          return rows.length === 2 && rows;
        },
        { what: 'the relay to lead and listen' },
      );
      expect(holders.map((row) => row.application_name)).toEqual(['news-api-direct', 'news-api-direct']);
      // Queries still go through DATABASE_URL; the session statements never did.
      expect((await fetch(`http://127.0.0.1:${(service.server!.address() as { port: number }).port}/readyz`)).status).toBe(200);
      expect([...pooler.seen]).toEqual([]);
    } finally {
      const server = service.server!;
      await new Promise((resolve) => {
        server.close(resolve);
        server.closeAllConnections();
      });
      for (const closer of service.closers) await closer.close();
      await bus.close();
      await pooler.close();
    }
    expect(service.closers.map((closer) => closer.name)).toContain('direct database pool');
  });
});
