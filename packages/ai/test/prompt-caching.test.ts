// Prompt caching as the engine uses it, against the fake Messages API that bills like the real one: where the
// breakpoints go, that each call reads what the one before wrote, that a run's last call stops writing once the
// engine has seen that nothing follows it, and that caching off sends no cache_control at all.
import { StockReportRequest } from '@fin/contracts';
import { jsonReply, textReply, toolUseReply, type FakeAnthropic, type MessagesRequestBody } from '@fin/fakes';
import { type AiEngine } from '../src';
import { TAIL_WRITE_BREAK_EVEN, TailWritePolicy } from '../src/cache-policy';
import { drain, scriptedEngine } from './helpers';

const report = {
  detailed_analysis: [
    // No figures: the engine's figure check would remove figures no tool gave (fundamentals/report.ts).
    { title: 'Growth', keyMetric: 'Revenue growth', implications: ['a'], investmentThesis: 't', category: 'growth' },
    { title: 'Margins', keyMetric: 'Net margin', implications: ['b'], investmentThesis: 't', category: 'profitability' },
    { title: 'Risk', keyMetric: 'Beta', implications: ['c'], investmentThesis: 't', category: 'risk' },
  ],
  quick_insights: [{ text: 'One.' }, { text: 'Two.' }],
};

/** Where a request's breakpoints are: 'system', and 'messages.<index>' for each marked message. */
function breakpoints(body: MessagesRequestBody): string[] {
  const marks: string[] = [];
  if (Array.isArray(body.system) && body.system.some((block) => block.cache_control)) marks.push('system');
  body.messages.forEach((message, index) => {
    if (typeof message.content !== 'string' && message.content.some((block) => block.cache_control)) marks.push(`messages.${index}`);
  });
  return marks;
}

/** A stock report run of three calls: two rounds of market_data, then the answer. */
function scriptReport(fake: FakeAnthropic): void {
  fake.reply(
    toolUseReply('market_data', { symbol: 'AAPL', kind: 'overview' }),
    toolUseReply('market_data', { symbol: 'AAPL', kind: 'news' }),
    jsonReply(report),
  );
}

describe('prompt caching through the engine', () => {
  let fake: FakeAnthropic;
  let engine: AiEngine;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ fake, engine, close } = await scriptedEngine());
  });
  afterAll(() => close());

  it('marks the shared prefix and the conversation, and each round reads what the previous one wrote', async () => {
    fake.reset();
    scriptReport(fake);
    const { usage } = await engine.stockReport(StockReportRequest.parse({ symbols: ['AAPL'] }));
    const bodies = fake.requests.map((request) => request.body!);
    // Round 1: the system prompt, and the brief (the last message; no earlier user turn). Later rounds: the
    // turn the previous round wrote, and their own last message.
    expect(bodies.map(breakpoints)).toEqual([
      ['system', 'messages.0'],
      ['system', 'messages.0', 'messages.2'],
      ['system', 'messages.2', 'messages.4'],
    ]);
    expect(usage.modelCalls).toBe(3);
    expect(usage.cacheReadInputTokens).toBeGreaterThan(0);
    expect(usage.cacheCreationInputTokens).toBeGreaterThan(0);

    // A second report reads the tools and system prompt the first one wrote, from its first call on.
    fake.reset(); // (the fake's cache too: the second report is made twice, on an empty and on a warm cache)
    scriptReport(fake);
    const cold = (await engine.stockReport(StockReportRequest.parse({ symbols: ['MSFT'] }))).usage;
    scriptReport(fake);
    const warm = (await engine.stockReport(StockReportRequest.parse({ symbols: ['NVDA'] }))).usage;
    expect(warm.cacheReadInputTokens).toBeGreaterThan(cold.cacheReadInputTokens + 1_000);
    expect(warm.inputTokens + warm.cacheCreationInputTokens).toBeLessThan(cold.inputTokens + cold.cacheCreationInputTokens - 1_000);
  });

  it('stops writing at the call after which runs of the product have ended', async () => {
    // The runs so far ended after their third call; after a few more, the third call stops writing its tail.
    for (let run = 0; run < 3; run++) {
      fake.reset();
      scriptReport(fake);
      await engine.stockReport(StockReportRequest.parse({ symbols: ['AAPL'] }));
    }
    const last = fake.requests.at(-1)!.body!;
    expect(breakpoints(last)).toEqual(['system', 'messages.2']);
    // The first two calls still write (every run went on after them).
    expect(breakpoints(fake.requests[1]!.body!)).toEqual(['system', 'messages.0', 'messages.2']);
  });

  it('reads a chat conversation from its previous turn', async () => {
    fake.reset();
    const history = [
      { role: 'user' as const, content: `Tell me about Apple. ${'Apple designs phones and computers. '.repeat(120)}` },
      { role: 'assistant' as const, content: 'Apple is a large technology company.' },
    ];
    fake.reply(textReply('First.'), textReply('Second.'));
    const first = await drain(engine.chat({ history, message: 'And its margins?' }));
    const second = await drain(
      engine.chat({
        history: [...history, { role: 'user', content: 'And its margins?' }, { role: 'assistant', content: 'First.' }],
        message: 'And Microsoft?',
      }),
    );
    const usageOf = (items: typeof first) => {
      const result = items.at(-1);
      if (result?.kind !== 'result') throw new Error('no result');
      return result.result.usage;
    };
    expect(usageOf(first).cacheCreationInputTokens).toBeGreaterThan(1_024);
    // The second turn reads everything up to the first turn's question, and writes only what is new.
    expect(usageOf(second).cacheReadInputTokens).toBe(usageOf(first).cacheCreationInputTokens + usageOf(first).cacheReadInputTokens);
    expect(usageOf(second).cacheCreationInputTokens).toBeLessThan(50);
  });
});

