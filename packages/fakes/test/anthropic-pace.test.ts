// The model's pace as the fake keeps it (@fin/offline pace.ts): time to the first token, then output tokens per
// second. Measured on the wall clock with time compressed (timeScale). Lower bounds are exact (an event is never
// sent before it is due); upper bounds are generous or relative, since a loaded machine only ever adds delay.
import Anthropic from '@anthropic-ai/sdk';
import { startFakeAnthropic, textReply, type FakeAnthropic } from '../src';

const MODEL = 'claude-sonnet-5-5';
// Model time: 2 s to the first token, 100 tokens a second; a 400-token answer takes 6 s. At 0.05: 100 ms, then 200 ms.
const PACE = { models: { [MODEL]: { timeToFirstTokenMs: 2_000, outputTokensPerSecond: 100 } }, timeScale: 0.05 };
const TTFT_MS = 100;
const OUTPUT_MS = 200;
/** What a busy machine may add to a paced answer before a bound calls it wrong. */
const SLACK_MS = 2_000;
const reply = textReply('A paced answer. '.repeat(40), { usage: { outputTokens: 400 } });
const ask = { model: MODEL, max_tokens: 1_024, messages: [{ role: 'user' as const, content: 'take your time' }] };

let fake: FakeAnthropic | undefined;
const clientOf = (server: FakeAnthropic) => new Anthropic({ apiKey: 'test', baseURL: server.url, maxRetries: 0, logLevel: 'off' });

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

describe('pace', () => {
  it('is off by default: an answer comes at once', async () => {
    // A million output tokens: hours at any model's pace.
    fake = await startFakeAnthropic({ handler: () => textReply('long', { usage: { outputTokens: 1_000_000 } }) });
    const started = performance.now();
    await clientOf(fake).messages.create(ask);
    expect(performance.now() - started).toBeLessThan(SLACK_MS);
  });

  it('delays a whole answer by the time to the first token plus its output at the model rate', async () => {
    fake = await startFakeAnthropic({ handler: () => reply, pace: PACE });
    const started = performance.now();
    const message = await clientOf(fake).messages.create(ask);
    const elapsed = performance.now() - started;
    expect(message.usage.output_tokens).toBe(400);
    expect(elapsed).toBeGreaterThanOrEqual(TTFT_MS + OUTPUT_MS - 5);
    expect(elapsed).toBeLessThan(TTFT_MS + OUTPUT_MS + SLACK_MS);
  });

  it('streams: the first byte after the time to first token, the rest at the model rate', async () => {
    fake = await startFakeAnthropic({ handler: () => reply, pace: PACE });
    const started = performance.now();
    const stream = clientOf(fake).messages.stream(ask);
    let firstEventAt: number | undefined;
    const deltasAt: number[] = [];
    for await (const event of stream) {
      const at = performance.now() - started;
      firstEventAt ??= at;
      if (event.type === 'content_block_delta') deltasAt.push(at);
    }
    const endedAt = performance.now() - started;

    expect(firstEventAt).toBeGreaterThanOrEqual(TTFT_MS - 5);
    // No delta before it is due: the middle one not before half the output time (the spread itself is
    // eventSchedule's, tested in @fin/offline without a clock).
    expect(deltasAt.length).toBeGreaterThan(10);
    expect(deltasAt[Math.floor(deltasAt.length / 2)]).toBeGreaterThanOrEqual(TTFT_MS + OUTPUT_MS * 0.45);
    expect(endedAt).toBeGreaterThanOrEqual(TTFT_MS + OUTPUT_MS - 5);
    expect(endedAt).toBeLessThan(TTFT_MS + OUTPUT_MS + SLACK_MS);
  });

  it('stops writing when the client goes away mid-answer', async () => {
    fake = await startFakeAnthropic({ handler: () => reply, pace: PACE });
    const controller = new AbortController();
    const stream = clientOf(fake).messages.stream(ask, { signal: controller.signal });
    const reading = (async () => {
      for await (const event of stream) if (event.type === 'content_block_delta') controller.abort();
    })();
    await expect(reading).rejects.toThrow();
    const until = performance.now() + SLACK_MS;
    while (fake.requests[0]?.cancelled !== true && performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(fake.requests[0]?.cancelled).toBe(true);
  });
});
