import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { ErrorBody } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { toAppError } from '@fin/http';
import { createLogger } from '@fin/log';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import express, { type ErrorRequestHandler } from 'express';
import request from 'supertest';
import { Agent, request as send } from 'undici';
import type { Principal } from '../src/auth/types';
import { createRateLimits, type PostgresRateLimits, type RateLimitsOptions } from '../src/rate-limit/rate-limits';
import type { LimitedProduct } from '../src/rate-limit/types';

const logger = createLogger({ service: 'rate-limit-test', level: 'silent' });

function principal(limitOverrides: Record<string, number> = {}, tenantId: string = randomUUID()): Principal {
  return { tenantId, tenantName: 'acme', keyId: randomUUID(), scopes: ['news'], limitOverrides };
}

/** A tiny gateway: the principal comes from a test header lookup, then the limiter admits it, then a 200. */
function appFor(limits: PostgresRateLimits, principals: Map<string, Principal>): express.Express {
  const app = express();
  for (const product of ['news', 'stock-report', 'analysis', 'jobs', 'tools', 'webhooks', 'chat-turns', 'filings'] as LimitedProduct[]) {
    app.get(`/${product}`, (req, res, next) => {
      const who = principals.get(req.header('x-test-key') ?? '');
      if (who === undefined) throw new Error('no principal for this x-test-key');
      limits.admit(product, who, req, res).then(() => res.json({ ok: true }), next);
    });
  }
  const errors: ErrorRequestHandler = (error, _req, res, _next) => {
    const appError = toAppError(error);
    res.status(appError.status).set(appError.headers).json(appError.toBody());
  };
  app.use(errors);
  return app;
}

