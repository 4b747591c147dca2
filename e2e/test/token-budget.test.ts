import { AsyncJobResponse, ErrorBody } from '@fin/contracts';
import { jsonReply, startFakeAnthropic, startFakeFinnhub, type FakeAnthropic, type FakeFinnhub } from '@fin/fakes';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { freePort, sharedEnv, startService, startSystem, waitUntilReady, type System } from '../src/system';

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
