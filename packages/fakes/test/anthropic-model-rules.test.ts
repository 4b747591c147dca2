// The fake Messages API refuses, model by model, what Anthropic documents the real API refuses (@fin/offline
// model-rules.ts, thinking.ts): one test per rule, through the real @anthropic-ai/sdk, asserting the status, the
// error type and a message that points at the fix. A refused request never consumes a scripted reply.
import Anthropic, { APIError } from '@anthropic-ai/sdk';
import type { ContentBlock, MessageCreateParamsNonStreaming, MessageParam } from '@anthropic-ai/sdk/resources/messages/messages';
import { message, startFakeAnthropic, textReply, toolUseReply, webSearch, type FakeAnthropic } from '../src';

/** A request body as sent, loosely typed so that requests the API refuses can be written too. */
type Body = Record<string, unknown>;

const TOOL = {
  name: 'market_data',
  description: 'Market data for a symbol.',
  input_schema: { type: 'object' as const, properties: { symbol: { type: 'string' } } },
};
const HELLO = [{ role: 'user', content: 'Hello' }];

let fake: FakeAnthropic;
let client: Anthropic;

beforeAll(async () => {
  fake = await startFakeAnthropic({ handler: () => textReply('Noted.') });
  // An explicit timeout: without one the SDK itself refuses a non-streamed request with a large max_tokens.
  client = new Anthropic({ apiKey: 'key-rules', baseURL: fake.url, maxRetries: 0, logLevel: 'off', timeout: 30_000 });
});
afterAll(() => fake.close());
beforeEach(() => fake.reset());

function ask(model: string, overrides: Body = {}): Body {
  return { model, max_tokens: 1024, messages: HELLO, ...overrides };
}

const create = (body: Body) => client.messages.create(body as unknown as MessageCreateParamsNonStreaming);

/** Sends `body`, which the fake must refuse without using the reply queued for it; the status, type and message. */
async function refusal(body: Body): Promise<{ status: number; type: string; message: string }> {
  fake.reset();
  fake.reply(textReply('kept for the next accepted request'));
  const failure = await create(body).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(failure).toBeInstanceOf(APIError);
  const { status = 0, error } = failure as APIError & { error: { type: string; error: { type: string; message: string } } };
  expect(error.type).toBe('error');
  expect(fake.pendingReplies).toBe(1);
  expect(fake.requests.at(-1)?.answeredBy).toBe('validation');
  fake.reset();
  return { status, type: error.error.type, message: error.error.message };
}

/** The refusal of `body` as a 400 invalid_request_error; its message. */
async function invalid(body: Body): Promise<string> {
  const { status, type, message: text } = await refusal(body);
  expect({ status, type }).toEqual({ status: 400, type: 'invalid_request_error' });
  return text;
}

async function accepted(body: Body) {
  const answer = await create(body);
  expect(fake.requests.at(-1)?.answeredBy).not.toBe('validation');
  return answer;
}

describe('model ids and limits', () => {
  it('answers an unknown model with 404 not_found_error naming the model', async () => {
    expect(await refusal(ask('claude-sonnet-9-9'))).toEqual({ status: 404, type: 'not_found_error', message: 'model: claude-sonnet-9-9' });
    await accepted(ask('claude-haiku-4-5-20251001')); // an alias of a known model
  });

  it("refuses max_tokens over the model's maximum, naming the maximum", async () => {
    expect(await invalid(ask('claude-sonnet-5-5', { max_tokens: 10_000_000 }))).toBe(
      'max_tokens: 10000000 > 128000, which is the maximum allowed number of output tokens for claude-sonnet-5-5',
    );
    expect(await invalid(ask('claude-haiku-4-5', { max_tokens: 64_001 }))).toBe(
      'max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for claude-haiku-4-5',
    );
    await accepted(ask('claude-haiku-4-5', { max_tokens: 64_000 }));
    await accepted(ask('claude-sonnet-5-5', { max_tokens: 128_000 }));
  });

  it("refuses a prompt longer than the model's context window", async () => {
    const long = [{ role: 'user', content: 'revenue '.repeat(205_000) }];
    const text = await invalid(ask('claude-haiku-4-5', { messages: long }));
    expect(text).toMatch(/^prompt is too long: \d+ tokens > 200000 maximum$/);
    expect(Number(/(\d+) tokens/.exec(text)?.[1])).toBeGreaterThan(200_000);
    await accepted(ask('claude-sonnet-5-5', { messages: long })); // a 1M-token window
  });

  it('counts the same prompt ~1.3× on the newer tokenizer (claude-haiku-5-5 against claude-haiku-4-5)', async () => {
    const prose = 'Apple reported record services revenue, and its margins widened for the third quarter running. '.repeat(40);
    const count = async (model: string) =>
      (await client.messages.countTokens({ model, messages: [{ role: 'user', content: prose }] })).input_tokens;
    const [older, newer] = [await count('claude-haiku-4-5'), await count('claude-haiku-5-5')];
    expect(newer / older).toBeGreaterThan(1.25);
    expect(newer / older).toBeLessThan(1.35);
    expect(await count('claude-sonnet-5-5')).toBe(newer);
  });
});

