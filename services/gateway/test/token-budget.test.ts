import { randomUUID } from 'node:crypto';
import { ErrorBody } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { toAppError, tokenBudgetRefusal, type SpentBudget } from '@fin/http';
import { createLogger } from '@fin/log';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import express, { type ErrorRequestHandler, type RequestHandler, type Response } from 'express';
import request from 'supertest';
import type { Principal } from '../src/auth/types';
import { createRateLimits, type PostgresRateLimits } from '../src/rate-limit/rate-limits';
import type { LimitedProduct, RateLimits } from '../src/rate-limit/types';

const logger = createLogger({ service: 'token-budget-test', level: 'silent' });

/** The spent budget a request was admitted with, kept for the test's handler (the gateway passes it in the caller). */
const SPENT = new WeakMap<Response, SpentBudget>();

/** `limits` admitting `who`'s requests of `product`, as the gateway's admission runs it. */
function admitting(limits: RateLimits, product: LimitedProduct, who: Principal): RequestHandler {
  return (req, res, next) => {
    limits.admit(product, who, req, res).then((spent) => {
      if (spent !== undefined) SPENT.set(res, spent);
      next();
    }, next);
  };
}

const spentBudgetOf = (res: Response): SpentBudget | undefined => SPENT.get(res);
/** What the tests' news requests reserve. */
const ESTIMATE = 1_000;

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

  /**
   * An app whose products answer at once, or (`answer`) when and how the test says: as a product service does,
   * with the Location of the job the request made, or without one. A request let through over budget is refused
   * as a product service refuses one that would need a new job.
   */
  function appFor(
    who: Principal,
    dailyTokenBudget?: number,
    { on = pool, answer }: { on?: Pool; answer?: (res: express.Response) => Promise<void> } = {},
  ): express.Express {
    const limits = createRateLimits({
      pool: on,
      logger,
      ...(dailyTokenBudget === undefined ? {} : { dailyTokenBudget }),
      tokenEstimates: { news: ESTIMATE },
      storeTimeoutMs: 60_000,
    });
    instances.push(limits);
    const app = express();
    for (const product of ['news', 'analysis', 'chat-turns', 'jobs'] as LimitedProduct[]) {
      app.all(`/${product}`, admitting(limits, product, who), async (_req, res) => {
        const spent = spentBudgetOf(res);
        if (spent !== undefined) throw tokenBudgetRefusal(spent);
        if (answer) await answer(res);
        else res.json({ ok: true });
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
    await request(app).post('/chat-turns').expect(429);
    await request(app).get('/chat-turns').query({ message: 'Hi' }).expect(429);
    // Reading results, re-attaching to a reply already being written (GET /api/chat/stream with Last-Event-ID:
    // the message an EventSource repeats is not sent again) and following a conversation start no work.
    await request(app).get('/jobs').expect(200);
    await request(app).get('/chat-turns').query({ message: 'Hi' }).set('Last-Event-ID', `${randomUUID()}:3`).expect(200);
    await request(app).get('/chat-turns').query({ conversation_id: randomUUID() }).expect(200);
  });

  it('lets news and analysis requests past a spent budget marked (their services answer what exists), and refuses chat itself', async () => {
    const who = await account(1_200, 0, { 'daily-tokens': 1_000 });
    const limits = createRateLimits({ pool, logger, tokenEstimates: { news: ESTIMATE }, storeTimeoutMs: 60_000 });
    instances.push(limits);
    const seen: Record<string, unknown> = {};
    const app = express();
    for (const product of ['news', 'analysis', 'chat-turns'] as LimitedProduct[]) {
      app.all(`/${product}`, admitting(limits, product, who), (_req, res) => {
        seen[product] = spentBudgetOf(res);
        res.json({ answered: true });
      });
    }
    app.use(((error, _req, res, _next) => {
      const appError = toAppError(error);
      res.status(appError.status).set(appError.headers).json(appError.toBody());
    }) as ErrorRequestHandler);
    const midnight = new Date();
    midnight.setUTCHours(24, 0, 0, 0);
    const spent = { limit: 1_000, used: 1_200, held: 0, resetAt: midnight.getTime() / 1000 };
    for (const product of ['news', 'analysis']) {
      await request(app).post(`/${product}`).expect(200);
      expect(seen[product]).toEqual(spent);
    }
    // A chat turn always starts model work: refused here, without reaching the chat service.
    const chat = await request(app).post('/chat-turns').expect(429);
    expect(seen['chat-turns']).toBeUndefined();
    // The same refusal a product service gives (tokenBudgetRefusal): body and headers.
    const product = tokenBudgetRefusal(spent);
    expect(chat.body).toEqual(product.toBody());
    expect(chat.headers['x-token-budget-reset']).toBe(product.headers['X-Token-Budget-Reset']);
    expect(chat.headers['x-token-budget-limit']).toBe('1000');
    // Nothing reserved for work over budget.
    expect(await reservations(who.tenantId)).toEqual([]);
    // Under its budget, a request is not marked.
    const under = createRateLimits({ pool, logger, tokenEstimates: { news: ESTIMATE }, storeTimeoutMs: 60_000 });
    instances.push(under);
    const fresh = await account(0, 0, { 'daily-tokens': 1_000_000 });
    const plain = express();
    plain.post('/news', admitting(under, 'news', fresh), (_req, res) => {
      res.json({ spent: spentBudgetOf(res) ?? null });
    });
    expect((await request(plain).post('/news').expect(200)).body).toEqual({ spent: null });
  });

  it('is not lifted by a Last-Event-ID on a request that starts work (every product, and a new chat turn)', async () => {
    const app = appFor(await account(1_200, 0, { 'daily-tokens': 1_000 }));
    const lastEventId = `${randomUUID()}:0`;
    for (const path of ['/news', '/analysis']) {
      await request(app).post(path).set('Last-Event-ID', '0').expect(429);
      await request(app).get(path).set('Last-Event-ID', lastEventId).expect(429);
    }
    await request(app).post('/chat-turns').set('Last-Event-ID', lastEventId).expect(429);
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

  const reservations = async (tenantId: string) =>
    (
      await pool.query<{ tokens: string; job_id: string | null }>(
        'SELECT tokens::text, job_id FROM token_reservations WHERE tenant_id = $1',
        [tenantId],
      )
    ).rows;

  /** A promise and its resolve, to hold responses until the test lets them go. */
  function gate(): { opened: Promise<void>; open: () => void } {
    let open = () => {};
    const opened = new Promise<void>((resolve) => (open = resolve));
    return { opened, open };
  }

  it('admits requests arriving together while the budget has room, through two replicas: one estimate past it at most', async () => {
    // 3,500 tokens left: room for 3 estimates and half of a 4th. Admission stops once used + held reaches the
    // budget, so exactly 4 of 50 simultaneous requests are admitted (the 4th takes the budget 500 past, less than
    // one estimate), whichever replica each reaches.
    const who = await account(6_500, 0, { 'daily-tokens': 10_000 });
    const release = gate();
    let arrived = 0;
    const answer = async (res: express.Response) => {
      arrived += 1;
      await release.opened;
      res.json({ ok: true });
    };
    const second = createPool({ connectionString: db.url, applicationName: 'token-budget-test-2', max: 4 });
    try {
      const replicas = [appFor(who, undefined, { answer }), appFor(who, undefined, { on: second, answer })];
      let answered = 0;
      const responses = Array.from({ length: 50 }, (_, index) =>
        request(replicas[index % 2]!)
          .get('/news')
          .then((res) => {
            answered += 1;
            return res;
          }),
      );
      // Every request decided: the refused ones answered, the admitted ones held in the product.
      await waitFor(async () => answered + arrived === 50 && (await reservations(who.tenantId)).length === arrived, {
        what: 'every request to be admitted or refused',
      });
      expect(arrived).toBe(4);
      // While they run, their estimates are held: 6,500 used + 4,000 held.
      expect((await reservations(who.tenantId)).map((row) => Number(row.tokens))).toEqual([ESTIMATE, ESTIMATE, ESTIMATE, ESTIMATE]);
      release.open();
      const statuses = (await Promise.all(responses)).map((res) => res.status);
      expect(statuses.filter((status) => status === 200)).toHaveLength(4);
      expect(statuses.filter((status) => status === 429)).toHaveLength(46);
      // Answered without a job (no Location): each reservation is released when its response ends.
      await waitFor(async () => (await reservations(who.tenantId)).length === 0, { what: 'the reservations to be released' });
    } finally {
      await second.end();
    }
  });

  it('hands a reservation to the job the response names, and releases it when that job has already ended', async () => {
    const who = await account(0, 0, { 'daily-tokens': 10_000 });
    const job = async (status: string) =>
      (
        await pool.query<{ id: string }>(
          `INSERT INTO jobs (id, tenant_id, type, status, request, result)
           VALUES (gen_random_uuid(), $1, 'news', $2, '{}', CASE WHEN $2 = 'completed' THEN '{}'::jsonb END) RETURNING id::text`,
          [who.tenantId, status],
        )
      ).rows[0]!.id;
    const running = await job('pending');
    const ended = await job('completed');
    let next = running;
    const app = appFor(who, undefined, {
      answer: async (res) => {
        res.status(202).setHeader('Location', `/api/jobs/news/${next}/status`).json({ job_id: next });
        await Promise.resolve();
      },
    });
    await request(app).get('/news').expect(202);
    await waitFor(async () => (await reservations(who.tenantId))[0]?.job_id === running, { what: 'the reservation to be attached' });
    // A second request joined onto the same job: one reservation per job, so its own goes.
    await request(app).get('/news').expect(202);
    next = ended;
    await request(app).get('/news').expect(202);
    await waitFor(async () => (await reservations(who.tenantId)).length === 1, { what: 'the other reservations to be released' });
    expect(await reservations(who.tenantId)).toEqual([{ tokens: String(ESTIMATE), job_id: running }]);
    // Held by its job, the reservation counts: 9,500 used + 1,000 held reaches the budget.
    await pool.query(
      `INSERT INTO usage_daily (tenant_id, day, product, runs, input_tokens) VALUES ($1, (now() AT TIME ZONE 'UTC')::date, 'news', 1, 9500)
       ON CONFLICT (tenant_id, day, product) DO UPDATE SET input_tokens = 9500, cache_read_input_tokens = 0, output_tokens = 0`,
      [who.tenantId],
    );
    const refused = await request(app).get('/news').expect(429);
    expect(ErrorBody.parse(refused.body).detail).toContain('has used 9,500 today and 1,000 more is held for work in progress');
  });

  it('no longer counts an expired reservation (a gateway that died before settling it)', async () => {
    const who = await account(0, 0, { 'daily-tokens': 10_000 });
    await pool.query(
      `INSERT INTO token_reservations (id, tenant_id, product, tokens, expires_at) VALUES (gen_random_uuid(), $1, 'news', 50000, now() - interval '1 second')`,
      [who.tenantId],
    );
    await request(appFor(who)).get('/news').expect(200);
  });

  it('lets requests through when the database cannot be reached (fail open)', async () => {
    const who = await account(0, 0, { 'daily-tokens': 1 });
    const unreachable = createPool({ connectionString: 'postgresql://postgres@127.0.0.1:1/none', applicationName: 'unreachable', max: 1 });
    try {
      await request(appFor(who, undefined, { on: unreachable }))
        .get('/news')
        .expect(200);
    } finally {
      await unreachable.end();
    }
  });
});