describe('prompt caching off', () => {
  it('sends no cache_control at all', async () => {
    const { fake, engine, close } = await scriptedEngine({ AI_PROMPT_CACHE: 'false' });
    try {
      scriptReport(fake);
      const { usage } = await engine.stockReport(StockReportRequest.parse({ symbols: ['AAPL'] }));
      for (const request of fake.requests) expect(JSON.stringify(request.body)).not.toContain('cache_control');
      expect(usage).toMatchObject({ cacheCreationInputTokens: 0, cacheReadInputTokens: 0, modelCalls: 3 });
    } finally {
      await close();
    }
  });
});

describe('TailWritePolicy', () => {
  it('writes until runs show nothing follows a call, and keeps writing where runs go on', () => {
    const policy = new TailWritePolicy();
    const run = (calls: number) => {
      const cacheRun = policy.start('news');
      const writes = Array.from({ length: calls }, () => cacheRun.nextCallWrites());
      cacheRun.finish();
      return writes;
    };
    expect(run(2)).toEqual([true, true]);
    expect(run(2)).toEqual([true, true]);
    expect(run(2)).toEqual([true, true]);
    // Three runs ended after the second call: (0 + 1) ÷ (3 + 1) = 0.25 is under the break-even.
    expect(TAIL_WRITE_BREAK_EVEN).toBeCloseTo(0.278, 3);
    expect(run(2)).toEqual([true, false]);
    // A run that goes on past the second call is counted too: the share rises with such runs.
    for (let index = 0; index < 4; index++) run(3);
    expect(policy.goesOnAfter('news', 1)).toBeCloseTo(5 / 9, 5);
    expect(run(3)).toEqual([true, true, false]);
  });

  it("always writes a chat turn's first call: the conversation's next turn reads it", () => {
    const policy = new TailWritePolicy();
    for (let turn = 0; turn < 10; turn++) {
      const cacheRun = policy.start('chat', { firstCallRead: true });
      expect(cacheRun.nextCallWrites()).toBe(true);
      cacheRun.finish();
    }
    expect(policy.goesOnAfter('chat', 0)).toBeLessThan(TAIL_WRITE_BREAK_EVEN);
  });
});
