// Offline mode's in-process Messages API, driven through the real @anthropic-ai/sdk: what the SDK reads from it must
// be what it would read from the API, non-streamed and streamed, tool rounds and structured output included, and no
// socket is opened (the leak-failing test environment would report one left open).
import Anthropic, { APIUserAbortError, BadRequestError, InternalServerError, NotFoundError } from '@anthropic-ai/sdk';
import { jsonSchemaOutputFormat } from '@anthropic-ai/sdk/helpers/json-schema';
import type { MessageParam, Tool } from '@anthropic-ai/sdk/resources/messages/messages';
import { messagesApiFetch, offlineAnalyst, OFFLINE_NOTICE, toolResults, toolUse, type StandInModel } from '../src';

const MODEL = 'claude-sonnet-5-5';
const tools: Tool[] = [
  {
    name: 'market_data',
    description: 'Quote of a symbol',
    input_schema: { type: 'object', properties: { symbol: { type: 'string' } }, required: ['symbol'] },
  },
];

/** Asks for a quote first; once the tool answered, says what it returned. */
const quoteModel: StandInModel = ({ body }) => {
  const results = toolResults(body);
  if (results.length === 0) return { content: [toolUse('market_data', { symbol: 'AAPL', kind: 'overview' })] };
  return {
    content: [{ type: 'text', text: `The tool said: ${results.map((result) => result.text).join('; ')}. That is all I know about it.` }],
  };
};

const clientFor = (model: StandInModel) =>
  new Anthropic({ apiKey: 'offline-mode', baseURL: 'http://offline-analyst.invalid', maxRetries: 0, fetch: messagesApiFetch(model) });

const question: MessageParam = { role: 'user', content: 'What does AAPL trade at?' };

/** The conversation after the model's tool call, with the tool's result. */
function answered(toolCall: Anthropic.Messages.Message, result: string): MessageParam[] {
  const call = toolCall.content.find((block) => block.type === 'tool_use');
  if (call?.type !== 'tool_use') throw new Error('no tool_use block');
  return [
    question,
    { role: 'assistant', content: toolCall.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: result }] },
  ];
}

