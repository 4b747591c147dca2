import { AsyncJobResponse, ErrorBody, JobStatusResponse } from '@fin/contracts';
import { jsonReply, startFakeAnthropic, startFakeFinnhub, type FakeAnthropic, type FakeFinnhub } from '@fin/fakes';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { UPSTREAM_MODES, freePort, sharedEnv, startService, startSystem, waitUntilReady, type System } from '../src/system';

/** What every news job of this test costs: one model call of 4,000 input and 1,000 output tokens. */
const JOB_TOKENS = 5_000;
/** Jobs the budget has whole room for; the room for half of one more is left too. */
const ROOM_FOR = 7;
const BUDGET = ROOM_FOR * JOB_TOKENS + JOB_TOKENS / 2;
const REQUESTS = 50;

/**
 * The daily token budget at its edge: 50 news requests at once, through two gateway replicas, against a budget
 * with room for 7 jobs and half of an 8th. Each gateway reserves the news estimate (set to what a job costs here)
 * per admitted request, under the account's lock in Postgres, so the account is admitted until used + reserved
 * reaches the budget: exactly 8 requests (N + 1, the last one taking the budget past by less than one estimate),
 * the other 42 refused with 429, whichever replica each reached. The reservations end with their jobs.
 */
describe('the daily token budget: 50 requests at once at the edge of a budget, through two gateways', () => {
  let db: TestDatabase;
  let claude: FakeAnthropic;
  let finnhub: FakeFinnhub;
  let system: System;
  let gateways: string[];
  let key: string;
  let pool: pg.Pool;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    claude = await startFakeAnthropic({
      handler: () =>
        jsonReply(
          { news: [] },
          { usage: { inputTokens: 4_000, outputTokens: 1_000, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 } },
        ),
    });
    finnhub = await startFakeFinnhub({ token: 'finnhub-e2e-token' });
    const env = {
      ...sharedEnv({ databaseUrl: db.url, anthropicUrl: claude.url, finnhubUrl: finnhub.apiBaseUrl, finnhubToken: 'finnhub-e2e-token' }),
      DAILY_TOKEN_BUDGET_ESTIMATE_NEWS: String(JOB_TOKENS),
    };
    system = await startSystem(env);
    const first = system.services.find((service) => service.name === 'gateway')!;
    const port = await freePort();
    const second = startService('gateway', 'gateway', { ...first.env, PORT: String(port) });
    system.services.push(second);
    await waitUntilReady(`http://127.0.0.1:${port}/readyz`, second);
    gateways = [system.gatewayUrl, `http://127.0.0.1:${port}`];
    key = system.tenantKey('acme');
    system.admin(['limits', 'set', '--tenant', 'acme', '--product', 'daily-tokens', '--per-day', String(BUDGET)]);
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([claude?.close(), finnhub?.close(), pool?.end()]);
    await db?.drop();
  });

  /** A symbol of its own per request (letters only), so that no two requests share a job or a cached result. */
  const symbol = (index: number) => `Q${String.fromCharCode(65 + Math.floor(index / 26))}${String.fromCharCode(65 + (index % 26))}`;

  it(`admits ${ROOM_FOR + 1} of ${REQUESTS}, and the day ends less than one job's estimate past the budget`, async () => {
    const answers = await Promise.all(
      Array.from({ length: REQUESTS }, async (_, index) => {
        const res = await fetch(`${gateways[index % 2]!}/api/products/news`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'X-API-Key': key },
          body: JSON.stringify({ symbols: [symbol(index)], n: 1 }),
        });
        return { status: res.status, body: await res.json() };
      }),
    );
    const admitted = answers.filter((answer) => answer.status === 202).map((answer) => AsyncJobResponse.parse(answer.body));
    const refused = answers.filter((answer) => answer.status === 429).map((answer) => ErrorBody.parse(answer.body));
    expect(admitted).toHaveLength(ROOM_FOR + 1);
    expect(refused).toHaveLength(REQUESTS - ROOM_FOR - 1);
    for (const body of refused) expect(body.detail).toContain(`may use ${BUDGET.toLocaleString('en')} model tokens per UTC day`);

    // Every admitted job runs to its end; their reservations end with them.
    const ids = admitted.map((envelope) => envelope.job_id);
    await waitFor(
      async () =>
        (await pool.query("SELECT 1 FROM jobs WHERE id = ANY($1::uuid[]) AND status = 'completed'", [ids])).rowCount === ids.length,
      { timeoutMs: 60_000, what: 'the admitted jobs to complete' },
    );
    await waitFor(async () => (await pool.query('SELECT 1 FROM token_reservations')).rowCount === 0, {
      what: 'the reservations to be settled',
    });
    const { rows } = await pool.query<{ used: string; runs: number }>(
      `SELECT (input_tokens + cache_creation_input_tokens + cache_read_input_tokens + output_tokens)::text AS used, runs
         FROM usage_daily WHERE product = 'news' AND day = (now() AT TIME ZONE 'UTC')::date`,
    );
    expect(rows).toEqual([{ used: String((ROOM_FOR + 1) * JOB_TOKENS), runs: ROOM_FOR + 1 }]);
    const overshoot = Number(rows[0]!.used) - BUDGET;
    expect(overshoot).toBeGreaterThan(0);
    expect(overshoot).toBeLessThan(JOB_TOKENS);

    // Spent: the next request is refused, on either gateway, and says what was used (once a refusal a gateway
    // repeats without asking the database, for up to a second, has aged).
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    for (const gateway of gateways) {
      const res = await fetch(`${gateway}/api/products/news`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-API-Key': key },
        body: JSON.stringify({ symbols: ['AAPL'] }),
      });
      expect(res.status).toBe(429);
      expect(ErrorBody.parse(await res.json()).detail).toContain(`has used ${((ROOM_FOR + 1) * JOB_TOKENS).toLocaleString('en')} today`);
    }
  });
});

