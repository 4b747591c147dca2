// The fake's happy paths, driven through the real @anthropic-ai/sdk: what the SDK reads from the fake must be what
// it would read from the API.
import Anthropic, { BadRequestError } from '@anthropic-ai/sdk';
import { jsonSchemaOutputFormat } from '@anthropic-ai/sdk/helpers/json-schema';
import {
  citation,
  countTokens,
  jsonReply,
  lastUserText,
  message,
  startFakeAnthropic,
  text,
  textReply,
  toolResults,
  toolUseReply,
  webSearch,
  type FakeAnthropic,
} from '../src';

/** Counted by the tokenizer countTokens approximates (Claude Haiku 4.5's); newer models count more, tested below. */
const MODEL = 'claude-haiku-4-5';
let fake: FakeAnthropic;
let client: Anthropic;

beforeAll(async () => {
  fake = await startFakeAnthropic();
  client = new Anthropic({ apiKey: 'test-key', baseURL: fake.url, maxRetries: 0, logLevel: 'off' });
});
afterEach(() => fake.reset());
afterAll(() => fake.close());

const ask = (content: string) => ({ model: MODEL, max_tokens: 1024, messages: [{ role: 'user' as const, content }] });

/** Reads a raw SSE response into its events, pings included. */
async function rawEvents(response: Response): Promise<Array<{ event: string; data: Record<string, unknown> }>> {
  const body = await response.text();
  return body
    .split('\n\n')
    .filter(Boolean)
    .map((frame) => {
      const [eventLine, dataLine] = frame.split('\n');
      return { event: eventLine!.replace('event: ', ''), data: JSON.parse(dataLine!.replace('data: ', '')) as Record<string, unknown> };
    });
}

describe('non-streamed messages', () => {
  it('returns a full Message and records the request with its headers', async () => {
    fake.reply(textReply('Apple reported record services revenue.'));

    const response = await client.messages.create({ ...ask('Summarise AAPL news'), system: 'You are an analyst.' });

    expect(response).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: MODEL,
      content: [{ type: 'text', text: 'Apple reported record services revenue.', citations: null }],
      stop_reason: 'end_turn',
      stop_sequence: null,
    });
    expect(response.id).toMatch(/^msg_01[0-9A-Za-z]{22}$/);
    expect(response._request_id).toMatch(/^req_01/);
    expect(response.usage.input_tokens).toBeGreaterThan(5);
    expect(response.usage.output_tokens).toBe(countTokens('Apple reported record services revenue.'));

    const [request] = fake.requests;
    expect(request).toMatchObject({ method: 'POST', path: '/v1/messages', stream: false, answeredBy: 'queue' });
    expect(request?.apiKey).toBe('test-key');
    expect(request?.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(request?.body?.system).toBe('You are an analyst.');
    expect(request && lastUserText(request.body!)).toBe('Summarise AAPL news');
  });

  it('reports usage the script sets instead of the estimate', async () => {
    fake.reply(textReply('ok', { usage: { inputTokens: 1234, outputTokens: 56, cacheReadInputTokens: 7 } }));
    const response = await client.messages.create(ask('hi'));
    expect(response.usage).toMatchObject({ input_tokens: 1234, output_tokens: 56, cache_read_input_tokens: 7 });
  });

  it('reports a refusal with its stop details', async () => {
    fake.reply(textReply('I cannot help with that.', { stopReason: 'refusal' }));
    const response = await client.messages.create(ask('something else'));
    expect(response.stop_reason).toBe('refusal');
    expect(response.stop_details).toEqual({ type: 'refusal', category: null, explanation: null });
  });

  it('answers with the handler once the queue is empty, queue first', async () => {
    fake.setHandler((request) => textReply(`echo: ${lastUserText(request.body)}`));
    fake.reply(textReply('from the queue'));

    const first = await client.messages.create(ask('one'));
    const second = await client.messages.create(ask('two'));

    expect(first.content).toEqual([{ type: 'text', text: 'from the queue', citations: null }]);
    expect(second.content).toEqual([{ type: 'text', text: 'echo: two', citations: null }]);
    expect(fake.requests.map((request) => request.answeredBy)).toEqual(['queue', 'handler']);
  });

  it('keeps a handler given at start across reset(), and can run without a request log', async () => {
    const analyst = await startFakeAnthropic({ handler: () => textReply('offline analyst'), recordRequests: false });
    try {
      const offline = new Anthropic({ apiKey: 'offline', baseURL: analyst.url, maxRetries: 0, logLevel: 'off' });
      analyst.reply(textReply('scripted first'));
      analyst.reset();
      const response = await offline.messages.create(ask('anything'));
      expect(response.content[0]).toMatchObject({ text: 'offline analyst' });
      expect(analyst.requests).toHaveLength(0);
    } finally {
      await analyst.close();
    }
  });

  it('counts tokens on /v1/messages/count_tokens', async () => {
    const prose = 'Apple reported record services revenue, and its margins widened for the third quarter running. '.repeat(20);
    const counted = await client.messages.countTokens({ model: MODEL, messages: [{ role: 'user', content: prose }] });
    // 16 pieces a sentence (14 words, each with the space before it, a comma and a period), the last space, and
    // the message's framing. Characters / 4 would say 470.
    expect(countTokens(prose)).toBe(20 * 16 + 1);
    expect(counted.input_tokens).toBe(countTokens(prose) + 3);
  });
});

