import { randomUUID } from 'node:crypto';
import { ErrorBody } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { toAppError } from '@fin/http';
import { createLogger } from '@fin/log';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import express, { type ErrorRequestHandler } from 'express';
import request from 'supertest';
import type { Principal } from '../src/auth/types';
import { createRateLimits, type PostgresRateLimits } from '../src/rate-limit/rate-limits';
import type { LimitedProduct } from '../src/rate-limit/types';

const logger = createLogger({ service: 'token-budget-test', level: 'silent' });

describe('the daily token budget', () => {
  let db: TestDatabase;
  let pool: Pool;
  const instances: PostgresRateLimits[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'token-budget-test', max: 4 });
  });
  afterAll(async () => {
    await Promise.all(instances.map((limits) => limits.close()));
    await pool.end();
    await db.drop();
  });

  /** A tenant whose account used `today` tokens today (UTC) and `yesterday` the day before. */
  async function account(today: number, yesterday = 0, limitOverrides: Record<string, number> = {}): Promise<Principal> {
    const { rows } = await pool.query<{ id: string }>('INSERT INTO tenants (name) VALUES ($1) RETURNING id', [`t-${randomUUID()}`]);
    const tenantId = rows[0]!.id;
    await pool.query(
      `INSERT INTO usage_daily (tenant_id, day, product, runs, input_tokens, cache_read_input_tokens, output_tokens)
       VALUES ($1, (now() AT TIME ZONE 'UTC')::date, 'news', 1, $2, $3, $4),
              ($1, (now() AT TIME ZONE 'UTC')::date - 1, 'analysis', 1, $5, 0, 0)`,
      [tenantId, Math.floor(today / 2), today - Math.floor(today / 2) - Math.floor(today / 10), Math.floor(today / 10), yesterday],
    );
    return { tenantId, tenantName: 'acme', keyId: randomUUID(), scopes: ['news'], limitOverrides };
  }

  function appFor(who: Principal, dailyTokenBudget?: number): express.Express {
    const limits = createRateLimits({ pool, logger, ...(dailyTokenBudget === undefined ? {} : { dailyTokenBudget }) });
    instances.push(limits);
    const app = express();
    app.use((_req, res, next) => {
      res.locals.principal = who;
      next();
    });
    for (const product of ['news', 'analysis', 'chat-turns', 'jobs'] as LimitedProduct[]) {
      app.get(`/${product}`, limits.forProduct(product), (_req, res) => {
        res.json({ ok: true });
      });
    }
    const errors: ErrorRequestHandler = (error, _req, res, _next) => {
      const appError = toAppError(error);
      res.status(appError.status).set(appError.headers).json(appError.toBody());
    };
    app.use(errors);
    return app;
  }

  it("refuses an account's new work past its budget, until midnight UTC, and lets the rest through", async () => {
    const spent = await account(1_200, 0, { 'daily-tokens': 1_000 });
    const app = appFor(spent);
    const refused = await request(app).get('/news').expect(429);
    const body = ErrorBody.parse(refused.body);
    expect(body).toMatchObject({ type: 'rate_limit_exceeded', status_code: 429 });
    expect(body.detail).toContain('1,000 model tokens per UTC day');
    expect(body.detail).toContain('has used 1,200 today');
    const midnight = new Date();
    midnight.setUTCHours(24, 0, 0, 0);
    expect(body.detail).toContain(midnight.toISOString());
    expect(refused.headers['x-token-budget-reset']).toBe(String(midnight.getTime() / 1000));
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    await request(app).get('/analysis').expect(429);
    await request(app).get('/chat-turns').expect(429);
    // Reading results, and re-attaching to a reply already being written, start no work.
    await request(app).get('/jobs').expect(200);
    await request(app).get('/chat-turns').set('Last-Event-ID', `${randomUUID()}:3`).expect(200);
  });

  it("takes the deployment's budget when the tenant has none, counts only today, and without a budget passes", async () => {
    const yesterdayHeavy = await account(100, 1_000_000);
    await request(appFor(yesterdayHeavy, 5_000)).get('/news').expect(200);
    const heavy = await account(6_000);
    await request(appFor(heavy, 5_000)).get('/news').expect(429);
    // A tenant's own budget replaces the deployment's, up or down.
    await request(appFor({ ...heavy, limitOverrides: { 'daily-tokens': 10_000 } }, 5_000))
      .get('/news')
      .expect(200);
    await request(appFor(heavy)).get('/news').expect(200);
  });
});
