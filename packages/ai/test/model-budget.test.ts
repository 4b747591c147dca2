// The organisation's model allowance shared through Postgres (src/model-budget.ts): two budgets on two pools stand
// for two replicas.
import { AnalysisRequest, NewsRequest } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { errorReply, jsonReply, textReply } from '@fin/fakes';
import { createLogger } from '@fin/log';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { createPostgresModelBudget, type BudgetGrant, type CallDemand, type ModelBudget } from '../src/model-budget';
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
    await pool.query('DELETE FROM model_allowance');
    await pool.end();
  });
  afterAll(async () => {
    await db.drop();
  });

  /** A replica's budget: `requestsPerMinute` etc. per minute, each a bucket of a minute's limit refilling continuously. */
  function replica(limits: { requests: number; input: number; output: number }): ModelBudget {
    const pool = createPool({ connectionString: db.url, applicationName: 'model-budget-test', max: 4 });
    pools.push(pool);
    const budget = createPostgresModelBudget({
      pool,
      logger,
      limits: {
        [MODEL]: { requestsPerMinute: limits.requests, inputTokensPerMinute: limits.input, outputTokensPerMinute: limits.output },
      },
      interactiveShare: 0.2,
      maxSleepMs: 50,
    });
    budgets.push(budget);
    return budget;
  }

  const level = async (column: 'requests' | 'input' | 'output') =>
    (await pools[0]!.query<{ level: number }>(`SELECT ${column} AS level FROM model_allowance WHERE model = $1`, [MODEL])).rows[0]!.level;

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

  it('grants two replicas together no more than the bucket holds, and the rest as it refills, nothing lost', async () => {
    // 60 requests a minute: a bucket of 60 refilling one a second; queued calls leave 12 (the interactive share).
    const limits = { requests: 60, input: 1_000_000, output: 1_000_000 };
    const [a, b] = [replica(limits), replica(limits)];
    const started = performance.now();
    /** What the bucket can have refilled since the start: an upper bound however slowly the machine runs. */
    const refilledSince = () => Math.ceil((performance.now() - started) / 1_000);
    let granted = 0;
    const takes = Array.from({ length: 50 }, (_, index) => (index % 2 === 0 ? a : b).take(demand()));
    for (const take of takes) void take.then(() => (granted += 1)).catch(() => undefined);
    await waitFor(() => granted >= 48, { what: 'the bucket’s 48 queued calls', timeoutMs: 20_000 });
    // No more than the bucket held and has refilled since: the two replicas' takes add up, none counted twice.
    expect(granted).toBeLessThanOrEqual(48 + refilledSince());
    await Promise.all(takes);
    // The last two waited for the refill, about a second each; the bucket never went below the share kept, and
    // holds no more than what 50 takes left and the refill since added.
    expect(await level('requests')).toBeGreaterThanOrEqual(12 - 0.5);
    expect(await level('requests')).toBeLessThan(12 + refilledSince());
  });

  it('serves waiting calls fairly between tenants: a second tenant goes next, not after the first one’s backlog', async () => {
    // A bucket of 60 requests refilling one a second; queued calls may take 48 of it at once.
    const budget = replica({ requests: 60, input: 1_000_000, output: 1_000_000 });
    const order: string[] = [];
    let late: Promise<BudgetGrant>[] = [];
    const take = (tenant: string, label: string): Promise<BudgetGrant> =>
      budget.take(demand({ tenant })).then((grant) => {
        order.push(label);
        // B's 2 calls arrive once A has 48 running, its other 3 waiting: when they arrive is fixed by the grants,
        // not by the time the machine takes to make them.
        if (order.length === 48) late = [take('tenant-b', 'b0'), take('tenant-b', 'b1')];
        return grant;
      });
    const backlog = Array.from({ length: 51 }, (_, index) => take('tenant-a', `a${index}`));
    await Promise.all(backlog);
    await Promise.all(late);
    // B has less running and goes at each refill until it has as much as A: B's two calls are granted next, not
    // 52nd and 53rd as first come, first served would have it. Only A's call whose take was already under way
    // when B arrived may go first (if the bucket had refilled enough meanwhile).
    expect([
      ['b0', 'b1'],
      ['a48', 'b0', 'b1'],
    ]).toContainEqual(order.slice(48, order.indexOf('b1') + 1));
    expect(order.filter((label) => label.startsWith('a'))).toEqual(Array.from({ length: 51 }, (_, index) => `a${index}`));
  });

  it('keeps the interactive share for interactive calls: they go while queued work waits', async () => {
    // A bucket of 10 requests refilling one every 6 s; queued calls may take 8 of it and leave 2. So small a bucket
    // refills slowly next to the few statements the test waits for, so a slow machine changes no count below.
    const budget = replica({ requests: 10, input: 1_000_000, output: 1_000_000 });
    let queuedGranted = 0;
    const queued = Array.from({ length: 9 }, () => budget.take(demand()));
    for (const take of queued) void take.then(() => (queuedGranted += 1)).catch(() => undefined);
    await waitFor(() => queuedGranted >= 8, { what: 'the queued calls the bucket holds', timeoutMs: 20_000 });
    // Queued calls never take the interactive share: the 9th waits for the refill.
    expect(await level('requests')).toBeGreaterThanOrEqual(2 - 0.01);
    const interactive = Array.from({ length: 2 }, () => budget.take(demand({ priority: 'interactive' })));
    await Promise.all(interactive);
    // The interactive calls took the share the queued one may not touch, while it still waits for the refill.
    expect(queuedGranted).toBe(8);
    expect(await level('requests')).toBeLessThan(2);
  });

  it('reserves output at max_tokens and gives back what a call did not use', async () => {
    // 120 output tokens a minute: a bucket of 120 refilling two a second.
    const budget = replica({ requests: 1_000, input: 1_000_000, output: 120 });
    const first = await budget.take(demand({ outputTokens: 80, priority: 'interactive' }));
    const second = budget.take(demand({ outputTokens: 80, priority: 'interactive' }));
    expect(await grantedWithin([second], 300)).toBe(0);
    first.settle({ inputTokens: 10, outputTokens: 5 });
    // 75 tokens come back: the second call fits at once, long before the ~20 s the refill alone would take.
    expect(await grantedWithin([second], 500)).toBe(1);
    expect(await level('output')).toBeLessThan(120 - 80 - 5 + 5);
  });

  it('makes every replica wait out a 429’s retry-after, taken from the shared bucket', async () => {
    // A bucket of 600 requests refilling ten a second. A retry-after of 3 s owes 30 of them.
    const limits = { requests: 600, input: 1_000_000, output: 1_000_000 };
    const [a, b] = [replica(limits), replica(limits)];
    await a.take(demand({ priority: 'interactive' }));
    a.observe(MODEL, 429, new Headers({ 'retry-after': '3' }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Taken from the bucket every replica reads (not a block that ends and opens a fresh, full one).
    const after = await level('requests');
    expect(after).toBeGreaterThan(600 - 1 - 30 - 1);
    expect(after).toBeLessThan(600 - 1 - 30 + 10);
    const others = Array.from({ length: 5 }, () => b.take(demand({ priority: 'interactive' })));
    expect(await grantedWithin(others, 500)).toBe(5);
    // This replica sends nothing until the retry-after has passed, whatever the bucket holds.
    const local = a.take(demand({ priority: 'interactive' }));
    expect(await grantedWithin([local], 1_500)).toBe(0);
    expect(await grantedWithin([local], 2_500)).toBe(1);
  });

  it('takes the limits the API states in its headers when they differ from the configured ones', async () => {
    const budget = replica({ requests: 1_000_000, input: 1_000_000, output: 1_000_000 });
    budget.observe(
      MODEL,
      200,
      new Headers({
        'anthropic-ratelimit-requests-limit': '10',
        'anthropic-ratelimit-input-tokens-limit': '1000000',
        'anthropic-ratelimit-output-tokens-limit': '1000000',
      }),
    );
    // 10 a minute: a bucket of 10, as the headers say.
    const takes = Array.from({ length: 14 }, () => budget.take(demand({ priority: 'interactive' })));
    expect(await grantedWithin(takes, 600)).toBe(10);
  });

  it('lets calls of a model without limits go at once, and a caller that gives up stops waiting', async () => {
    const budget = replica({ requests: 1, input: 1_000_000, output: 1_000_000 });
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