describe('the in-process Messages API', () => {
  it('answers a non-streamed tool round and the answer after it', async () => {
    const client = clientFor(quoteModel);
    const toolCall = await client.messages.create({ model: MODEL, max_tokens: 1024, tools, messages: [question] });
    expect(toolCall).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: MODEL,
      stop_reason: 'tool_use',
      content: [{ type: 'tool_use', name: 'market_data', input: { symbol: 'AAPL', kind: 'overview' } }],
    });
    expect(toolCall.id).toMatch(/^msg_01/);
    expect(toolCall._request_id).toMatch(/^req_01/);
    expect(toolCall.usage.input_tokens).toBeGreaterThan(0);

    const answer = await client.messages.create({ model: MODEL, max_tokens: 1024, tools, messages: answered(toolCall, 'AAPL 231.50') });
    expect(answer.stop_reason).toBe('end_turn');
    expect(answer.content).toEqual([{ type: 'text', text: 'The tool said: AAPL 231.50. That is all I know about it.', citations: null }]);
  });

  it('streams a tool round and the answer after it, in several deltas, as the SDK accumulates them', async () => {
    const client = clientFor(quoteModel);
    const toolStream = client.messages.stream({ model: MODEL, max_tokens: 1024, tools, messages: [question] });
    const inputDeltas: string[] = [];
    toolStream.on('inputJson', (partial) => inputDeltas.push(partial));
    const toolCall = await toolStream.finalMessage();
    expect(toolCall.stop_reason).toBe('tool_use');
    expect(toolCall.content).toEqual([
      expect.objectContaining({ type: 'tool_use', name: 'market_data', input: { symbol: 'AAPL', kind: 'overview' } }),
    ]);
    expect(inputDeltas.length).toBeGreaterThan(1);

    const answerStream = client.messages.stream({ model: MODEL, max_tokens: 1024, tools, messages: answered(toolCall, 'AAPL 231.50') });
    const textDeltas: string[] = [];
    answerStream.on('text', (delta) => textDeltas.push(delta));
    const answer = await answerStream.finalMessage();
    expect(answer.stop_reason).toBe('end_turn');
    expect(textDeltas.length).toBeGreaterThan(1);
    expect(textDeltas.join('')).toBe('The tool said: AAPL 231.50. That is all I know about it.');
    expect(answer.usage.output_tokens).toBeGreaterThan(1);
  });

  it('sends the raw server-sent events of the API, pings included', async () => {
    const client = clientFor(quoteModel);
    const response = await client.messages
      .create({ model: MODEL, max_tokens: 1024, tools, messages: [question], stream: true })
      .asResponse();
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = (await response.text()).split('\n\n').filter(Boolean);
    const types = frames.map((frame) => /^event: (\S+)\ndata: \{"type":"(\S+?)"/.exec(frame)?.slice(1, 3));
    expect(types.every((pair) => pair !== undefined && pair[0] === pair[1])).toBe(true);
    const events = types.map((pair) => pair?.[0]);
    expect(events.slice(0, 3)).toEqual(['message_start', 'ping', 'content_block_start']);
    expect(events.filter((event) => event !== 'ping').slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(events).toContain('content_block_delta');
  });

  it('answers structured output that the SDK parses', async () => {
    const schema = {
      type: 'object',
      properties: { summary: { type: 'string' }, score: { type: 'number' } },
      required: ['summary', 'score'],
      additionalProperties: false,
    } as const;
    const client = clientFor(() => ({ content: [{ type: 'text', text: JSON.stringify({ summary: 'Solid quarter', score: 0.8 }) }] }));
    const response = await client.messages.parse({
      model: MODEL,
      max_tokens: 1024,
      messages: [question],
      output_config: { format: jsonSchemaOutputFormat(schema) },
    });
    expect(response.parsed_output).toEqual({ summary: 'Solid quarter', score: 0.8 });
  });

  it('refuses what the API refuses, with its errors', async () => {
    const client = clientFor(quoteModel);
    const toolCall = await client.messages.create({ model: MODEL, max_tokens: 1024, tools, messages: [question] });
    // The tool call left without its result.
    const unanswered: MessageParam[] = [question, { role: 'assistant', content: toolCall.content }, { role: 'user', content: 'And?' }];
    await expect(client.messages.create({ model: MODEL, max_tokens: 1024, tools, messages: unanswered })).rejects.toBeInstanceOf(
      BadRequestError,
    );
    await expect(client.models.list()).rejects.toBeInstanceOf(NotFoundError);
    const broken = clientFor(() => {
      throw new Error('no answer');
    });
    await expect(broken.messages.create({ model: MODEL, max_tokens: 1024, messages: [question] })).rejects.toThrow(InternalServerError);
  });

  it('counts tokens', async () => {
    const counted = await clientFor(quoteModel).messages.countTokens({ model: MODEL, messages: [question] });
    expect(counted.input_tokens).toBeGreaterThan(0);
  });

  it('ends a stream mid-reply when the caller aborts', async () => {
    const client = clientFor(() => ({ content: [{ type: 'text', text: 'A long answer. '.repeat(200) }] }));
    const controller = new AbortController();
    const stream = client.messages.stream({ model: MODEL, max_tokens: 1024, messages: [question] }, { signal: controller.signal });
    let deltas = 0;
    stream.on('text', () => {
      deltas += 1;
      if (deltas === 3) controller.abort();
    });
    await expect(stream.finalMessage()).rejects.toBeInstanceOf(APIUserAbortError);
    expect(deltas).toBe(3);
  });

  it('serves the offline analyst: a market_data round, then an answer marked offline', async () => {
    const client = clientFor(offlineAnalyst());
    const system = 'You are a research assistant.';
    const ask = { model: MODEL, max_tokens: 1024, system, tools };
    const toolCall = await client.messages.stream({ ...ask, messages: [question] }).finalMessage();
    expect(toolCall.content).toEqual([
      expect.objectContaining({ type: 'tool_use', name: 'market_data', input: { symbol: 'AAPL', kind: 'overview' } }),
    ]);
    const answer = await client.messages.stream({ ...ask, messages: answered(toolCall, 'no data') }).finalMessage();
    const reply = answer.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
    expect(reply).toContain(OFFLINE_NOTICE);
  });
});