describe('thinking types', () => {
  it('refuses thinking disabled on claude-sonnet-5-5, naming between_tools', async () => {
    const text = await invalid(ask('claude-sonnet-5-5', { thinking: { type: 'disabled' } }));
    expect(text).toBe(
      '"thinking.type.disabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior. To turn off up-front thinking, use "thinking.type.between_tools". Accepted values: "adaptive", "between_tools".',
    );
    await accepted(ask('claude-sonnet-5-5', { thinking: { type: 'between_tools' } }));
  });

  it('refuses thinking disabled and enabled on claude-opus-5-5 (adaptive only)', async () => {
    for (const thinking of [{ type: 'disabled' }, { type: 'enabled', budget_tokens: 2_048 }]) {
      const text = await invalid(ask('claude-opus-5-5', { max_tokens: 4_096, thinking }));
      expect(text).toBe(
        `"thinking.type.${thinking.type}" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior. Accepted values: "adaptive".`,
      );
    }
    await accepted(ask('claude-opus-5-5', { thinking: { type: 'adaptive' }, output_config: { effort: 'low' } }));
  });

  it('refuses adaptive thinking on claude-haiku-4-5 (extended thinking or off)', async () => {
    expect(await invalid(ask('claude-haiku-4-5', { thinking: { type: 'adaptive' } }))).toBe(
      '"thinking.type.adaptive" is not supported for this model. To turn thinking off, use "thinking.type.disabled". Accepted values: "disabled", "enabled".',
    );
    await accepted(ask('claude-haiku-4-5', { max_tokens: 4_096, thinking: { type: 'enabled', budget_tokens: 2_048 } }));
  });

  it('refuses thinking budgets (enabled) on claude-sonnet-5-5', async () => {
    const text = await invalid(ask('claude-sonnet-5-5', { max_tokens: 4_096, thinking: { type: 'enabled', budget_tokens: 2_048 } }));
    expect(text).toMatch(
      /^"thinking\.type\.enabled" is not supported for this model\. Use "thinking\.type\.adaptive" and "output_config\.effort"/,
    );
  });

  it.each(['claude-opus-5-5', 'claude-haiku-5-5', 'claude-sonnet-5', 'claude-haiku-4-5'])(
    'refuses between_tools on %s (Claude Sonnet 5.5 only)',
    async (model) => {
      const text = await invalid(ask(model, { thinking: { type: 'between_tools' } }));
      expect(text).toMatch(/^"thinking\.type\.between_tools" is not supported for this model\. .*Accepted values: /);
      expect(text).not.toMatch(/Accepted values: .*between_tools/);
    },
  );
});

