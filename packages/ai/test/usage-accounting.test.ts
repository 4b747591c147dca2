// What the engine counts of calls that did not end in a whole message: a stream that broke after its
// message_start, a stream the caller aborted, attempts the SDK retried, and a citation round that failed. Each was
// billed (or may have been), so each is in the usage a run reports, or in the usage its error carries.
import { AnalysisRequest } from '@fin/contracts';
import { errorReply, hangingReply, jsonReply, textReply, toolUseReply, type FakeAnthropic } from '@fin/fakes';
import { AiError, type AiEngine } from '../src';
import { scriptedEngine } from './helpers';

const noCache = { cacheCreationInputTokens: 0, cacheReadInputTokens: 0 };

async function failureOf(run: () => Promise<unknown>): Promise<AiError> {
  const error = await run().then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AiError);
  return error as AiError;
}

/** Reads a streamed run to its end (or its failure), calling `onText` for each text event. */
async function readStream(items: AsyncIterable<{ kind: string; event?: { type: string } }>, onText?: () => void): Promise<void> {
  for await (const item of items) if (item.kind === 'event' && item.event?.type === 'text') onText?.();
}

describe('usage of calls that did not end in a whole message', () => {
  let fake: FakeAnthropic;
  let engine: AiEngine;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ fake, engine, close } = await scriptedEngine({ AI_MAX_ROUNDS: '3', AI_TIMEOUT_MS: '1000', AI_MAX_RETRIES: '1' }));
  });
  afterAll(() => close());
  afterEach(() => fake.reset());

  const streamed = AnalysisRequest.parse({ prompt: 'Quote?', output_format: { stream: true } });
  const markdownJob = AnalysisRequest.parse({ prompt: 'Quote?' });

  it('counts a stream that fails after its message_start: the input it reported and the output it wrote', async () => {
    const answer = 'Apple trades at 190 and has for a week, which is a long time for a stock like this one to stay put.';
    fake.reply(
      toolUseReply('market_data', { symbol: 'AAPL', kind: 'quote' }, { usage: { inputTokens: 100, outputTokens: 10, ...noCache } }),
      textReply(answer, {
        usage: { inputTokens: 2_000, outputTokens: 500, cacheReadInputTokens: 300, cacheCreationInputTokens: 40 },
        // message_start, content_block_start and three text deltas; then the API's overloaded_error event.
        faults: { failMidStream: { afterEvents: 5, error: { type: 'overloaded_error' } } },
      }),
    );
    const error = await failureOf(() => readStream(engine.analysisStream(streamed)));
    expect(error.kind).toBe('overloaded');
    // Before, the broken round counted nothing: 1 call, 100 input and 10 output tokens.
    expect(error.usage).toMatchObject({
      modelCalls: 2,
      inputTokens: 2_100,
      cacheReadInputTokens: 300,
      cacheCreationInputTokens: 40,
    });
    // The API reports output at the end, so what was written is counted from the three deltas received (36
    // characters): more than message_start's 1, less than the whole answer's 500.
    const written = error.usage!.outputTokens - 10;
    expect(written).toBeGreaterThan(1);
    expect(written).toBeLessThan(500);
  });

  it('counts a stream its reader aborted (a client that left): its input, and the output written until then', async () => {
    fake.reply(
      textReply('A long answer, sent slowly, that the reader stops reading after its first words arrive here.', {
        usage: { inputTokens: 3_000, outputTokens: 400, ...noCache },
        faults: { delayBetweenEventsMs: 50 },
      }),
    );
    const controller = new AbortController();
    const error = await failureOf(() =>
      readStream(engine.analysisStream(streamed, { signal: controller.signal }), () => controller.abort()),
    );
    expect(error.kind).toBe('aborted');
    // Before: nothing (the round had not finished).
    expect(error.usage).toMatchObject({ modelCalls: 1, inputTokens: 3_000 });
    expect(error.usage!.outputTokens).toBeGreaterThanOrEqual(1);
    expect(error.usage!.outputTokens).toBeLessThan(400);
  });

  it('counts an attempt the SDK retried after a timeout as a call (the model may have run it), and not one refused with 529', async () => {
    fake.reply(hangingReply(), textReply('Apple trades at 190.', { usage: { inputTokens: 700, outputTokens: 7, ...noCache } }));
    const timedOutFirst = await engine.analysis(markdownJob);
    expect(fake.requests).toHaveLength(2);
    // Before: 1 call (the SDK's retry was invisible).
    expect(timedOutFirst.usage).toEqual({ modelCalls: 2, inputTokens: 700, outputTokens: 7, ...noCache, webSearches: 0 });

    fake.reset();
    fake.reply(
      errorReply('overloaded_error', { retryAfterSeconds: 0.01 }),
      textReply('Apple trades at 190.', { usage: { inputTokens: 700, outputTokens: 7, ...noCache } }),
    );
    const refusedFirst = await engine.analysis(markdownJob);
    expect(fake.requests).toHaveLength(2);
    expect(refusedFirst.usage.modelCalls).toBe(1);
  });

  it('counts a call whose every attempt timed out, and nothing for one refused every time', async () => {
    fake.reply(hangingReply(), hangingReply());
    const timedOut = await failureOf(() => engine.analysis(markdownJob));
    expect(timedOut.kind).toBe('timeout');
    expect(timedOut.usage).toMatchObject({ modelCalls: 2, inputTokens: 0, outputTokens: 0 });

    fake.reset();
    fake.reply(errorReply('overloaded_error', { retryAfterSeconds: 0.01 }), errorReply('overloaded_error'));
    const refused = await failureOf(() => engine.analysis(markdownJob));
    expect(refused.kind).toBe('overloaded');
    expect(refused.usage).toMatchObject({ modelCalls: 0, inputTokens: 0, outputTokens: 0 });
  });

  it('keeps what a failed citation round spent in the analysis it leaves without citations', async () => {
    fake.reply(
      toolUseReply('market_data', { symbol: 'AAPL', kind: 'quote' }, { usage: { inputTokens: 100, outputTokens: 10, ...noCache } }),
      textReply('Apple trades at 190.', { usage: { inputTokens: 200, outputTokens: 20, ...noCache } }),
      // The citation round answers no JSON, twice (its repair round too): the analysis goes out without citations.
      textReply('No JSON here.', { usage: { inputTokens: 1_000, outputTokens: 30, ...noCache } }),
      jsonReply({ citations: 'not a list' }, { usage: { inputTokens: 1_100, outputTokens: 40, ...noCache } }),
    );
    const { result, usage } = await engine.analysis(markdownJob);
    expect(result.citations).toEqual([]);
    // Before: 2 calls, 300 input and 30 output tokens (the citation round's 2 calls were dropped).
    expect(usage).toEqual({ modelCalls: 4, inputTokens: 2_400, outputTokens: 100, ...noCache, webSearches: 0 });
  });
});
