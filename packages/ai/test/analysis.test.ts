import { parseConfig } from '@fin/config';
import { AnalysisRequest, analysisText, type AnalysisRequestInput, type AnalysisResult } from '@fin/contracts';
import { jsonReply, textReply, toolUseReply, type FakeAnthropic } from '@fin/fakes';
import { aiConfigShape, createAiEngine, type AiEngine, type EngineEvent, type ProductOutcome, type StreamItem } from '../src';
import { drain, scriptedEngine, silentLogger } from './helpers';

type Item = StreamItem<EngineEvent, ProductOutcome<AnalysisResult>>;

/** The streamed text and the result of a streamed analysis. */
function split(items: Item[]): { chunks: string[]; result: AnalysisResult } {
  const chunks = items.flatMap((item) => (item.kind === 'event' && item.event.type === 'text' ? [item.event.text] : []));
  const last = items.at(-1);
  if (last?.kind !== 'result') throw new Error('the stream did not end with a result');
  return { chunks, result: last.result.result };
}

const parse = (input: AnalysisRequestInput) => AnalysisRequest.parse(input);

describe('custom analysis: offline analyst', () => {
  let engine: AiEngine;

  beforeAll(async () => {
    engine = await createAiEngine({ config: parseConfig(aiConfigShape, {}), logger: silentLogger });
  });
  afterAll(() => engine.close());

  it('answers json_schema with exactly the requested fields, each of its type, for every type name', async () => {
    const schema = { summary: 'string', score: 'number', count: 'integer', hedged: 'boolean', notes: 'array', details: 'object' } as const;
    const { result } = await engine.analysis(
      parse({ prompt: 'Risk of my portfolio?', symbols: ['AAPL', 'MSFT'], output_format: { type: 'json_schema', schema } }),
    );
    expect(result.format).toBe('json_schema');
    const content = result.content as Record<string, unknown>;
    expect(Object.keys(content).sort()).toEqual(Object.keys(schema).sort());
    expect(typeof content.summary).toBe('string');
    expect(typeof content.score).toBe('number');
    expect(Number.isInteger(content.count)).toBe(true);
    expect(typeof content.hedged).toBe('boolean');
    expect(Array.isArray(content.notes)).toBe(true);
    expect(content.details).toEqual(expect.any(Object));
    expect(Array.isArray(content.details)).toBe(false);
  });

  it('answers json with a JSON object and markdown with text, both marked offline', async () => {
    const json = await engine.analysis(parse({ prompt: 'Summarise NVDA.', symbols: ['NVDA'], output_format: { type: 'json' } }));
    expect(json.result).toMatchObject({
      format: 'json',
      content: expect.any(Object),
      meta: { offline: true, prompt_version: 'analysis@3' },
    });
    const markdown = await engine.analysis(parse({ prompt: 'Summarise NVDA.', symbols: ['NVDA'] }));
    expect(markdown.result.format).toBe('markdown');
    expect(markdown.result.content).toMatch(/^## Summary/);
  });

  it('streams markdown in several chunks whose concatenation is the stored content exactly', async () => {
    const { chunks, result } = split(
      await drain(engine.analysisStream(parse({ prompt: 'Is MSFT defensive?', symbols: ['MSFT'], output_format: { stream: true } }))),
    );
    expect(chunks.length).toBeGreaterThan(3);
    expect(chunks.join('')).toBe(result.content);
  });

  it('streams a json_schema answer as the text of the validated result', async () => {
    const request = parse({
      prompt: 'Score TSLA.',
      symbols: ['TSLA'],
      output_format: { type: 'json_schema', schema: { summary: 'string', score: 'number' }, stream: true },
    });
    const { chunks, result } = split(await drain(engine.analysisStream(request)));
    expect(chunks.join('')).toBe(analysisText(result));
    expect(JSON.parse(chunks.join(''))).toEqual(result.content);
  });
});

describe('custom analysis: what the model writes', () => {
  let fake: FakeAnthropic;
  let engine: AiEngine;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ fake, engine, close } = await scriptedEngine({ AI_MAX_ROUNDS: '3' }));
  });
  afterAll(() => close());
  afterEach(() => fake.reset());

  it('keeps the stored markdown equal to the stream: outer whitespace left out, a blank line where tools were used', async () => {
    // Claude Sonnet 5 returns text written before a tool call as text (Sonnet 5.5 returns it as thinking, below).
    const sonnet5 = await scriptedEngine({ AI_MAX_ROUNDS: '3', AI_MODEL: 'claude-sonnet-5' });
    try {
      sonnet5.fake.reply(
        toolUseReply('market_data', { symbol: 'AAPL', kind: 'quote' }, { preamble: '\n  Let me check the quote.  \n' }),
        textReply('  \n## Answer\n\nApple is fine.\n\n'),
      );
      const request = parse({ prompt: 'Apple?', output_format: { stream: true } });
      const { chunks, result } = split(await drain(sonnet5.engine.analysisStream(request)));
      expect(result.content).toBe('Let me check the quote.\n\n## Answer\n\nApple is fine.');
      expect(chunks.join('')).toBe(result.content);
    } finally {
      await sonnet5.close();
    }
  });

  it('leaves out of the answer what Claude Sonnet 5.5 writes between tool calls (it comes back as thinking)', async () => {
    fake.reply(
      toolUseReply('market_data', { symbol: 'AAPL', kind: 'quote' }, { preamble: '\n  Let me check the quote.  \n' }),
      textReply('  \n## Answer\n\nApple is fine.\n\n'),
    );
    const { chunks, result } = split(await drain(engine.analysisStream(parse({ prompt: 'Apple?', output_format: { stream: true } }))));
    expect(result.content).toBe('## Answer\n\nApple is fine.');
    expect(chunks.join('')).toBe(result.content);
  });

  it('repairs a JSON answer of the wrong shape before anything is streamed', async () => {
    fake.reply(jsonReply({ summary: 'ok', score: 'high', _citations: [] }), jsonReply({ summary: 'ok', score: 0.8, _citations: [] }));
    const request = parse({
      prompt: 'Score?',
      output_format: { type: 'json_schema', schema: { summary: 'string', score: 'number' }, stream: true },
    });
    const { chunks, result } = split(await drain(engine.analysisStream(request)));
    expect(result.content).toEqual({ summary: 'ok', score: 0.8 });
    // The rejected first answer never reached the stream.
    expect(chunks.join('')).toBe(JSON.stringify({ summary: 'ok', score: 0.8 }, null, 2));
  });

  it('refuses an empty markdown answer', async () => {
    fake.reply(textReply('   \n '));
    await expect(engine.analysis(parse({ prompt: 'Anything?' }))).rejects.toMatchObject({ name: 'AiError', kind: 'invalid_output' });
  });
});