describe('effort', () => {
  it.each(['xhigh', 'max'])('refuses between_tools at effort %s on claude-sonnet-5-5, and takes it at high', async (effort) => {
    expect(await invalid(ask('claude-sonnet-5-5', { thinking: { type: 'between_tools' }, output_config: { effort } }))).toBe(
      `output_config.effort '${effort}' is not supported when thinking.type is "between_tools" on this model. Use effort 'high' or below, or use "thinking.type.adaptive".`,
    );
    await accepted(ask('claude-sonnet-5-5', { thinking: { type: 'between_tools' }, output_config: { effort: 'high' } }));
    await accepted(ask('claude-sonnet-5-5', { thinking: { type: 'adaptive' }, output_config: { effort } }));
  });

  it('refuses thinking disabled at effort xhigh on claude-haiku-5-5, and takes it at high', async () => {
    expect(await invalid(ask('claude-haiku-5-5', { thinking: { type: 'disabled' }, output_config: { effort: 'xhigh' } }))).toBe(
      `output_config.effort 'xhigh' is not supported when thinking.type is "disabled" on this model. Use effort 'high' or below, or use "thinking.type.adaptive".`,
    );
    await accepted(ask('claude-haiku-5-5', { thinking: { type: 'disabled' }, output_config: { effort: 'high' } }));
  });

  it('refuses any effort on claude-haiku-4-5', async () => {
    expect(await invalid(ask('claude-haiku-4-5', { output_config: { effort: 'low' } }))).toBe(
      'output_config.effort: effort is not supported for this model. Remove output_config.effort.',
    );
  });

  it('refuses an effort value that does not exist, listing the levels', async () => {
    expect(await invalid(ask('claude-sonnet-5-5', { output_config: { effort: 'extreme' } }))).toBe(
      "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'",
    );
  });
});

describe('sampling parameters', () => {
  it.each(['claude-sonnet-5-5', 'claude-opus-5-5'])('refuses temperature, top_p and top_k on %s, at any value', async (model) => {
    for (const [parameter, value] of [
      ['temperature', 1],
      ['temperature', 0.2],
      ['top_p', 0.9],
      ['top_k', 40],
    ] as const) {
      expect(await invalid(ask(model, { [parameter]: value }))).toBe(`\`${parameter}\` is deprecated for this model.`);
    }
  });

  it('refuses a non-default temperature on claude-haiku-5-5 but takes temperature 1', async () => {
    expect(await invalid(ask('claude-haiku-5-5', { temperature: 0.5 }))).toBe('`temperature` is deprecated for this model.');
    expect(await invalid(ask('claude-haiku-5-5', { top_p: 0.9 }))).toBe('`top_p` is deprecated for this model.');
    await accepted(ask('claude-haiku-5-5', { temperature: 1 }));
  });

  it('takes temperature on claude-haiku-4-5', async () => {
    await accepted(ask('claude-haiku-4-5', { temperature: 0.2 }));
  });
});

describe('assistant prefill', () => {
  const prefilled = [
    { role: 'user', content: 'Give JSON.' },
    { role: 'assistant', content: '{' },
  ];

  it.each(['claude-sonnet-5-5', 'claude-haiku-5-5', 'claude-sonnet-5'])(
    'refuses a conversation ending with an assistant turn on %s',
    async (model) => {
      expect(await invalid(ask(model, { messages: prefilled }))).toBe(
        'This model does not support assistant message prefill. The conversation must end with a user message.',
      );
    },
  );

  it('takes prefill on claude-haiku-4-5 without thinking, refuses it with thinking enabled', async () => {
    await accepted(ask('claude-haiku-4-5', { messages: prefilled }));
    await accepted(ask('claude-haiku-4-5', { messages: prefilled, thinking: { type: 'disabled' } }));
    expect(
      await invalid(
        ask('claude-haiku-4-5', { max_tokens: 4_096, messages: prefilled, thinking: { type: 'enabled', budget_tokens: 2_048 } }),
      ),
    ).toBe('Prefilling the assistant message is not supported when thinking is enabled. The conversation must end with a user message.');
  });

  it('does not count a paused server-tool turn sent back to continue (pause_turn) as prefill', async () => {
    const tools = [{ type: 'web_search_20260209', name: 'web_search', max_uses: 2 }];
    fake.reply(message([...webSearch('apple earnings', [{ url: 'https://example.com/a', title: 'A' }])], { stopReason: 'pause_turn' }));
    const paused = await accepted(ask('claude-sonnet-5-5', { tools, messages: [{ role: 'user', content: 'Apple earnings?' }] }));
    expect(paused.stop_reason).toBe('pause_turn');
    const continued = [
      { role: 'user', content: 'Apple earnings?' },
      { role: 'assistant', content: paused.content },
    ];
    await accepted(ask('claude-sonnet-5-5', { tools, messages: continued }));
  });
});

