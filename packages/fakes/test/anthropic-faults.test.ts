// Errors and injected faults, as the real SDK experiences them: its error classes, its retry policy, its timeouts.
import Anthropic, {
  AnthropicError,
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  AuthenticationError,
  InternalServerError,
  NotFoundError,
  OverloadedError,
  RateLimitError,
} from '@anthropic-ai/sdk';
import { errorReply, hangingReply, startFakeAnthropic, textReply, type FakeAnthropic } from '../src';

const ask = (content: string) => ({ model: 'claude-sonnet-5-5', max_tokens: 512, messages: [{ role: 'user' as const, content }] });
let fake: FakeAnthropic;

const clientFor = (options: { maxRetries?: number; timeout?: number; apiKey?: string } = {}) =>
  new Anthropic({
    apiKey: options.apiKey ?? 'test',
    baseURL: fake.url,
    maxRetries: options.maxRetries ?? 0,
    timeout: options.timeout,
    logLevel: 'off',
  });

beforeAll(async () => {
  fake = await startFakeAnthropic();
});
afterEach(() => fake.reset());
afterAll(() => fake.close());

describe('HTTP errors', () => {
  it('honours retry-after on a 429: the SDK retries after the given delay and succeeds', async () => {
    fake.reply(errorReply('rate_limit_error', { retryAfterSeconds: 0.8 }), textReply('second time lucky'));
    const started = Date.now();

    const response = await clientFor({ maxRetries: 1 }).messages.create(ask('retry me'));

    expect(response.content[0]).toMatchObject({ text: 'second time lucky' });
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests.map((request) => request.headers['x-stainless-retry-count'])).toEqual(['0', '1']);
    // The SDK's own first backoff is at most 500 ms, so waiting 800 ms means it followed the header.
    expect(Date.now() - started).toBeGreaterThanOrEqual(790);
  });

  it('surfaces a 429 as RateLimitError with the API body when retries are exhausted', async () => {
    fake.reply(errorReply('rate_limit_error', { retryAfterSeconds: 0.01 }), errorReply('rate_limit_error', { retryAfterSeconds: 0.01 }));
    const error = await clientFor({ maxRetries: 1 })
      .messages.create(ask('x'))
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).headers.get('retry-after')).toBe('0.01');
    expect(fake.requests).toHaveLength(2);
  });

  it('surfaces 529 as OverloadedError with status 529 once retries are exhausted', async () => {
    fake.reply(
      errorReply('overloaded_error', { retryAfterSeconds: 0.01 }),
      errorReply('overloaded_error', { retryAfterSeconds: 0.01 }),
      textReply('not reached'),
    );
    const error = await clientFor({ maxRetries: 1 })
      .messages.create(ask('busy?'))
      .catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(OverloadedError);
    const overloaded = error as OverloadedError;
    expect(overloaded.status).toBe(529);
    expect(overloaded.type).toBe('overloaded_error');
    expect(overloaded.apiMessage).toBe('Overloaded');
    expect(overloaded.requestID).toMatch(/^req_01/);
    expect(overloaded.error).toMatchObject({ type: 'error', error: { type: 'overloaded_error' }, request_id: overloaded.requestID });
    expect(fake.pendingReplies).toBe(1);
  });

  it.each([
    ['invalid_request_error', 400],
    ['authentication_error', 401],
    ['permission_error', 403],
    ['not_found_error', 404],
    ['request_too_large', 413],
    ['api_error', 500],
  ] as const)('answers %s with status %i', async (type, status) => {
    fake.reply(errorReply(type, { message: `scripted ${type}` }));
    const error = (await clientFor()
      .messages.create(ask('x'))
      .catch((caught: unknown) => caught)) as APIError;
    expect(error).toBeInstanceOf(APIError);
    expect(error.status).toBe(status);
    expect(error.type).toBe(type);
    expect(error.apiMessage).toBe(`scripted ${type}`);
    expect(error.requestID).toMatch(/^req_01/);
  });

  it('rejects a wrong API key when one is configured, without consuming the script', async () => {
    const strict = await startFakeAnthropic({ apiKey: 'right-key' });
    try {
      strict.reply(textReply('only for the right key'));
      const client = new Anthropic({ apiKey: 'wrong-key', baseURL: strict.url, maxRetries: 0, logLevel: 'off' });
      await expect(client.messages.create(ask('x'))).rejects.toBeInstanceOf(AuthenticationError);
      expect(strict.pendingReplies).toBe(1);
    } finally {
      await strict.close();
    }
  });

  it('answers unknown paths with the API not_found_error', async () => {
    const error = await clientFor()
      .models.retrieve('claude-sonnet-5-5')
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NotFoundError);
  });
});

