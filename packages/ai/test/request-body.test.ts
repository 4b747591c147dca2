// The Messages request bodies the engine encodes itself (request-body.ts) instead of leaving it to the SDK: byte for
// byte what the SDK would send for the same parameters, with the constant parts (system prompt, tools, output
// format) made once per process and shared by every job.
import type Anthropic from '@anthropic-ai/sdk';
import { Messages, type MessageCreateParams } from '@anthropic-ai/sdk/resources/messages/messages';
import { AnalysisRequest, NewsRequest } from '@fin/contracts';
import { jsonReply, textReply, toolUseReply } from '@fin/fakes';
import { constantPart, encodeRequestBody } from '../src/request-body';
import { drain, scriptedEngine } from './helpers';

describe('encodeRequestBody', () => {
  it('writes what JSON.stringify writes, with constant parts as the body’s values, array elements and object values', () => {
    const tool = constantPart({ name: 'market_data', description: 'Quotes "and" news\n', input_schema: { type: 'object' } });
    const format = constantPart({ type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'string' } } } });
    const system = constantPart([{ type: 'text', text: 'Be brief. ✓', cache_control: { type: 'ephemeral', ttl: '1h' } }]);
    const body = {
      model: 'claude-sonnet-5-5',
      max_tokens: 1024,
      system,
      messages: [
        { role: 'user', content: 'AAPL — “news”' },
        { role: 'assistant', content: [{ type: 'text', text: 'x', citations: undefined }] },
      ],
      thinking: undefined,
      tools: [tool, { type: 'web_search_20250305', name: 'web_search', max_uses: 3 }, undefined],
      tool_choice: { type: 'auto' },
      output_config: { format, effort: 'low', unset: undefined },
      metadata: { at: new Date(0) },
      stream: false,
    };
    expect(encodeRequestBody(body).toString('utf8')).toBe(JSON.stringify(body));
    expect(encodeRequestBody({}).toString('utf8')).toBe('{}');
  });

  it('copies the bytes a constant part had when it was marked, however often it is sent', () => {
    const tool = constantPart({ name: 'a', description: 'first' });
    tool.description = 'changed';
    expect(encodeRequestBody({ tools: [tool] }).toString('utf8')).toBe('{"tools":[{"name":"a","description":"first"}]}');
  });
});

describe('the engine’s requests', () => {
  it('are what the SDK would send for the same parameters, and share their constant parts between jobs', async () => {
    const create = jest.spyOn(Messages.prototype, 'create');
    const { fake, engine, close } = await scriptedEngine();
    try {
      for (let job = 0; job < 2; job++) {
        fake.reply(toolUseReply('market_data', { symbol: 'AAPL', kind: 'news' }), jsonReply({ news: [] }));
        await engine.news(NewsRequest.parse({ symbols: ['AAPL'] }));
      }
      // A streamed call too: its parameters carry stream: true.
      fake.reply(textReply('Apple sells phones and services around the world, and its margins are high.'));
      await drain(engine.analysisStream(AnalysisRequest.parse({ prompt: 'Apple?', output_format: { stream: true } })));

      expect(create.mock.calls).toHaveLength(5);
      expect(fake.requests).toHaveLength(5);
      for (const [index, [params, options]] of create.mock.calls.entries()) {
        // The SDK's own encoding of these parameters, as it builds a request without a body of ours.
        const sdk = (create.mock.contexts[index] as unknown as { _client: Anthropic })._client;
        const { req } = await sdk.buildRequest({ method: 'post', path: '/v1/messages', body: params });
        expect(typeof req.body).toBe('string');
        const sent = Buffer.from(options?.body as Uint8Array).toString('utf8');
        expect(sent).toBe(req.body);
        expect(fake.requests[index]?.rawBody).toBe(req.body);
        expect(fake.requests[index]?.headers['content-type']).toBe('application/json');
      }
      expect(fake.requests[4]?.body?.stream).toBe(true);

      // Both news jobs' calls send the same system, tool and output format objects: encoded once for all of them.
      const news: MessageCreateParams[] = create.mock.calls.slice(0, 4).map(([params]) => params);
      const [first] = news;
      for (const params of news) {
        expect(params.system).toBe(first?.system);
        expect(params.tools?.[0]).toBe(first?.tools?.[0]);
        expect(params.output_config?.format).toBe(first?.output_config?.format);
      }
      expect(Array.isArray(first?.system)).toBe(true);
      expect(first?.output_config?.format).toBeDefined();
    } finally {
      create.mockRestore();
      await close();
    }
  });
});
