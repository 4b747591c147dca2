// The organisation's model allowance shared through Postgres (src/model-budget.ts): two budgets on two pools stand
// for two replicas.
import { AnalysisRequest, NewsRequest } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { errorReply, jsonReply, textReply } from '@fin/fakes';
import { createLogger } from '@fin/log';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { createPostgresModelBudget, type CallDemand, type ModelBudget } from '../src/model-budget';
import { parseConfig } from '@fin/config';
import { aiConfigShape, createAiEngine } from '../src';
import { drain, scriptedEngine, silentLogger } from './helpers';

const logger = createLogger({ service: 'model-budget-test', level: 'silent' });
const MODEL = 'claude-haiku-5-5';

describe('the shared model budget', () => {
  let db: TestDatabase;
  const pools: Pool[] = [];
  const budgets: ModelBudget[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => {
    await Promise.all(budgets.splice(0).map((budget) => budget.close()));
    await Promise.all(pools.splice(0).map((pool) => pool.end()));
    const pool = createPool({ connectionString: db.url, applicationName: 'model-budget-test', max: 1 });
    await pool.query('DELETE FROM model_budget');
    await pool.end();
  });
  afterAll(async () => {
    await db.drop();
  });

  /** A replica's budget: `requestsPerMinute` etc. per minute, windows of `windowMs`. */
  function replica(limits: { requests: number; input: number; output: number }, windowMs = 600): ModelBudget {
    const pool = createPool({ connectionString: db.url, applicationName: 'model-budget-test', max: 4 });
    pools.push(pool);
    const budget = createPostgresModelBudget({
      pool,
      logger,
      limits: {
        [MODEL]: { requestsPerMinute: limits.requests, inputTokensPerMinute: limits.input, outputTokensPerMinute: limits.output },
      },
      windowMs,
      interactiveShare: 0.2,
      maxSleepMs: 50,
    });
    budgets.push(budget);
    return budget;
  }

  const demand = (overrides: Partial<CallDemand> = {}): CallDemand => ({
    model: MODEL,
    inputTokens: 10,
    outputTokens: 10,
    priority: 'queued',
    ...overrides,
  });

  /** How many of `calls` takes are granted within `ms`. */
  async function grantedWithin(takes: Promise<unknown>[], ms: number): Promise<number> {
    let granted = 0;
    for (const take of takes) void take.then(() => (granted += 1)).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, ms));
    return granted;
  }

  it('grants two replicas together no more than a window allows, and the rest in later windows, nothing lost', async () => {
    // 300 requests a minute in windows of 2 s: 10 per window; queued calls may take 8 of them.
    const limits = { requests: 300, input: 1_000_000, output: 1_000_000 };
    const [a, b] = [replica(limits, 2_000), replica(limits, 2_000)];
    const takes = Array.from({ length: 12 }, (_, index) => (index % 2 === 0 ? a : b).take(demand()));
    expect(await grantedWithin(takes, 500)).toBe(8);
    await Promise.all(takes);
    const { rows } = await pools[0]!.query<{ points: number }>("SELECT points FROM model_budget WHERE key LIKE '%:requests:%'");
    expect(rows.reduce((sum, row) => sum + row.points, 0)).toBeLessThanOrEqual(8);
  });

  it('serves waiting calls fairly between tenants: a second tenant goes next, not after the first one’s backlog', async () => {
    // 300 requests a minute in windows of 1 s: 5 a window, 4 for queued calls.
    const budget = replica({ requests: 300, input: 1_000_000, output: 1_000_000 }, 1_000);
    const order: string[] = [];
    const take = (tenant: string, label: string) =>
      budget.take(demand({ tenant })).then((grant) => {
        order.push(label);
        return grant;
      });
    // Tenant A's 12 calls wait first (4 are granted at once and keep running); then B's 2 arrive.
    const backlog = Array.from({ length: 12 }, (_, index) => take('tenant-a', `a${index}`));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const late = [take('tenant-b', 'b0'), take('tenant-b', 'b1')];
    await Promise.all([...backlog, ...late]);
    // B has nothing running and goes at the next window, then a call each in turn: B's second is the next
    // but one, not the 13th and 14th as first come, first served would have it.
    expect(order.slice(0, 4)).toEqual(['a0', 'a1', 'a2', 'a3']);
    expect(order[4]).toBe('b0');
    expect(order.indexOf('b1')).toBeLessThanOrEqual(9);
    expect(order.filter((label) => label.startsWith('a'))).toEqual(Array.from({ length: 12 }, (_, index) => `a${index}`));
  });

  it('keeps the interactive share for interactive calls: they go while queued work waits', async () => {
    const budget = replica({ requests: 1_000, input: 1_000_000, output: 1_000_000 }, 2_000);
    // 33 requests per 2 s window; queued calls may take 26.
    const queued = Array.from({ length: 40 }, () => budget.take(demand()));
    expect(await grantedWithin(queued, 500)).toBe(26);
    const interactive = Array.from({ length: 5 }, () => budget.take(demand({ priority: 'interactive' })));
    expect(await grantedWithin(interactive, 500)).toBe(5);
  });

  it('reserves output at max_tokens and gives back what a call did not use', async () => {
    // 2,000 output tokens a minute: 100 per 3 s window.
    const budget = replica({ requests: 1_000, input: 1_000_000, output: 2_000 }, 3_000);
    const first = await budget.take(demand({ outputTokens: 80, priority: 'interactive' }));
    const second = budget.take(demand({ outputTokens: 80, priority: 'interactive' }));
    expect(await grantedWithin([second], 300)).toBe(0);
    first.settle({ inputTokens: 10, outputTokens: 5 });
    // 75 tokens come back: the second call fits in the same window.
    expect(await grantedWithin([second], 500)).toBe(1);
  });

  it('makes every replica wait out a 429’s retry-after, taken from the shared window rather than ending it', async () => {
    // 600 requests a minute in windows of 2 s: 20 a window. A retry-after of 1 s owes 10 of them.
    const limits = { requests: 600, input: 1_000_000, output: 1_000_000 };
    const [a, b] = [replica(limits, 2_000), replica(limits, 2_000)];
    await a.take(demand({ priority: 'interactive' }));
    a.observe(MODEL, 429, new Headers({ 'retry-after': '1' }));
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The other replica still has the rest of the window (less what the retry-after owes): the window goes on.
    const others = Array.from({ length: 9 }, () => b.take(demand({ priority: 'interactive' })));
    expect(await grantedWithin(others, 500)).toBe(9);
    const over = b.take(demand({ priority: 'interactive' }));
    expect(await grantedWithin([over], 500)).toBe(0);
    // This replica waits the retry-after out itself.
    const local = a.take(demand({ priority: 'interactive' }));
    expect(await grantedWithin([local], 300)).toBe(0);
    await Promise.all([over, local]);
    const { rows } = await pools[0]!.query<{ points: number }>("SELECT points FROM model_budget WHERE key LIKE '%:requests:%'");
    expect(rows[0]!.points).toBeLessThanOrEqual(20);
  });

  it('takes the limits the API states in its headers when they differ from the configured ones', async () => {
    const budget = replica({ requests: 1_000_000, input: 1_000_000, output: 1_000_000 }, 3_000);
    budget.observe(
      MODEL,
      200,
      new Headers({
        'anthropic-ratelimit-requests-limit': '100',
        'anthropic-ratelimit-input-tokens-limit': '1000000',
        'anthropic-ratelimit-output-tokens-limit': '1000000',
      }),
    );
    // 100 a minute: 5 per 3 s window.
    const takes = Array.from({ length: 8 }, () => budget.take(demand({ priority: 'interactive' })));
    expect(await grantedWithin(takes, 500)).toBe(5);
  });

  it('lets calls of a model without limits go at once, and a caller that gives up stops waiting', async () => {
    const budget = replica({ requests: 1, input: 1_000_000, output: 1_000_000 }, 60_000);
    await budget.take(demand({ model: 'claude-sonnet-5-5' }));
    const controller = new AbortController();
    await budget.take(demand({ priority: 'interactive' }));
    const waiting = budget.take(demand({ priority: 'interactive', signal: controller.signal }));
    controller.abort(new Error('client left'));
    await expect(waiting).rejects.toThrow('client left');
  });
});