describe('streaming faults', () => {
  const long = 'Alphabet said AI answers in search are not diluting ad pricing, and cloud backlog keeps growing.';

  it('ends the stream with an error event after a 200: the SDK stream throws the API error', async () => {
    fake.reply(textReply(long, { faults: { failMidStream: { afterEvents: 4, error: { type: 'overloaded_error' } } } }));
    const stream = clientFor().messages.stream(ask('stream then fail'));
    const deltas: string[] = [];
    stream.on('text', (delta) => deltas.push(delta));

    const error = (await stream.finalMessage().catch((caught: unknown) => caught)) as APIError;

    expect(error).toBeInstanceOf(APIError);
    expect(error.status).toBeUndefined();
    expect(error.type).toBe('overloaded_error');
    expect(error.message).toContain('Overloaded');
    // message_start, content_block_start and two deltas went out before the error.
    expect(deltas).toHaveLength(2);
    expect(long.startsWith(deltas.join(''))).toBe(true);
  });

  it('sends a malformed data line that makes the SDK stream throw', async () => {
    fake.reply(textReply(long, { faults: { malformedJson: true } }));
    const error = (await clientFor()
      .messages.stream(ask('broken'))
      .finalMessage()
      .catch((caught: unknown) => caught)) as Error;
    // MessageStream wraps the JSON.parse failure in an AnthropicError whose cause is the SyntaxError.
    expect(error).toBeInstanceOf(AnthropicError);
    expect((error.cause as Error).name).toBe('SyntaxError');
    expect(error.message).toMatch(/JSON/);
  });

  it('drops the connection mid-stream: the SDK stream fails instead of completing', async () => {
    fake.reply(textReply(long, { faults: { dropConnectionAfterEvents: 3 } }));
    const stream = clientFor().messages.stream(ask('drop'));
    await expect(stream.finalMessage()).rejects.toThrow();
    expect(stream.errored).toBe(true);
  });

  it('stalls after some events; the caller can abort the stream', async () => {
    fake.reply(textReply(long, { faults: { hang: { afterEvents: 3 } } }));
    const stream = clientFor().messages.stream(ask('stall'));
    const first = new Promise<void>((resolve) => stream.once('text', () => resolve()));
    await first;
    stream.abort();
    await expect(stream.finalMessage()).rejects.toThrow(/abort/i);
  });

  it('records that the client cancelled a stream it aborted, and not one it read to the end', async () => {
    fake.reply(textReply(long, { faults: { hang: { afterEvents: 3 } } }), textReply('whole'));
    const controller = new AbortController();
    const stalled = clientFor().messages.stream(ask('stall'), { signal: controller.signal });
    await new Promise<void>((resolve) => stalled.once('text', () => resolve()));
    expect(fake.requests[0]?.cancelled).toBe(false);
    controller.abort();
    await expect(stalled.finalMessage()).rejects.toThrow(/abort/i);
    // The fake sees the connection close a moment after the SDK gave up; poll until it has.
    while (fake.requests[0]?.cancelled !== true) await new Promise((resolve) => setTimeout(resolve, 10));

    await clientFor().messages.stream(ask('read it all')).finalMessage();
    expect(fake.requests[1]?.cancelled).toBe(false);
  });
});

describe('non-streamed faults', () => {
  it('sends a body cut off mid-JSON: the SDK call fails', async () => {
    fake.reply(textReply('whole answer', { faults: { malformedJson: true } }));
    const error = (await clientFor()
      .messages.create(ask('broken'))
      .catch((caught: unknown) => caught)) as Error;
    expect(error.name).toBe('SyntaxError');
    expect(error.message).toMatch(/JSON/);
  });

  it('delays the headers by latencyMs', async () => {
    fake.reply(textReply('late', { faults: { latencyMs: 150 } }));
    const started = Date.now();
    await clientFor().messages.create(ask('slow'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  it('never answers a hanging reply: the SDK timeout fires', async () => {
    fake.reply(hangingReply());
    const started = Date.now();
    const error = await clientFor({ timeout: 200 })
      .messages.create(ask('hang'))
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(APIConnectionTimeoutError);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('drops the connection before answering: the SDK reports a connection error and retries', async () => {
    fake.reply(textReply('never', { faults: { dropConnectionAfterEvents: 0 } }), textReply('recovered'));
    const response = await clientFor({ maxRetries: 1 }).messages.create(ask('drop'));
    expect(response.content[0]).toMatchObject({ text: 'recovered' });

    fake.reply(textReply('never', { faults: { dropConnectionAfterEvents: 0 } }));
    await expect(clientFor().messages.create(ask('drop'))).rejects.toBeInstanceOf(APIConnectionError);
  });

  it('refuses a streaming fault on a non-streamed request instead of ignoring it', async () => {
    fake.reply(textReply('x', { faults: { failMidStream: { afterEvents: 1, error: { type: 'api_error' } } } }));
    await expect(clientFor().messages.create(ask('mismatch'))).rejects.toThrow(
      /not streamed, but its scripted reply has a streaming fault/,
    );
  });
});

describe('unscripted requests', () => {
  it('fail loudly with a 500 that names the request and is not retried', async () => {
    const error = (await clientFor({ maxRetries: 2 })
      .messages.create(ask('What is the outlook for TSLA?'))
      .catch((caught: unknown) => caught)) as InternalServerError;

    expect(error).toBeInstanceOf(InternalServerError);
    expect(error.status).toBe(500);
    expect(error.message).toContain('no reply scripted for request #0');
    expect(error.message).toContain('What is the outlook for TSLA?');
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]?.answeredBy).toBe('unscripted');
  });

  it('fail loudly when a handler throws', async () => {
    fake.setHandler(() => {
      throw new Error('analyst has no answer');
    });
    await expect(clientFor({ maxRetries: 2 }).messages.create(ask('x'))).rejects.toThrow(/fake-anthropic: analyst has no answer/);
    expect(fake.requests).toHaveLength(1);
  });
});