describe('forced tool choice', () => {
  it.each(['claude-sonnet-5-5', 'claude-opus-5-5'])('refuses tool_choice any and tool on %s, pointing at auto', async (model) => {
    for (const choice of [{ type: 'any' }, { type: 'tool', name: 'market_data' }]) {
      const thinking = model === 'claude-sonnet-5-5' ? { type: 'between_tools' } : { type: 'adaptive' };
      expect(await invalid(ask(model, { tools: [TOOL], tool_choice: choice, thinking }))).toBe(
        `tool_choice: "${choice.type}" (forced tool use) is not supported for this model. Use tool_choice "auto" or "none", and say in the prompt which tool to use.`,
      );
    }
    await accepted(ask(model, { tools: [TOOL], tool_choice: { type: 'auto' } }));
  });

  it('refuses forced tool use with thinking on, also when thinking is on by default (claude-haiku-5-5), and takes it with thinking disabled', async () => {
    const cases: Body[] = [
      ask('claude-haiku-5-5', { tools: [TOOL], tool_choice: { type: 'any' } }),
      ask('claude-haiku-5-5', { tools: [TOOL], tool_choice: { type: 'tool', name: 'market_data' }, thinking: { type: 'adaptive' } }),
      ask('claude-haiku-4-5', {
        max_tokens: 4_096,
        tools: [TOOL],
        tool_choice: { type: 'any' },
        thinking: { type: 'enabled', budget_tokens: 2_048 },
      }),
    ];
    for (const body of cases) expect(await invalid(body)).toBe('Thinking may not be enabled when tool_choice forces tool use.');
    for (const choice of [{ type: 'any' }, { type: 'tool', name: 'market_data' }]) {
      await accepted(ask('claude-haiku-5-5', { tools: [TOOL], tool_choice: choice, thinking: { type: 'disabled' } }));
    }
    await accepted(ask('claude-haiku-4-5', { tools: [TOOL], tool_choice: { type: 'any' } })); // off when omitted
  });
});

describe('web search tool versions', () => {
  it('refuses a web search tool type the API does not know, listing the known tags', async () => {
    const text = await invalid(ask('claude-sonnet-5-5', { tools: [{ type: 'web_search_19990101', name: 'web_search' }] }));
    expect(text).toBe(
      "tools.0: Input tag 'web_search_19990101' found using 'type' does not match any of the expected tags: 'custom', 'web_search_20250305', 'web_search_20260209', 'web_search_20260318'",
    );
  });

  it('refuses web_search_20260209 on claude-haiku-4-5, naming the version it takes, and takes it on claude-sonnet-5-5', async () => {
    const tools = [{ type: 'web_search_20260209', name: 'web_search' }];
    expect(await invalid(ask('claude-haiku-4-5', { tools }))).toBe(
      `tools.0.type: 'web_search_20260209' is not supported on claude-haiku-4-5. Use "web_search_20250305".`,
    );
    await accepted(ask('claude-sonnet-5-5', { tools }));
    await accepted(ask('claude-haiku-4-5', { tools: [{ type: 'web_search_20250305', name: 'web_search' }] }));
  });

  it('refuses max_uses 0', async () => {
    expect(await invalid(ask('claude-sonnet-5-5', { tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 0 }] }))).toBe(
      'tools.0.web_search_20250305.max_uses: Input should be greater than or equal to 1',
    );
  });
});

