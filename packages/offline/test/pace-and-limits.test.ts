// The stand-in's pace and rate limits: the default figures (with the per-call durations they give the products),
// and offline mode's in-process API keeping both, through the real SDK. Wall-clock waits are compressed with
// timeScale; lower bounds are exact, upper bounds generous (a loaded machine only ever adds delay, seconds of it
// when its cores are shared with other work), so each is set far below what the behaviour it rules out would take.
import Anthropic, { RateLimitError } from '@anthropic-ai/sdk';
import {
  API_MODELS,
  createPacer,
  DEFAULT_MODEL_PACE,
  eventSchedule,
  messagesApiFetch,
  renderEvents,
  resolveReply,
  type MessagesApiOptions,
  type StandInModel,
} from '../src';

const MODEL = 'claude-sonnet-5-5';
const answer: StandInModel = () => ({ content: [{ type: 'text', text: 'Offline answer. '.repeat(30) }], usage: { outputTokens: 300 } });
const clientFor = (options: MessagesApiOptions) =>
  new Anthropic({
    apiKey: 'offline-mode',
    baseURL: 'http://offline-analyst.invalid',
    maxRetries: 0,
    fetch: messagesApiFetch(answer, options),
  });
const ask = { model: MODEL, max_tokens: 1_024, messages: [{ role: 'user' as const, content: 'hello' }] };
/** What a loaded machine may add to a call: half the uncompressed pace's 40 s below, far from an unpaced reply's hours. */
const SLACK_MS = 20_000;

describe('default pace', () => {
  it('has a time to first token and an output rate for every model the stand-in serves', () => {
    for (const model of Object.keys(API_MODELS)) {
      expect(DEFAULT_MODEL_PACE[model]?.timeToFirstTokenMs).toBeGreaterThan(0);
      expect(DEFAULT_MODEL_PACE[model]?.outputTokensPerSecond).toBeGreaterThan(0);
    }
  });

  it('gives the per-call durations capacity is planned with: news ~4 s, a stock report ~25 s, a chat reply ~10 s', () => {
    const pacer = createPacer();
    const call = (model: string, outputTokens: number) => (pacer.firstTokenMs(model) + pacer.outputMs(model, outputTokens)) / 1_000;
    expect(call('claude-haiku-5-5', 400)).toBeCloseTo(3.8, 0);
    expect(call('claude-sonnet-5-5', 1_500)).toBeCloseTo(25.6, 0);
    expect(call('claude-sonnet-5-5', 500)).toBeCloseTo(9.7, 0);
    // An alias runs at its model's pace, an unknown id at its family's, and a time scale compresses every delay.
    expect(pacer.firstTokenMs('claude-haiku-4-5-20251001')).toBe(pacer.firstTokenMs('claude-haiku-4-5'));
    expect(pacer.firstTokenMs('claude-opus-9')).toBe(DEFAULT_MODEL_PACE['claude-opus-5-5']?.timeToFirstTokenMs);
    expect(createPacer({ timeScale: 0.1 }).outputMs(MODEL, 630)).toBeCloseTo(1_000, 0);
  });
});

describe('event schedule', () => {
  it('sends message_start at the first token and spreads the deltas over the output time by their length', () => {
    const pacer = createPacer({ models: { [MODEL]: { timeToFirstTokenMs: 1_000, outputTokensPerSecond: 100 } } });
    const reply = resolveReply({ content: [{ type: 'text', text: 'x'.repeat(1_200) }], usage: { outputTokens: 200 } }, { ...ask });
    const events = renderEvents(reply, { textChunkChars: 12, jsonChunkChars: 24, pingEveryEvents: 5 });
    const due = eventSchedule(pacer, MODEL, events, 200);

    expect(due[0]).toBe(1_000);
    expect(due.at(-1)).toBe(3_000);
    expect(due).toEqual([...due].sort((a, b) => a - b));
    // A hundred deltas of 12 characters: each 20 ms after the one before it.
    const deltas = due.filter((_, index) => events[index]?.event === 'content_block_delta');
    expect(deltas).toHaveLength(100);
    expect(deltas[0]).toBeCloseTo(1_020, 6);
    expect(deltas[49]).toBeCloseTo(2_000, 6);
  });
});

describe('offline mode with pace and limits', () => {
  it('answers at once and unlimited by default, without anthropic-ratelimit-* headers', async () => {
    // A million output tokens would take hours at any model's pace.
    const client = new Anthropic({
      apiKey: 'offline-mode',
      baseURL: 'http://offline-analyst.invalid',
      maxRetries: 0,
      fetch: messagesApiFetch(() => ({ content: [{ type: 'text', text: 'long' }], usage: { outputTokens: 1_000_000 } })),
    });
    const started = performance.now();
    const { response } = await client.messages.create(ask).withResponse();
    expect(performance.now() - started).toBeLessThan(SLACK_MS);
    expect(response.headers.get('anthropic-ratelimit-requests-limit')).toBeNull();
  });

  it('keeps the pace: a whole answer after the first token and its output, a stream spread over it', async () => {
    // 10 s to the first token and 300 tokens at 10 a second, 40 s in all, compressed two hundred times: 50 ms, then
    // 150 ms.
    const client = clientFor({
      pace: { models: { [MODEL]: { timeToFirstTokenMs: 10_000, outputTokensPerSecond: 10 } }, timeScale: 0.005 },
    });
    let started = performance.now();
    await client.messages.create(ask);
    const whole = performance.now() - started;
    expect(whole).toBeGreaterThanOrEqual(195);
    expect(whole).toBeLessThan(200 + SLACK_MS);

    started = performance.now();
    let first: number | undefined;
    for await (const event of client.messages.stream(ask)) {
      if (event.type === 'message_start') first = performance.now() - started;
    }
    const streamed = performance.now() - started;
    expect(first).toBeGreaterThanOrEqual(45);
    expect(streamed).toBeGreaterThanOrEqual(195);
    expect(streamed).toBeLessThan(200 + SLACK_MS);
  });

  it("enforces the organisation's limits with the API's 429 and headers", async () => {
    // The limiter's clock stands still: retry-after is the whole half minute a request refills in, however long the
    // three calls took (on the wall clock, time passing between them shortens it).
    const at = Date.now();
    const client = clientFor({ limits: { models: { [MODEL]: { requestsPerMinute: 2, outputTokensPerMinute: 50_000 } }, now: () => at } });
    const { response } = await client.messages.create(ask).withResponse();
    expect(response.headers.get('anthropic-ratelimit-requests-remaining')).toBe('1');
    expect(response.headers.get('anthropic-ratelimit-output-tokens-limit')).toBe('50000');
    await client.messages.stream(ask).finalMessage();

    const refused = await client.messages.create(ask).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RateLimitError);
    const error = refused as RateLimitError;
    expect(error.headers.get('retry-after')).toBe('30');
    expect(error.headers.get('anthropic-ratelimit-requests-remaining')).toBe('0');
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    expect(error.message).toContain('of 2 requests per minute');
  });
});
