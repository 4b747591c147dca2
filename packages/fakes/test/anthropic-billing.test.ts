// The fake Messages API refuses what the real one refuses, and bills like it: prompt caching by Anthropic's rules
// (@fin/offline prompt-cache.ts), tokens by the documented approximation, web search results at their size.
import Anthropic, { BadRequestError } from '@anthropic-ai/sdk';
import type { MessageCreateParamsNonStreaming, Usage } from '@anthropic-ai/sdk/resources/messages/messages';
import { countTokens, startFakeAnthropic, textReply, WEB_SEARCH_RESULT_TOKENS, webSearch, type FakeAnthropic } from '../src';

const MODEL = 'claude-sonnet-5-5';
const CACHE = { type: 'ephemeral' } as const;
const TOOL = { name: 'market_data', description: 'Market data for a symbol.', input_schema: { type: 'object' as const, properties: {} } };
/** About 1,600 tokens: over Sonnet's 1,024-token minimum on its own. */
const LONG_SYSTEM = 'You are a careful analyst who reads every filing and cites its figures exactly. '.repeat(110);

let clock = 1_000_000;
let fake: FakeAnthropic;
let client: Anthropic;

beforeAll(async () => {
  fake = await startFakeAnthropic({ now: () => clock });
  client = new Anthropic({ apiKey: 'key-a', baseURL: fake.url, maxRetries: 0, logLevel: 'off' });
});
afterAll(() => fake.close());
beforeEach(() => {
  fake.reset();
  fake.setHandler(() => textReply('Noted.'));
});

function ask(overrides: Partial<MessageCreateParamsNonStreaming> = {}): MessageCreateParamsNonStreaming {
  return { model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'Hello' }], ...overrides };
}

async function refusal(body: MessageCreateParamsNonStreaming): Promise<{ status: number; type: string; message: string }> {
  const error = await client.messages.create(body).then(
    () => undefined,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(BadRequestError);
  const { status, error: payload } = error as BadRequestError & { error: { error: { type: string; message: string } } };
  return { status, type: payload.error.type, message: payload.error.message };
}

const toolTurns: MessageCreateParamsNonStreaming['messages'] = [
  { role: 'user', content: 'Quote AAPL' },
  { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'market_data', input: {} }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '{"price":1}' }] },
];

describe('requests the real API refuses', () => {
  it('refuses tool_use and tool_result blocks in a request that defines no tools (a repair call with tools: [])', async () => {
    for (const tools of [undefined, []]) {
      expect(await refusal(ask({ messages: toolTurns, ...(tools ? { tools } : {}) }))).toEqual({
        status: 400,
        type: 'invalid_request_error',
        message: 'Requests which include `tool_use` or `tool_result` blocks must define tools.',
      });
    }
    // With the tools, and tool_choice none, the same conversation is answered.
    await expect(client.messages.create(ask({ messages: toolTurns, tools: [TOOL], tool_choice: { type: 'none' } }))).resolves.toBeDefined();
  });

  it('refuses more than 4 cache_control breakpoints', async () => {
    const blocks = Array.from({ length: 5 }, (_, index) => ({ type: 'text' as const, text: `part ${index}`, cache_control: CACHE }));
    expect((await refusal(ask({ system: blocks }))).message).toBe('A maximum of 4 blocks with cache_control may be provided. Found 5.');
    await expect(client.messages.create(ask({ system: blocks.slice(0, 4) }))).resolves.toBeDefined();
  });

  it('refuses a tool_choice without tools, or naming a tool that is not offered', async () => {
    expect((await refusal(ask({ tool_choice: { type: 'auto' } }))).message).toBe(
      'tool_choice: tool_choice may only be specified while providing tools.',
    );
    expect(
      (await refusal(ask({ model: 'claude-haiku-4-5', tools: [TOOL], tool_choice: { type: 'tool', name: 'web_fetch' } }))).message,
    ).toBe("tool_choice.name: Tool 'web_fetch' not found in tools.");
  });

  it('refuses a tool whose name is outside the documented pattern', async () => {
    expect((await refusal(ask({ tools: [{ ...TOOL, name: 'market data' }] }))).message).toBe(
      "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'",
    );
    expect((await refusal(ask({ tools: [{ ...TOOL, name: 'x'.repeat(129) }] }))).type).toBe('invalid_request_error');
    await expect(client.messages.create(ask({ tools: [{ ...TOOL, name: 'sec_filings' }] }))).resolves.toBeDefined();
  });

  it('refuses thinking together with a tool_choice that forces tool use', async () => {
    const message = (
      await refusal(ask({ model: 'claude-haiku-5-5', tools: [TOOL], tool_choice: { type: 'any' }, thinking: { type: 'adaptive' } }))
    ).message;
    expect(message).toBe('Thinking may not be enabled when tool_choice forces tool use.');
  });

  it('refuses a 1-hour breakpoint after a 5-minute one, and a breakpoint on empty text', async () => {
    const ordered = await refusal(
      ask({
        system: [
          { type: 'text', text: 'a', cache_control: CACHE },
          { type: 'text', text: 'b', cache_control: { type: 'ephemeral', ttl: '1h' } },
        ],
      }),
    );
    expect(ordered.message).toMatch(/ttl='1h' cache_control block must not come after a ttl='5m'/);
    const empty = await refusal(ask({ messages: [{ role: 'user', content: [{ type: 'text', text: '', cache_control: CACHE }] }] }));
    expect(empty.message).toBe('messages.0.content.0: cache_control cannot be set for empty text blocks');
  });
});