describe('the engine and the shared model budget', () => {
  /** A budget that grants at once and records what it was asked and told. */
  function recordingBudget({ governs = false } = {}) {
    const taken: CallDemand[] = [];
    const settled: ({ inputTokens: number; outputTokens: number } | undefined)[] = [];
    const observed: number[] = [];
    const budget: ModelBudget = {
      take: (demand) => {
        taken.push(demand);
        return Promise.resolve({ settle: (used) => settled.push(used) });
      },
      observe: (_model, status) => observed.push(status),
      governs: () => governs,
      close: () => Promise.resolve(),
    };
    return { budget, taken, settled, observed };
  }

  it('sends a call the API refused with a 429 back to the budget, its share returned, instead of sleeping in the SDK', async () => {
    const record = recordingBudget({ governs: true });
    // AI_MAX_RETRIES 2: the SDK would retry the 429 itself after its retry-after (30 s) without the budget.
    const { fake, engine, close } = await scriptedEngine({ AI_MAX_RETRIES: '2' }, { budget: record.budget });
    try {
      fake.reply(errorReply('rate_limit_error', { retryAfterSeconds: 30 }), jsonReply({ news: [] }));
      const waits: boolean[] = [];
      const started = Date.now();
      await engine.news(NewsRequest.parse({ symbols: ['AAPL'] }), { onModelWait: (waiting) => waits.push(waiting) });
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(fake.requests).toHaveLength(2);
      // Taken twice, the refused call's share given back whole; the time limit stood still for both waits.
      expect(record.taken).toHaveLength(2);
      expect(record.settled[0]).toEqual({ inputTokens: 0, outputTokens: 0 });
      expect(waits).toEqual([true, false, true, false]);
      expect(record.observed).toEqual([429, 200]);
    } finally {
      await close();
    }
  });

  it('lets the SDK retry a 429 of a model the budget does not govern', async () => {
    const record = recordingBudget({ governs: false });
    const { fake, engine, close } = await scriptedEngine({ AI_MAX_RETRIES: '2' }, { budget: record.budget });
    try {
      fake.reply(errorReply('rate_limit_error', { retryAfterSeconds: 0 }), jsonReply({ news: [] }));
      await engine.news(NewsRequest.parse({ symbols: ['AAPL'] }));
      expect(fake.requests).toHaveLength(2);
      expect(record.taken).toHaveLength(1);
    } finally {
      await close();
    }
  });

  it('takes every call’s share before sending it (queued for a job, interactive for a stream) and settles it with what the call counted', async () => {
    const record = recordingBudget();
    const { fake, engine, close } = await scriptedEngine({ AI_MAX_OUTPUT_TOKENS: '3000' }, { budget: record.budget });
    try {
      const usage = { inputTokens: 1_200, outputTokens: 90, cacheReadInputTokens: 5_000, cacheCreationInputTokens: 300 };
      fake.reply(textReply('Apple is a large company that sells phones and services around the world.', { usage }));
      const waits: boolean[] = [];
      await engine.analysis(AnalysisRequest.parse({ prompt: 'Apple?' }), { onModelWait: (waiting) => waits.push(waiting) });
      // The job's time limit stands still from before the call asks for its share until the share is given.
      expect(waits).toEqual([true, false]);
      fake.reply(textReply('Apple is a large company that sells phones and services around the world.', { usage }));
      await drain(engine.analysisStream(AnalysisRequest.parse({ prompt: 'Apple?', output_format: { stream: true } })));
      expect(record.taken.map(({ priority, outputTokens, model }) => ({ priority, outputTokens, model }))).toEqual([
        { priority: 'queued', outputTokens: 3_000, model: fake.requests[0]?.body?.model },
        { priority: 'interactive', outputTokens: 3_000, model: fake.requests[1]?.body?.model },
      ]);
      expect(record.taken[0]?.inputTokens).toBeGreaterThan(0);
      // Cache reads do not count towards the input limit; cache writes do.
      expect(record.settled).toEqual([
        { inputTokens: 1_500, outputTokens: 90 },
        { inputTokens: 1_500, outputTokens: 90 },
      ]);
      expect(record.observed).toEqual([200, 200]);
    } finally {
      await close();
    }
  });

  it('counts every call of a streamed analysis as interactive, json_schema ones included, and a job’s as queued', async () => {
    const record = recordingBudget();
    const engine = await createAiEngine({
      config: parseConfig(aiConfigShape, { AI_OFFLINE: 'true', AI_WEB_SEARCH: 'false' }),
      logger: silentLogger,
      budget: record.budget,
    });
    try {
      const schema = { summary: 'string', score: 'number' };
      await drain(
        engine.analysisStream(
          AnalysisRequest.parse({ prompt: 'Score TSLA.', output_format: { type: 'json_schema', schema, stream: true } }),
        ),
      );
      const streamed = record.taken.splice(0).map(({ priority }) => priority);
      expect(streamed.length).toBeGreaterThan(0);
      expect(new Set(streamed)).toEqual(new Set(['interactive']));
      await engine.analysis(AnalysisRequest.parse({ prompt: 'Score TSLA.', output_format: { type: 'json_schema', schema } }));
      const queued = record.taken.map(({ priority }) => priority);
      expect(queued.length).toBeGreaterThan(0);
      expect(new Set(queued)).toEqual(new Set(['queued']));
    } finally {
      await engine.close();
    }
  });
});
