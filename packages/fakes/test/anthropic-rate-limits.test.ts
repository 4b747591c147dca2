// The organisation's rate limits as the fake enforces them, one test per documented rule
// (https://platform.claude.com/docs/en/api/rate-limits; @fin/offline rate-limits.ts), seen through the real SDK.
// The buckets run on an injected clock, so refilling takes no time.
import Anthropic, { RateLimitError } from '@anthropic-ai/sdk';
import { startFakeAnthropic, textReply, type FakeAnthropic, type FakeAnthropicOptions } from '../src';

const MODEL = 'claude-sonnet-5-5';
let clock = 0;
let fake: FakeAnthropic | undefined;

async function start(options: FakeAnthropicOptions): Promise<{ fake: FakeAnthropic; client: Anthropic }> {
  fake = await startFakeAnthropic({ now: () => clock, handler: () => textReply('ok'), ...options });
  return { fake, client: new Anthropic({ apiKey: 'test', baseURL: fake.url, maxRetries: 0, logLevel: 'off' }) };
}

const ask = (content = 'hello', maxTokens = 256) => ({
  model: MODEL,
  max_tokens: maxTokens,
  messages: [{ role: 'user' as const, content }],
});

/** A request's answer with its headers, or the RateLimitError it got. */
async function call(client: Anthropic, body: Anthropic.MessageCreateParamsNonStreaming) {
  try {
    const { data, response } = await client.messages.create(body).withResponse();
    return { status: 200, headers: response.headers, message: data };
  } catch (error) {
    if (!(error instanceof RateLimitError)) throw error;
    return { status: 429, headers: error.headers, error };
  }
}

const header = (headers: Headers, name: string) => headers.get(`anthropic-ratelimit-${name}`);
const remaining = (headers: Headers, name: string) => Number(header(headers, `${name}-remaining`));

beforeEach(() => {
  clock = Date.parse('2026-11-29T10:00:00Z');
});
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