describe('max_tokens', () => {
  const long = Array.from({ length: 60 }, (_, index) => `Sentence ${index} about Apple's quarter.`).join(' ');

  it('stops a reply at max_tokens, as the API does: cut text, stop_reason max_tokens, output_tokens = max_tokens', async () => {
    fake.reply(textReply(long));
    const response = await client.messages.create({ ...ask('hi'), max_tokens: 40 });
    expect(response.stop_reason).toBe('max_tokens');
    expect(response.usage.output_tokens).toBe(40);
    const [block] = response.content;
    expect(block?.type).toBe('text');
    const written = block?.type === 'text' ? block.text : '';
    expect(long.startsWith(written)).toBe(true);
    expect(countTokens(written)).toBeLessThanOrEqual(40);
    expect(countTokens(written)).toBeGreaterThan(30);
  });

  it('streams the same cut reply', async () => {
    fake.reply(textReply(long));
    const streamed = await client.messages.stream({ ...ask('hi'), max_tokens: 40 }).finalMessage();
    expect(streamed.stop_reason).toBe('max_tokens');
    expect(streamed.usage.output_tokens).toBe(40);
  });

  it('leaves a tool call reached but not finished incomplete, and writes nothing after it', async () => {
    fake.reply(toolUseReply('market_data', { symbol: 'AAPL', kind: 'quote', note: long }, { preamble: 'Let me look that up. ' }));
    const response = await client.messages.create({
      ...ask('hi'),
      max_tokens: 20,
      tools: [{ name: 'market_data', description: 'Quotes', input_schema: { type: 'object' } }],
    });
    expect(response.stop_reason).toBe('max_tokens');
    expect(response.content.map((block) => block.type)).toEqual(['text', 'tool_use']);
    expect(response.content[1]).toMatchObject({ type: 'tool_use', name: 'market_data', input: {} });
  });

  it('answers a reply that fits whole, as written', async () => {
    fake.reply(textReply(long));
    const response = await client.messages.create({ ...ask('hi'), max_tokens: 4096 });
    expect(response.stop_reason).toBe('end_turn');
    expect(response.content[0]).toMatchObject({ type: 'text', text: long });
  });
});