describe('thinking blocks on claude-sonnet-5-5', () => {
  const question: MessageParam = { role: 'user', content: 'What does Apple trade at?' };
  const preamble = 'Let me check the latest quote first.';

  /** One tool round on `model`: the reply (text before a tool call) and the follow-up request that answers the call. */
  async function toolRound(thinking?: Body) {
    fake.reply(toolUseReply('market_data', { symbol: 'AAPL' }, { preamble, toolUseId: 'toolu_round1' }));
    const reply = await accepted(ask('claude-sonnet-5-5', { tools: [TOOL], messages: [question], ...(thinking ? { thinking } : {}) }));
    const followUp = (content: ContentBlock[] | Body[], model = 'claude-sonnet-5-5', first: MessageParam = question): Body =>
      ask(model, {
        tools: [TOOL],
        ...(thinking && model === 'claude-sonnet-5-5' ? { thinking } : {}),
        messages: [
          first,
          { role: 'assistant', content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_round1', content: '{"price":190.1}' }] },
        ],
      });
    return { reply, followUp };
  }

  it('returns the text written before a tool call as a thinking block: shown under between_tools and with display summarized, empty by default', async () => {
    const shown = (await toolRound({ type: 'between_tools' })).reply.content;
    expect(shown).toEqual([
      { type: 'thinking', thinking: preamble, signature: expect.stringMatching(/^fakesig1\./) as unknown },
      expect.objectContaining({ type: 'tool_use', name: 'market_data' }),
    ]);
    for (const thinking of [{ type: 'adaptive' }, undefined]) {
      const [first] = (await toolRound(thinking)).reply.content;
      expect(first).toMatchObject({ type: 'thinking', thinking: '' });
    }
    const [summarized] = (await toolRound({ type: 'adaptive', display: 'summarized' })).reply.content;
    expect(summarized).toMatchObject({ type: 'thinking', thinking: preamble });
    // Models that do not move that text into thinking return it as text.
    fake.reply(toolUseReply('market_data', { symbol: 'AAPL' }, { preamble }));
    const haiku = await accepted(ask('claude-haiku-5-5', { tools: [TOOL], messages: [question] }));
    expect(haiku.content[0]).toMatchObject({ type: 'text', text: preamble });
  });

  it('takes the block passed back unchanged in the next request', async () => {
    for (const thinking of [{ type: 'between_tools' }, { type: 'adaptive' }]) {
      const { reply, followUp } = await toolRound(thinking);
      await accepted(followUp(reply.content));
    }
  });

  it('refuses the block with its text changed: Invalid signature', async () => {
    const { reply, followUp } = await toolRound({ type: 'between_tools' });
    const changed = reply.content.map((block) => (block.type === 'thinking' ? { ...block, thinking: `${block.thinking} Edited.` } : block));
    expect(await invalid(followUp(changed))).toBe('messages.1.content.0: Invalid `signature` in `thinking` block.');
  });

  it('refuses the block after a changed earlier message: bound to a different conversation', async () => {
    const { reply, followUp } = await toolRound({ type: 'between_tools' });
    const text = await invalid(followUp(reply.content, 'claude-sonnet-5-5', { role: 'user', content: 'What does Microsoft trade at?' }));
    expect(text).toBe(
      'messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".',
    );
  });

  it('drops the block without an error when it is sent to another model (claude-haiku-5-5)', async () => {
    const { reply, followUp } = await toolRound({ type: 'between_tools' });
    await accepted(followUp(reply.content, 'claude-haiku-5-5'));
  });

  it('refuses a forged signature', async () => {
    const { followUp } = await toolRound({ type: 'between_tools' });
    const forged = [
      { type: 'thinking', thinking: preamble, signature: 'EqQBCkYIARgCKkD4forgedsignature' },
      { type: 'tool_use', id: 'toolu_round1', name: 'market_data', input: { symbol: 'AAPL' } },
    ];
    expect(await invalid(followUp(forged))).toBe('messages.1.content.0: Invalid `signature` in `thinking` block.');
    const borrowed: Body[] = [
      { ...forged[0], signature: `fakesig1.${Buffer.from('claude-sonnet-5-5').toString('base64url')}.abc.def` },
      forged[1] as Body,
    ];
    expect(await invalid(followUp(borrowed))).toBe('messages.1.content.0: Invalid `signature` in `thinking` block.');
  });
});