describe('rate limits', () => {
  it('are off by default: no anthropic-ratelimit-* headers and no 429', async () => {
    const { client } = await start({});
    for (let i = 0; i < 5; i++) {
      const answer = await call(client, ask());
      expect(answer.status).toBe(200);
      expect([...answer.headers.keys()].filter((name) => name.startsWith('anthropic-ratelimit-'))).toEqual([]);
    }
  });

  it('send every anthropic-ratelimit-* header on a successful answer, remaining counting down', async () => {
    const { client } = await start({
      rateLimits: { models: { [MODEL]: { requestsPerMinute: 50, inputTokensPerMinute: 30_000, outputTokensPerMinute: 8_000 } } },
    });
    const first = await call(client, ask());
    const second = await call(client, ask());
    expect(first.status).toBe(200);
    for (const name of ['requests', 'input-tokens', 'output-tokens', 'tokens']) {
      for (const part of ['limit', 'remaining', 'reset']) expect(header(first.headers, `${name}-${part}`)).not.toBeNull();
    }
    expect(header(first.headers, 'requests-limit')).toBe('50');
    expect(header(first.headers, 'input-tokens-limit')).toBe('30000');
    expect(header(first.headers, 'output-tokens-limit')).toBe('8000');
    expect(remaining(first.headers, 'requests')).toBe(49);
    expect(remaining(second.headers, 'requests')).toBe(48);
    // RFC 3339, to the second: when the bucket is full again (one request refills in 60/50 s).
    expect(header(first.headers, 'requests-reset')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(Date.parse(header(first.headers, 'requests-reset') ?? '') - clock).toBeLessThanOrEqual(2_000);
    // Token counts remaining are rounded to the nearest thousand; max_tokens 256 is held until the answer ends.
    expect(remaining(first.headers, 'output-tokens') % 1_000).toBe(0);
  });

  it('answers 429 rate_limit_error once the request bucket is spent, with retry-after and the headers, consuming no reply', async () => {
    const { fake, client } = await start({ rateLimits: { models: { [MODEL]: { requestsPerMinute: 3 } } } });
    for (let i = 0; i < 3; i++) expect((await call(client, ask())).status).toBe(200);
    fake.reply(textReply('scripted, kept for later'));

    const refused = await call(client, ask());

    expect(refused.status).toBe(429);
    const body = (refused.error as RateLimitError).error as { type: string; error: { type: string; message: string }; request_id: string };
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('rate_limit_error');
    expect(body.error.message).toMatch(/^This request would exceed the rate limit for your organization \(.+\) of 3 requests per minute\./);
    expect(body.request_id).toMatch(/^req_/);
    expect(refused.headers.get('request-id')).toBe(body.request_id);
    // Three a minute refill one every 20 s: that is the wait, in whole seconds.
    expect(refused.headers.get('retry-after')).toBe('20');
    expect(refused.headers.get('retry-after-ms')).toBeNull();
    expect(header(refused.headers, 'requests-remaining')).toBe('0');
    expect(fake.pendingReplies).toBe(1);
    expect(fake.rateLimited).toBe(1);
    expect(fake.requests.at(-1)?.answeredBy).toBe('rate_limited');
  });

  it('refill continuously, not in fixed windows: one request back after 20 s of a 3-a-minute limit, all after a minute', async () => {
    const { client } = await start({ rateLimits: { models: { [MODEL]: { requestsPerMinute: 3 } } } });
    for (let i = 0; i < 3; i++) await call(client, ask());
    expect((await call(client, ask())).status).toBe(429);

    clock += 10_000;
    expect((await call(client, ask())).status).toBe(429);
    clock += 10_000;
    expect((await call(client, ask())).status).toBe(200);
    expect((await call(client, ask())).status).toBe(429);

    clock += 60_000;
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await call(client, ask())).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('keep each model apart; an alias counts against its model', async () => {
    const { client } = await start({ rateLimits: { allModels: { requestsPerMinute: 1 } } });
    expect((await call(client, { ...ask(), model: 'claude-haiku-4-5' })).status).toBe(200);
    expect((await call(client, { ...ask(), model: 'claude-haiku-4-5-20251001' })).status).toBe(429);
    expect((await call(client, ask())).status).toBe(200);
  });

  it('count input tokens against ITPM, and refuse a request whose input does not fit', async () => {
    const { client } = await start({ rateLimits: { models: { [MODEL]: { inputTokensPerMinute: 20_000 } } } });
    const long = 'word '.repeat(6_000);
    const first = await call(client, ask(long));
    expect(first.status).toBe(200);
    const input = first.message?.usage.input_tokens ?? 0;
    expect(input).toBeGreaterThan(6_000);
    expect(remaining(first.headers, 'input-tokens')).toBe(Math.round((20_000 - input) / 1_000) * 1_000);
    await call(client, ask(long));

    const refused = await call(client, ask(long));
    expect(refused.status).toBe(429);
    expect((refused.error as RateLimitError).message).toContain('of 20,000 input tokens per minute');
    // What is missing refills at 20,000 a minute: a few seconds, never more than the minute.
    const wait = Number(refused.headers.get('retry-after'));
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
    clock += wait * 1_000;
    expect((await call(client, ask(long))).status).toBe(200);
  });

  it('do not count cache reads against ITPM; cache writes and uncached input count', async () => {
    const { client } = await start({ rateLimits: { models: { [MODEL]: { inputTokensPerMinute: 100_000 } } } });
    const cached = {
      ...ask('What changed?'),
      system: [{ type: 'text' as const, text: 'Background. '.repeat(8_000), cache_control: { type: 'ephemeral' as const } }],
    };
    const writing = await call(client, cached);
    const written = writing.message?.usage.cache_creation_input_tokens ?? 0;
    expect(written).toBeGreaterThan(8_000);
    const afterWrite = remaining(writing.headers, 'input-tokens');
    expect(afterWrite).toBe(Math.round((100_000 - written - (writing.message?.usage.input_tokens ?? 0)) / 1_000) * 1_000);

    const reading = await call(client, cached);
    expect(reading.message?.usage.cache_read_input_tokens).toBe(written);
    // Only the few uncached tokens after the breakpoint were counted: the rounded remainder did not move.
    expect(remaining(reading.headers, 'input-tokens')).toBe(afterWrite);
  });

  it('estimate OTPM from max_tokens at the start and give back what was not written at the end', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const { fake, client } = await start({ rateLimits: { models: { [MODEL]: { outputTokensPerMinute: 10_000 } } } });
    // The first answer is held by its handler, so its max_tokens stays reserved while the second arrives.
    fake.reply(async () => {
      await held;
      return textReply('short');
    });
    const first = call(client, ask('first', 8_000));
    while (fake.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));

    const second = await call(client, ask('second', 8_000));
    expect(second.status).toBe(429);
    expect((second.error as RateLimitError).message).toContain('of 10,000 output tokens per minute');
    expect(header(second.headers, 'output-tokens-remaining')).toBe('2000');

    release();
    const answered = await first;
    expect(answered.status).toBe(200);
    expect(answered.message?.usage.output_tokens).toBeLessThan(10);
    // The headers were taken at admission (8,000 held); once it ended, all but the few written came back.
    expect(remaining(answered.headers, 'output-tokens')).toBe(2_000);
    expect((await call(client, ask('third', 8_000))).status).toBe(200);
  });

  it('report the most restrictive of input and output in the tokens-* headers', async () => {
    const { client } = await start({
      rateLimits: { models: { [MODEL]: { inputTokensPerMinute: 100_000, outputTokensPerMinute: 10_000 } } },
    });
    const answer = await call(client, ask('hi', 6_000));
    // Output has 4,000 of 10,000 left (40 %), input nearly all: the tokens-* headers are output's.
    expect(header(answer.headers, 'tokens-limit')).toBe('10000');
    expect(header(answer.headers, 'tokens-remaining')).toBe('4000');
    expect(header(answer.headers, 'tokens-reset')).toBe(header(answer.headers, 'output-tokens-reset'));
  });

  it('with a compressed time scale, refill faster and give the exact wait in retry-after-ms, which the SDK follows', async () => {
    fake = await startFakeAnthropic({
      handler: () => textReply('ok'),
      timeScale: 0.01,
      rateLimits: { allModels: { requestsPerMinute: 2 } },
    });
    const client = new Anthropic({ apiKey: 'test', baseURL: fake.url, maxRetries: 3, logLevel: 'off' });
    const started = Date.now();
    // Sent together, two fit; the third waits a 30 s refill compressed to 300 ms, told by retry-after-ms, and is
    // retried by the SDK (its own backoff without the header would be 0.5 s and more).
    const answers = await Promise.all([0, 1, 2].map(() => client.messages.create(ask())));
    expect(answers).toHaveLength(3);
    expect(fake.rateLimited).toBeGreaterThanOrEqual(1);
    expect(Date.now() - started).toBeLessThan(10_000);
    const refused = fake.requests.find((request) => request.answeredBy === 'rate_limited');
    expect(refused).toBeDefined();
  });

  it('with a compressed time scale, state the limits and what remains per wall-clock minute (÷ timeScale)', async () => {
    const { client } = await start({
      timeScale: 0.1,
      now: () => 1_000_000,
      rateLimits: { models: { [MODEL]: { requestsPerMinute: 4_000, inputTokensPerMinute: 2_000_000, outputTokensPerMinute: 400_000 } } },
    });
    const answer = await call(client, ask('hi', 10_000));
    // The buckets refill a model-minute's limit every 6 wall-clock seconds: ten times the limit per wall-clock minute.
    expect(header(answer.headers, 'requests-limit')).toBe('40000');
    expect(header(answer.headers, 'requests-remaining')).toBe('39990');
    expect(header(answer.headers, 'input-tokens-limit')).toBe('20000000');
    expect(header(answer.headers, 'output-tokens-limit')).toBe('4000000');
    expect(header(answer.headers, 'output-tokens-remaining')).toBe('3900000');
    expect(header(answer.headers, 'tokens-limit')).toBe('4000000');
  });
});