describe('streamed messages', () => {
  const answer = 'NVIDIA beat guidance on data-center demand; networking grew fastest of all segments this quarter.';

  it('streams text in several deltas that add up to the final message', async () => {
    fake.reply(textReply(answer));
    const stream = client.messages.stream(ask('How did NVDA do?'));
    const deltas: string[] = [];
    stream.on('text', (delta) => deltas.push(delta));

    const final = await stream.finalMessage();

    expect(deltas.length).toBeGreaterThanOrEqual(5);
    expect(deltas.join('')).toBe(answer);
    expect(final.content).toEqual([{ type: 'text', text: answer, citations: null }]);
    expect(final.stop_reason).toBe('end_turn');
    expect(final.usage.output_tokens).toBe(countTokens(answer));
    expect(fake.requests[0]?.stream).toBe(true);
  });

  it('accumulates to the same Message a non-streamed call returns', async () => {
    const script = message([text('Thinking about it.'), text('Done.')], { id: 'msg_01SameForBoth0000000000', usage: { inputTokens: 40 } });
    fake.reply(script, script);

    const whole = await client.messages.create(ask('compare'));
    const streamed = await client.messages.stream(ask('compare')).finalMessage();

    // parsed_output is the SDK's own addition to streamed messages.
    const { parsed_output: _parsed, ...accumulated } = streamed;
    expect(accumulated).toEqual({ ...whole });
  });

  it('sends the SSE events in the API order with pings interleaved', async () => {
    fake.reply(textReply(answer));
    const response = await fetch(`${fake.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ ...ask('raw'), stream: true }),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('request-id')).toMatch(/^req_/);

    const events = await rawEvents(response);
    const names = events.map((event) => event.event);
    expect(names.slice(0, 3)).toEqual(['message_start', 'ping', 'content_block_start']);
    expect(names.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    expect(names.filter((name) => name === 'ping').length).toBeGreaterThan(1);
    for (const event of events) expect(event.data.type).toBe(event.event);
    const start = events[0]!.data.message as Record<string, unknown>;
    expect(start).toMatchObject({ content: [], stop_reason: null });
  });

  it.each(['max_tokens', 'pause_turn', 'refusal'] as const)('reports stop_reason %s in message_delta', async (stopReason) => {
    fake.reply(textReply('Partial answer that stops here', { stopReason }));
    const final = await client.messages.stream(ask('stop')).finalMessage();
    expect(final.stop_reason).toBe(stopReason);
    expect(final.stop_details).toEqual(stopReason === 'refusal' ? { type: 'refusal', category: null, explanation: null } : null);
  });

  it('spaces events by delayBetweenEventsMs', async () => {
    fake.reply(textReply('one two three four five six', { faults: { delayBetweenEventsMs: 40 } }));
    const stream = client.messages.stream(ask('slowly'));
    const arrivals: number[] = [];
    stream.on('text', () => arrivals.push(Date.now()));
    await stream.finalMessage();
    expect(arrivals.length).toBeGreaterThanOrEqual(3);
    expect(arrivals.at(-1)! - arrivals[0]!).toBeGreaterThanOrEqual(40 * (arrivals.length - 1) - 10);
  });
});

describe('tool use', () => {
  const tools: Anthropic.Tool[] = [
    {
      name: 'market_data',
      description: 'Quote, profile, metrics and news for a symbol.',
      input_schema: {
        type: 'object',
        properties: { symbol: { type: 'string' }, fields: { type: 'array', items: { type: 'string' } } },
        required: ['symbol'],
      },
    },
  ];
  const input = { symbol: 'AAPL', fields: ['quote', 'profile', 'metrics', 'news'] };

  it('streams the tool input as input_json_delta chunks and takes the tool_result turn', async () => {
    fake.reply(toolUseReply('market_data', input, { preamble: 'Let me look that up.' }), textReply('AAPL trades at 238.40 (sample).'));

    const stream = client.messages.stream({ ...ask('How is Apple doing?'), tools });
    const partials: string[] = [];
    stream.on('inputJson', (partial) => partials.push(partial));
    const turn = await stream.finalMessage();

    expect(turn.stop_reason).toBe('tool_use');
    const call = turn.content[1];
    expect(call).toMatchObject({ type: 'tool_use', name: 'market_data', input });
    expect(partials.length).toBeGreaterThan(1);
    expect(JSON.parse(partials.join(''))).toEqual(input);
    if (call?.type !== 'tool_use') throw new Error('expected a tool_use block');
    expect(call.id).toMatch(/^toolu_01/);

    const final = await client.messages.create({
      ...ask('How is Apple doing?'),
      tools,
      messages: [
        { role: 'user', content: 'How is Apple doing?' },
        { role: 'assistant', content: turn.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '{"price":238.4}' }] },
      ],
    });

    expect(final.content[0]).toMatchObject({ type: 'text', text: 'AAPL trades at 238.40 (sample).' });
    const results = toolResults(fake.requests[1]!.body!);
    expect(results).toEqual([{ toolUseId: call.id, toolName: 'market_data', text: '{"price":238.4}', isError: false }]);
  });

  it('rejects a conversation that leaves a tool_use unanswered, as the API does', async () => {
    fake.reply(textReply('never sent'));
    const request = client.messages.create({
      ...ask('x'),
      tools,
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01abc', name: 'market_data', input }] },
        { role: 'user', content: 'go on' },
      ],
    });
    await expect(request).rejects.toThrow(BadRequestError);
    await expect(request).rejects.toThrow(/tool_use` ids were found without `tool_result` blocks immediately after: toolu_01abc/);
    expect(fake.pendingReplies).toBe(1);
  });
});