async function serve(app: express.Express): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(app);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe('per-minute rate limits', () => {
  let db: TestDatabase;
  let pool: Pool;
  const instances: PostgresRateLimits[] = [];
  const principals = new Map<string, Principal>();

  function limitsWith(options: Partial<RateLimitsOptions> = {}, on: Pool = pool): PostgresRateLimits {
    const limits = createRateLimits({ pool: on, logger, ...options });
    instances.push(limits);
    return limits;
  }
  /** A key of a new account, or another key of `sameAccountAs`'s account. */
  function caller(limitOverrides: Record<string, number> = {}, sameAccountAs?: Principal): { header: string; principal: Principal } {
    const who = principal(limitOverrides, sameAccountAs?.tenantId);
    principals.set(who.keyId, who);
    return { header: who.keyId, principal: who };
  }
  async function counter(key: string): Promise<{ hits: number; reset_at: Date } | undefined> {
    const { rows } = await pool.query<{ hits: number; reset_at: Date }>(
      'SELECT hits, reset_at FROM rate_limit_counters WHERE counter_key = $1',
      [key],
    );
    return rows[0];
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'rate-limit-test', max: 10 });
  });
  afterEach(async () => {
    await Promise.all(instances.splice(0).map((limits) => limits.close()));
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('admits 100 news requests per account and minute; the 101st gets 429 with the spec body and headers', async () => {
    const app = appFor(limitsWith(), principals);
    const { header, principal: who } = caller();
    const first = await request(app).get('/news').set('x-test-key', header).expect(200);
    const window = await counter(`news:tenant:${who.tenantId}`);
    // The hit, and the next 6 counts reserved by this process (a lease: 1/16 of the 99 left).
    expect(window?.hits).toBe(1 + 6);
    const reset = String(Math.ceil((window?.reset_at as Date).getTime() / 1000));
    expect(first.headers['x-ratelimit-limit']).toBe('100');
    expect(first.headers['x-ratelimit-remaining']).toBe('99');
    expect(first.headers['x-ratelimit-reset']).toBe(reset);
    // A Unix timestamp in seconds, about a minute ahead (not seconds-until-reset).
    expect(Number(reset) - Date.now() / 1000).toBeGreaterThan(55);
    expect(Number(reset) - Date.now() / 1000).toBeLessThanOrEqual(61);

    for (let hit = 2; hit <= 100; hit++) {
      const res = await request(app).get('/news').set('x-test-key', header).expect(200);
      expect(res.headers['x-ratelimit-remaining']).toBe(String(100 - hit));
    }
    const refused = await request(app).get('/news').set('x-test-key', header).expect(429);
    expect(refused.body).toEqual({
      detail: expect.stringMatching(
        /^Rate limit exceeded: this account may make 100 news requests per minute, all of its API keys together\. Retry in \d+ s\.$/,
      ),
      status_code: 429,
      type: 'rate_limit_exceeded',
    });
    expect(refused.headers['x-ratelimit-limit']).toBe('100');
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    expect(refused.headers['x-ratelimit-reset']).toBe(reset);
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(Math.abs(Date.now() / 1000 + retryAfter - Number(reset))).toBeLessThanOrEqual(2);
  });

  it('puts the headers on every limited response, with each product’s default limit', async () => {
    const limits = limitsWith();
    const app = appFor(limits, principals);
    const { header } = caller();
    const expected: Record<LimitedProduct, number> = {
      news: 100,
      'stock-report': 20,
      analysis: 20,
      jobs: 600,
      tools: 60,
      webhooks: 60,
      'chat-turns': 60,
      filings: 60,
    };
    expect(limits.limits).toEqual(expected);
    for (const [product, limit] of Object.entries(expected)) {
      for (let hit = 1; hit <= 3; hit++) {
        const res = await request(app).get(`/${product}`).set('x-test-key', header).expect(200);
        expect(res.headers['x-ratelimit-limit']).toBe(String(limit));
        expect(res.headers['x-ratelimit-remaining']).toBe(String(limit - hit));
        expect(res.headers['x-ratelimit-reset']).toMatch(/^\d{10}$/);
      }
    }
  });

  it('counts the keys of one account together: a second key does not add to the limit', async () => {
    const app = appFor(limitsWith(), principals);
    const first = caller();
    const second = caller({}, first.principal);
    for (let hit = 0; hit < 10; hit++) {
      await request(app).get('/stock-report').set('x-test-key', first.header).expect(200);
      const res = await request(app).get('/stock-report').set('x-test-key', second.header).expect(200);
      // The headers describe the account's window, whichever key asked.
      expect(res.headers['x-ratelimit-remaining']).toBe(String(20 - 2 * (hit + 1)));
    }
    for (const { header } of [first, second]) {
      const refused = await request(app).get('/stock-report').set('x-test-key', header).expect(429);
      expect(refused.headers['x-ratelimit-limit']).toBe('20');
      expect(ErrorBody.parse(refused.body).detail).toContain('this account may make 20 stock-report requests per minute');
    }
    // A key minted afterwards starts with nothing either.
    await request(app).get('/stock-report').set('x-test-key', caller({}, first.principal).header).expect(429);
    expect((await counter(`stock-report:tenant:${first.principal.tenantId}`))?.hits).toBe(23);
  });

  it('counts chat turns per account and minute: 60 by default, then 429 with the same headers and body', async () => {
    const app = appFor(limitsWith(), principals);
    const first = caller();
    const second = caller({}, first.principal);
    for (let hit = 1; hit <= 60; hit++) {
      const res = await request(app)
        .get('/chat-turns')
        .set('x-test-key', (hit % 2 === 0 ? first : second).header)
        .expect(200);
      expect(res.headers['x-ratelimit-limit']).toBe('60');
      expect(res.headers['x-ratelimit-remaining']).toBe(String(60 - hit));
    }
    const refused = await request(app).get('/chat-turns').set('x-test-key', first.header).expect(429);
    expect(refused.body).toEqual({
      detail: expect.stringMatching(
        /^Rate limit exceeded: this account may make 60 chat requests per minute, all of its API keys together\. Retry in \d+ s\.$/,
      ),
      status_code: 429,
      type: 'rate_limit_exceeded',
    });
    expect(refused.headers['x-ratelimit-reset']).toMatch(/^\d{10}$/);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // An operator override raises it for the account.
    const raised = caller({ 'chat-turns': 120 });
    const res = await request(app).get('/chat-turns').set('x-test-key', raised.header).expect(200);
    expect(res.headers['x-ratelimit-limit']).toBe('120');
  });

  it('counts accounts and products apart', async () => {
    const app = appFor(limitsWith(), principals);
    const a = caller();
    const b = caller();
    for (let hit = 0; hit < 20; hit++) await request(app).get('/stock-report').set('x-test-key', a.header).expect(200);
    await request(app).get('/stock-report').set('x-test-key', a.header).expect(429);
    await request(app).get('/analysis').set('x-test-key', a.header).expect(200);
    const other = await request(app).get('/stock-report').set('x-test-key', b.header).expect(200);
    expect(other.headers['x-ratelimit-remaining']).toBe('19');
  });

  it('applies a tenant override instead of the default', async () => {
    const app = appFor(limitsWith(), principals);
    const { header } = caller({ 'stock-report': 30 });
    for (let hit = 1; hit <= 30; hit++) {
      const res = await request(app).get('/stock-report').set('x-test-key', header).expect(200);
      expect(res.headers['x-ratelimit-limit']).toBe('30');
    }
    const refused = await request(app).get('/stock-report').set('x-test-key', header).expect(429);
    expect(refused.headers['x-ratelimit-limit']).toBe('30');
    expect(ErrorBody.parse(refused.body).detail).toContain('30 stock-report requests per minute');
  });

  it('starts a new window when the old one has ended', async () => {
    const app = appFor(limitsWith(), principals);
    const { header, principal: who } = caller();
    for (let hit = 0; hit < 20; hit++) await request(app).get('/analysis').set('x-test-key', header).expect(200);
    const full = await request(app).get('/analysis').set('x-test-key', header).expect(429);
    // Instead of waiting a minute: the window ended a moment ago.
    await pool.query("UPDATE rate_limit_counters SET reset_at = now() - interval '1 millisecond' WHERE counter_key = $1", [
      `analysis:tenant:${who.tenantId}`,
    ]);
    const fresh = await request(app).get('/analysis').set('x-test-key', header).expect(200);
    expect(fresh.headers['x-ratelimit-remaining']).toBe('19');
    expect(Number(fresh.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(Number(full.headers['x-ratelimit-reset']));
    expect((await counter(`analysis:tenant:${who.tenantId}`))?.hits).toBe(1);
  });

  it('admits exactly the limit in total across two gateway processes hitting two keys of one account at once', async () => {
    const poolB = createPool({ connectionString: db.url, applicationName: 'rate-limit-test-b', max: 10 });
    const agent = new Agent({ connections: 25 });
    const servers = await Promise.all([serve(appFor(limitsWith(), principals)), serve(appFor(limitsWith({}, poolB), principals))]);
    try {
      const { header, principal: who } = caller();
      const { header: otherKey } = caller({}, who);
      const statuses = await Promise.all(
        Array.from({ length: 300 }, async (_, index) => {
          const server = servers[index % 2] as { url: string };
          const res = await send(`${server.url}/news`, {
            dispatcher: agent,
            headers: { 'x-test-key': index % 3 === 0 ? otherKey : header },
          });
          await res.body.dump();
          return { status: res.statusCode, via: index % 2 };
        }),
      );
      const admitted = statuses.filter((s) => s.status === 200);
      expect(admitted).toHaveLength(100);
      expect(statuses.filter((s) => s.status === 429)).toHaveLength(200);
      // Both processes admitted some: they really shared one counter.
      expect(new Set(admitted.map((s) => s.via)).size).toBe(2);
      expect((await counter(`news:tenant:${who.tenantId}`))?.hits).toBe(300);
    } finally {
      await Promise.all(servers.map((server) => server.close()));
      await agent.close();
      await Promise.all(instances.splice(0).map((limits) => limits.close()));
      await poolB.end();
    }
  });

  it('fails open, with a throttled warning, when the database is unreachable', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const dead = createPool({ connectionString: 'postgresql://postgres@127.0.0.1:1/none', applicationName: 'rl-dead', max: 1 });
    try {
      const limits = createRateLimits({ pool: dead, logger: createLogger({ service: 'rl', level: 'warn', destination: sink }) });
      instances.push(limits);
      const app = appFor(limits, principals);
      const { header } = caller();
      for (let attempt = 0; attempt < 5; attempt++) {
        const res = await request(app).get('/news').set('x-test-key', header).expect(200);
        expect(res.headers['x-ratelimit-limit']).toBeUndefined();
      }
      const warnings = lines.map((line) => JSON.parse(line) as { level: string; msg: string });
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ level: 'warn', msg: expect.stringContaining('failing open') });
    } finally {
      await Promise.all(instances.splice(0).map((limits) => limits.close()));
      await dead.end();
    }
  });

  it('is a 500, not a pass, when mounted before authentication', async () => {
    const app = appFor(limitsWith(), principals);
    const res = await request(app).get('/news').expect(500);
    expect(ErrorBody.parse(res.body).type).toBe('internal_error');
  });

  it('deletes ended counter windows when sweeping, and keeps live ones', async () => {
    const limits = limitsWith();
    await pool.query(
      `INSERT INTO rate_limit_counters (counter_key, hits, reset_at) VALUES
         ('sweep:old', 5, now() - interval '1 second'), ('sweep:live', 5, now() + interval '30 seconds')`,
    );
    const swept = await limits.sweep();
    expect(swept.counters).toBeGreaterThanOrEqual(1);
    const { rows } = await pool.query<{ counter_key: string }>(
      "SELECT counter_key FROM rate_limit_counters WHERE counter_key LIKE 'sweep:%'",
    );
    expect(rows.map((row) => row.counter_key)).toEqual(['sweep:live']);
  });
});