/**
 * A spent budget refuses new work, not answers that spend nothing: a request the cache answers passes. The gateway
 * lets a news, stock-report or analysis request past a spent budget with the spent budget in the caller's signed
 * identity, and the product service answers it from the cache (or a job in flight, or a replay) or refuses it with
 * the gateway's 429. Through both start-ups: the services as processes of their own, and npm start's one process.
 */
describe.each(UPSTREAM_MODES)('a spent daily token budget, services %s', (upstream) => {
  let db: TestDatabase;
  let claude: FakeAnthropic;
  let finnhub: FakeFinnhub;
  let system: System;
  let key: string;
  let pool: pg.Pool;
  /** Less than one job: the first request is admitted, and its job spends the budget. */
  const budget = JOB_TOKENS / 2;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    claude = await startFakeAnthropic({
      handler: () =>
        jsonReply(
          { news: [] },
          { usage: { inputTokens: 4_000, outputTokens: 1_000, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 } },
        ),
    });
    finnhub = await startFakeFinnhub({ token: 'finnhub-e2e-token' });
    const env = {
      ...sharedEnv({ databaseUrl: db.url, anthropicUrl: claude.url, finnhubUrl: finnhub.apiBaseUrl, finnhubToken: 'finnhub-e2e-token' }),
      DAILY_TOKEN_BUDGET_ESTIMATE_NEWS: String(JOB_TOKENS),
    };
    system = await startSystem(env, {}, { upstream, products: ['news', 'stock-report', 'analysis', 'chat'] });
    key = system.tenantKey('acme');
    system.admin(['limits', 'set', '--tenant', 'acme', '--product', 'daily-tokens', '--per-day', String(budget)]);
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([claude?.close(), finnhub?.close(), pool?.end()]);
    await db?.drop();
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${system.gatewayUrl}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-API-Key': key, ...headers },
      body: JSON.stringify(body),
    });

  it("answers a cached request, refuses every product's new work with the same 429, and ignores a client-sent marker", async () => {
    const cachedRequest = { symbols: ['AAPL'], n: 3 };
    const accepted = await post('/api/products/news', cachedRequest);
    expect(accepted.status).toBe(202);
    const job = AsyncJobResponse.parse(await accepted.json());
    await waitFor(
      async () =>
        JobStatusResponse.parse(await (await fetch(`${system.gatewayUrl}${job.status_url}`, { headers: { 'X-API-Key': key } })).json())
          .status === 'completed',
      { timeoutMs: 30_000, what: 'the news job to complete' },
    );
    await waitFor(async () => (await pool.query('SELECT 1 FROM token_reservations')).rowCount === 0, {
      what: 'the reservation to be settled',
    });

    // Spent (5,000 used of 2,500): the cached request is answered from the cache, and again.
    for (let time = 0; time < 2; time++) {
      const hit = await post('/api/products/news', cachedRequest);
      expect(hit.status).toBe(200);
      expect(((await hit.json()) as { from_cache: boolean }).from_cache).toBe(true);
    }

    const jobsBefore = Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM jobs')).rows[0]!.n);
    const midnight = new Date();
    midnight.setUTCHours(24, 0, 0, 0);
    const attempts: [string, unknown, Record<string, string>][] = [
      ['/api/products/news', { symbols: ['MSFT'] }, {}],
      // The header the gateway signs the spent budget in, sent by the client (empty, or made up): removed.
      ['/api/products/news', { symbols: ['MSFT'] }, { 'X-Fin-Token-Budget-Spent': '' }],
      ['/api/products/news', { symbols: ['MSFT'] }, { 'X-Fin-Token-Budget-Spent': '999999999:0:0:0' }],
      // A fresh run of a cached request is new work.
      ['/api/products/news', cachedRequest, { 'Cache-Control': 'no-cache' }],
      ['/api/products/stock-report', { symbols: ['AAPL'] }, {}],
      ['/api/analysis', { prompt: 'Is AAPL expensive?' }, {}],
      ['/api/analysis', { prompt: 'Is AAPL expensive?', output_format: { type: 'markdown', stream: true } }, {}],
      ['/api/chat', { message: 'Hello', stream: false }, {}],
      ['/api/chat', { message: 'Hello' }, { 'X-Fin-Token-Budget-Spent': '' }],
    ];
    for (const [path, body, headers] of attempts) {
      const res = await post(path, body, headers);
      expect({ path, headers, status: res.status }).toEqual({ path, headers, status: 429 });
      const refusal = ErrorBody.parse(await res.json());
      expect(refusal).toMatchObject({ type: 'rate_limit_exceeded', status_code: 429 });
      expect(refusal.detail).toContain(`may use ${budget.toLocaleString('en')} model tokens per UTC day`);
      expect(refusal.detail).toContain(`has used ${JOB_TOKENS.toLocaleString('en')} today`);
      expect(res.headers.get('x-token-budget-reset')).toBe(String(midnight.getTime() / 1000));
      expect(res.headers.get('x-token-budget-limit')).toBe(String(budget));
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    // Nothing was created for them, and nothing was reserved.
    expect(Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM jobs')).rows[0]!.n)).toBe(jobsBefore);
    expect((await pool.query('SELECT 1 FROM token_reservations')).rowCount).toBe(0);
  });
});