describe('web search', () => {
  const results = [
    { url: 'https://news.example.com/2026/11/19/nvidia-quarterly-results', title: 'NVIDIA results', pageAge: '1 day ago' },
    { url: 'https://news.example.com/2026/11/16/nvidia-export-rules', title: 'Export rules' },
  ];
  const script = () =>
    message([
      ...webSearch('NVIDIA latest earnings', results),
      text('Revenue beat guidance.', [citation(results[0]!, 'revenue beat guidance on data-center demand')]),
    ]);

  it('shows the search, its results and the citations to the SDK (non-streamed)', async () => {
    fake.reply(script());
    const response = await client.messages.create({
      ...ask('NVDA news'),
      tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }],
    });

    const [use, result, answer] = response.content;
    expect(use).toMatchObject({ type: 'server_tool_use', name: 'web_search', input: { query: 'NVIDIA latest earnings' } });
    expect(result?.type).toBe('web_search_tool_result');
    if (use?.type !== 'server_tool_use' || result?.type !== 'web_search_tool_result' || answer?.type !== 'text')
      throw new Error('unexpected blocks');
    expect(result.tool_use_id).toBe(use.id);
    expect(result.content).toEqual([
      expect.objectContaining({
        type: 'web_search_result',
        url: results[0]!.url,
        title: 'NVIDIA results',
        page_age: '1 day ago',
        encrypted_content: expect.any(String),
      }),
      expect.objectContaining({ type: 'web_search_result', url: results[1]!.url, page_age: null }),
    ]);
    expect(answer.citations).toEqual([
      {
        type: 'web_search_result_location',
        url: results[0]!.url,
        title: 'NVIDIA results',
        cited_text: 'revenue beat guidance on data-center demand',
        encrypted_index: expect.any(String),
      },
    ]);
    expect(response.usage.server_tool_use).toEqual({ web_search_requests: 1, web_fetch_requests: 0 });
  });

  it('streams the same blocks, citations arriving as citations_delta', async () => {
    fake.reply(script());
    const stream = client.messages.stream({ ...ask('NVDA news'), tools: [{ type: 'web_search_20250305', name: 'web_search' }] });
    const cited: string[] = [];
    stream.on('citation', (value) => {
      if (value.type === 'web_search_result_location') cited.push(value.url);
    });
    const final = await stream.finalMessage();

    expect(cited).toEqual([results[0]!.url]);
    expect(final.content.map((block) => block.type)).toEqual(['server_tool_use', 'web_search_tool_result', 'text']);
    expect(final.content[0]).toMatchObject({ input: { query: 'NVIDIA latest earnings' } });
    expect(final.content[2]).toMatchObject({ text: 'Revenue beat guidance.', citations: [{ url: results[0]!.url }] });
  });
});

describe('structured outputs', () => {
  const schema = {
    type: 'object',
    properties: { summary: { type: 'string' }, score: { type: 'number' } },
    required: ['summary', 'score'],
    additionalProperties: false,
  } as const;

  it('records output_config.format and returns the scripted JSON, which the SDK parses', async () => {
    fake.reply(jsonReply({ summary: 'Solid quarter', score: 0.8 }));
    const response = await client.messages.parse({ ...ask('Rate AAPL'), output_config: { format: jsonSchemaOutputFormat(schema) } });

    expect(response.parsed_output).toEqual({ summary: 'Solid quarter', score: 0.8 });
    expect(fake.requests[0]?.body?.output_config).toEqual({ format: { type: 'json_schema', schema } });
  });

  it('returns invalid JSON as given, so clients must validate', async () => {
    fake.reply(textReply('{"summary": "truncated'));
    const response = await client.messages.create({ ...ask('Rate AAPL'), output_config: { format: { type: 'json_schema', schema } } });
    expect(response.content[0]).toMatchObject({ type: 'text', text: '{"summary": "truncated' });
  });

  it('rejects an object schema that does not set additionalProperties: false', async () => {
    fake.reply(jsonReply({}));
    const request = client.messages.create({
      ...ask('Rate AAPL'),
      output_config: {
        format: {
          type: 'json_schema',
          schema: {
            type: 'object',
            properties: {
              nested: { type: 'object', properties: {}, additionalProperties: false },
              open: { type: 'object', properties: {} },
            },
            additionalProperties: false,
          },
        },
      },
    });
    await expect(request).rejects.toThrow(
      /output_config\.format\.schema\.properties\.open: For 'object' type, 'additionalProperties' must be explicitly set to false/,
    );
  });
});