describe('prompt caching', () => {
  const cached = (messages: MessageCreateParamsNonStreaming['messages'] = [{ role: 'user', content: 'Hello' }]) =>
    ask({ system: [{ type: 'text', text: LONG_SYSTEM, cache_control: CACHE }], tools: [TOOL], tool_choice: { type: 'auto' }, messages });
  /** The usage of an answer, its cache fields as numbers (the fake always sends them). */
  const usageOf = async (
    body: MessageCreateParamsNonStreaming,
    on: Anthropic = client,
  ): Promise<Usage & { cache_creation_input_tokens: number; cache_read_input_tokens: number }> => {
    const { usage } = await on.messages.create(body);
    return {
      ...usage,
      cache_creation_input_tokens: usage.cache_creation_input_tokens ?? 0,
      cache_read_input_tokens: usage.cache_read_input_tokens ?? 0,
    };
  };

  it('writes the prefix up to the last breakpoint, then reads it, billing the rest as input', async () => {
    const first = await usageOf(cached());
    expect(first.cache_read_input_tokens).toBe(0);
    expect(first.cache_creation_input_tokens).toBeGreaterThan(1_024);
    expect(first.cache_creation).toEqual({ ephemeral_5m_input_tokens: first.cache_creation_input_tokens, ephemeral_1h_input_tokens: 0 });
    const second = await usageOf(cached());
    expect(second.cache_read_input_tokens).toBe(first.cache_creation_input_tokens);
    expect(second.cache_creation_input_tokens).toBe(0);
    expect(second.input_tokens).toBe(first.input_tokens);
    // count_tokens gives the whole prompt: input + written (or read).
    const total = await client.messages.countTokens({
      model: MODEL,
      system: LONG_SYSTEM,
      tools: [TOOL],
      tool_choice: { type: 'auto' },
      messages: [{ role: 'user', content: 'Hello' }],
    });
    expect(total.input_tokens).toBe(first.input_tokens + first.cache_creation_input_tokens);
  });

  it('lets each round of a tool loop read what the previous round wrote (the latest user turn before it is a breakpoint)', async () => {
    const round1 = await usageOf(cached([{ role: 'user', content: [{ type: 'text', text: 'Quote AAPL', cache_control: CACHE }] }]));
    const round2 = await usageOf(
      cached([
        { role: 'user', content: [{ type: 'text', text: 'Quote AAPL', cache_control: CACHE }] },
        toolTurns[1]!,
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '{"price":1}'.repeat(50), cache_control: CACHE }],
        },
      ]),
    );
    expect(round2.cache_read_input_tokens).toBe(round1.cache_creation_input_tokens + round1.input_tokens);
    expect(round2.cache_creation_input_tokens).toBeGreaterThan(50);
    expect(round2.input_tokens).toBe(0);
  });

  it('finds a prefix written up to 20 blocks before a breakpoint, not further', async () => {
    const turns = (count: number) =>
      Array.from({ length: count }, (_, index) => ({
        role: index % 2 === 0 ? ('user' as const) : ('assistant' as const),
        content: `turn ${index}`,
      }));
    const mark = (messages: ReturnType<typeof turns>) =>
      messages.map((message, index) =>
        index === messages.length - 1
          ? { role: message.role, content: [{ type: 'text' as const, text: message.content, cache_control: CACHE }] }
          : message,
      );
    const written = await usageOf(cached(mark(turns(3))));
    const near = await usageOf(cached(mark(turns(3 + 18))));
    expect(near.cache_read_input_tokens).toBe(written.cache_creation_input_tokens);
    fake.reset();
    fake.setHandler(() => textReply('Noted.'));
    await usageOf(cached(mark(turns(3))));
    const far = await usageOf(cached(mark(turns(3 + 40))));
    // Only the system breakpoint's own prefix (tools and system) is found: it was written by the first call too.
    expect(far.cache_read_input_tokens).toBeLessThan(written.cache_creation_input_tokens);
    expect(far.cache_read_input_tokens).toBeGreaterThan(1_024);
  });

  it('keeps a 5-minute entry 5 minutes from its last read, and a 1-hour entry an hour', async () => {
    await usageOf(cached());
    clock += 4 * 60_000;
    expect((await usageOf(cached())).cache_read_input_tokens).toBeGreaterThan(0);
    clock += 4 * 60_000; // 8 minutes after the write, 4 after the read that renewed it
    expect((await usageOf(cached())).cache_read_input_tokens).toBeGreaterThan(0);
    clock += 5 * 60_000 + 1;
    expect((await usageOf(cached())).cache_read_input_tokens).toBe(0);

    const hour = ask({ system: [{ type: 'text', text: LONG_SYSTEM, cache_control: { type: 'ephemeral', ttl: '1h' } }] });
    const written = await usageOf(hour);
    expect(written.cache_creation).toEqual({
      ephemeral_5m_input_tokens: 0,
      ephemeral_1h_input_tokens: written.cache_creation_input_tokens,
    });
    clock += 59 * 60_000;
    expect((await usageOf(hour)).cache_read_input_tokens).toBe(written.cache_creation_input_tokens);
  });

  it('keeps caches apart per API key', async () => {
    const other = new Anthropic({ apiKey: 'key-b', baseURL: fake.url, maxRetries: 0, logLevel: 'off' });
    const first = await usageOf(cached());
    const elsewhere = await usageOf(cached(), other);
    expect(elsewhere.cache_read_input_tokens).toBe(0);
    expect(elsewhere.cache_creation_input_tokens).toBe(first.cache_creation_input_tokens);
  });

  it('caches nothing shorter than the model minimum (1,024 tokens for Sonnet, 4,096 for Haiku 4.5)', async () => {
    const short = ask({ system: [{ type: 'text', text: 'Be brief.', cache_control: CACHE }] });
    expect(await usageOf(short)).toMatchObject({ cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    const haiku = { ...cached(), model: 'claude-haiku-4-5' };
    expect(await usageOf(haiku)).toMatchObject({ cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
  });

  it('voids what follows a change: tools void everything, the system prompt the rest, tool_choice only the messages', async () => {
    const conversation = [
      { role: 'user' as const, content: [{ type: 'text' as const, text: 'Hello '.repeat(300), cache_control: CACHE }] },
    ];
    const base = await usageOf(cached(conversation));
    const systemPrefix = (await usageOf(cached(conversation))).cache_read_input_tokens;
    expect(systemPrefix).toBe(base.cache_creation_input_tokens);

    const choice = await usageOf({ ...cached(conversation), tool_choice: { type: 'none' } });
    expect(choice.cache_read_input_tokens).toBeGreaterThan(1_024); // tools and system still read
    expect(choice.cache_read_input_tokens).toBeLessThan(systemPrefix);

    const system = await usageOf({ ...cached(conversation), system: [{ type: 'text', text: `${LONG_SYSTEM} `, cache_control: CACHE }] });
    expect(system.cache_read_input_tokens).toBe(0);

    const tools = await usageOf({ ...cached(conversation), tools: [{ ...TOOL, description: 'Other.' }] });
    expect(tools.cache_read_input_tokens).toBe(0);
  });

  it('counts web search results at their billed size in every later call that carries them', async () => {
    const results = Array.from({ length: 5 }, (_, index) => ({ url: `https://example.com/${index}`, title: `Result ${index}` }));
    fake.setHandler(() => ({ content: [...webSearch('apple earnings', results), { type: 'text', text: 'Found it.' }] }));
    const answered = await client.messages.create(ask({ tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 1 }] }));
    expect(answered.usage.server_tool_use?.web_search_requests).toBe(1);
    const follow = ask({
      // The tokenizer countTokens approximates (Claude Haiku 4.5's): Sonnet 5.5 would count 30 % more.
      model: 'claude-haiku-4-5',
      tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 1 }],
      messages: [
        { role: 'user', content: 'apple earnings' },
        { role: 'assistant', content: answered.content },
        { role: 'user', content: 'More?' },
      ],
    });
    const { input_tokens } = await client.messages.countTokens(follow);
    expect(input_tokens).toBeGreaterThan(5 * WEB_SEARCH_RESULT_TOKENS);
    expect(input_tokens).toBeLessThan(5 * WEB_SEARCH_RESULT_TOKENS + 600);
  });

  it('counts tokens by pieces, not characters / 4: JSON punctuation and long numbers count more', () => {
    expect(countTokens('hello world')).toBe(2);
    expect(countTokens('{"a":1}')).toBe(countTokens('{"') + countTokens('a') + countTokens('":') + countTokens('1') + countTokens('}'));
    expect(countTokens('1234567890')).toBe(4);
    expect(countTokens('财务报告')).toBe(4);
  });
});
