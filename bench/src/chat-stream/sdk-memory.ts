// What an open model stream costs by itself, layer by layer, in a process of its own (run by the chat-stream
// scenario with --breakdown, under `node --expose-gc`): streams held open against the fakes (whose reply to a
// "[hold]" message stays open after a few tokens) by
//   - the Anthropic SDK's MessageStream over the SDK's default transport (undici's fetch) and over the engine's
//     transport (packages/ai/src/transport.ts, node:http),
//   - the SDK's raw event stream (`messages.create({ stream: true })`, what the engine reads) over the engine's
//     transport,
//   - the engine's transport alone (a streamed POST, its body read as the SDK reads it),
//   - the engine's chat run (`engine.chat`, as the chat service holds it while a reply streams).
// One variant per process (BENCH_SDK_VARIANT), so that no variant's streams are still being torn down while the
// next is measured. Prints one JSON line: heap, external memory and RSS per open stream, each after a full garbage
// collection.
import { createRequire } from 'node:module';
import path from 'node:path';
import { aiConfigShape, createAiEngine } from '@fin/ai';
import { parseConfig } from '@fin/config';
import { createLogger } from '@fin/log';
import type * as Transport from '../../../packages/ai/src/transport';
import { REPO_ROOT, compiledModule } from '../lib/processes';

// The engine's transport is not exported by @fin/ai: its compiled output, the code the services run.
const { createHttpFetch } = compiledModule('packages/ai', 'transport') as typeof Transport;

interface MessageStream {
  on(event: 'text', listener: (delta: string) => void): MessageStream;
  on(event: 'error', listener: (error: unknown) => void): MessageStream;
  done(): Promise<void>;
}

interface EventStream extends AsyncIterable<{ type: string }> {
  controller: AbortController;
}

interface AnthropicClient {
  messages: {
    stream(body: Record<string, unknown>, options: { signal: AbortSignal }): MessageStream;
    create(body: Record<string, unknown>, options: { signal: AbortSignal }): Promise<EventStream>;
  };
}

type AnthropicConstructor = new (options: Record<string, unknown>) => AnthropicClient;

// The SDK is a dependency of @fin/ai, not of the benchmarks: loaded from there, the exact copy the services use.
const { default: Anthropic } = createRequire(path.join(REPO_ROOT, 'packages/ai/package.json'))('@anthropic-ai/sdk') as {
  default: AnthropicConstructor;
};

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

async function collected(): Promise<NodeJS.MemoryUsage> {
  for (let n = 0; n < 3; n++) {
    gc?.();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage();
}

/** A request shaped like a chat turn's first round: a system prompt of about 1 KB and one tool. */
function body(index: number): Record<string, unknown> {
  return {
    model: 'claude-sonnet-5-5',
    max_tokens: 8192,
    system: 'You are the research assistant of a financial intelligence service. '.repeat(16),
    messages: [{ role: 'user', content: `[hold] stream ${index}` }],
    tools: [
      {
        name: 'market_data',
        description: 'Quotes, company profiles, key metrics and recent news for a ticker symbol.',
        input_schema: {
          type: 'object',
          properties: { symbol: { type: 'string' }, kind: { type: 'string', enum: ['overview', 'news'] } },
          required: ['symbol'],
        },
      },
    ],
  };
}

/** Opens one stream with `signal`; resolves once its reply has streamed text (the stream stays open). */
type Opener = (index: number, signal: AbortSignal) => Promise<void>;

async function measure(variant: string, open: Opener, count: number): Promise<void> {
  const before = await collected();
  const controllers: AbortController[] = [];
  const opening = 50;
  let next = 0;
  await Promise.all(
    Array.from({ length: opening }, async () => {
      while (next < count) {
        const controller = new AbortController();
        controllers.push(controller);
        await open(next++, controller.signal);
      }
    }),
  );
  const after = await collected();
  const per = (key: 'heapUsed' | 'heapTotal' | 'external' | 'rss') => (after[key] - before[key]) / count / 1000;
  process.stdout.write(
    `${JSON.stringify({ variant, streams: count, heapUsedKB: per('heapUsed'), heapTotalKB: per('heapTotal'), externalKB: per('external'), rssKB: per('rss') })}\n`,
  );
  for (const controller of controllers) controller.abort(new Error('the measurement is over'));
  // Let the aborted streams wind down before the next variant's baseline.
  await new Promise((resolve) => setTimeout(resolve, 500));
}

const messageStream =
  (client: AnthropicClient): Opener =>
  (index, signal) =>
    new Promise<void>((resolve, reject) => {
      const stream = client.messages.stream(body(index), { signal });
      stream.on('text', () => resolve());
      stream.on('error', reject);
      // Aborted at the end of the measurement: its failure is expected.
      stream.done().catch(() => undefined);
    });

const eventStream =
  (client: AnthropicClient): Opener =>
  async (index, signal) => {
    const stream = await client.messages.create({ ...body(index), stream: true }, { signal });
    const events = stream[Symbol.asyncIterator]();
    for (let event = await events.next(); !event.done && event.value.type !== 'content_block_delta'; event = await events.next());
    readOn(events);
  };

/** Goes on reading, as the engine does while a reply streams: the reader then waits on the network. */
function readOn(iterator: AsyncIterator<unknown>): void {
  const step = (): void => {
    iterator.next().then(
      (result) => (result.done ? undefined : step()),
      () => undefined,
    );
  };
  step();
}

const transportAlone =
  (fetch: typeof globalThis.fetch, baseURL: string): Opener =>
  async (index, signal) => {
    const response = await fetch(`${baseURL}/v1/messages`, {
      method: 'POST',
      signal,
      headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-bench-0000000000', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ ...body(index), stream: true }),
    });
    const chunks = (response.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
    await chunks.next();
    readOn(chunks);
  };

async function main(): Promise<void> {
  const baseURL = process.env.BENCH_ANTHROPIC_URL;
  const count = Number(process.env.BENCH_STREAMS ?? '1000');
  if (!baseURL) throw new Error('BENCH_ANTHROPIC_URL is required');
  const options = { apiKey: 'sk-ant-bench-0000000000', baseURL, maxRetries: 0, timeout: 600_000 };
  const transport = createHttpFetch();
  const config = parseConfig(aiConfigShape, {
    ANTHROPIC_API_KEY: 'sk-ant-bench-0000000000',
    ANTHROPIC_BASE_URL: baseURL,
    FINNHUB_API_KEY: 'finnhub-bench-token',
  });
  const engine = await createAiEngine({ config, logger: createLogger({ service: 'bench', level: 'warn' }) });
  const engineChat: Opener = async (index, signal) => {
    const items = engine.chat({ history: [], message: `[hold] stream ${index}` }, { signal })[Symbol.asyncIterator]();
    for (let item = await items.next(); !item.done; item = await items.next()) {
      if (item.value.kind === 'event' && item.value.event.type === 'text') break;
    }
    readOn(items);
  };
  const variants: Record<string, [string, Opener]> = {
    'message-stream-undici': ['SDK MessageStream over its default transport (undici fetch)', messageStream(new Anthropic(options))],
    'message-stream': [
      'SDK MessageStream over the engine transport (node:http)',
      messageStream(new Anthropic({ ...options, fetch: transport.fetch })),
    ],
    'event-stream': [
      'SDK raw event stream (messages.create, stream: true) over the engine transport',
      eventStream(new Anthropic({ ...options, fetch: transport.fetch })),
    ],
    transport: ['the engine transport alone (a streamed POST, body read as the SDK reads it)', transportAlone(transport.fetch, baseURL)],
    'engine-chat': ["the engine's chat run (engine.chat, as the chat service holds it)", engineChat],
  };
  const chosen = variants[process.env.BENCH_SDK_VARIANT ?? ''];
  if (chosen === undefined) throw new Error(`BENCH_SDK_VARIANT must be one of ${Object.keys(variants).join(', ')}`);
  const [variant, open] = chosen;
  // Warm-up: the variant's code and caches, so that the measurement does not pay for them.
  await measure('warm-up', open, 50);
  await measure(variant, open, count);
  await engine.close();
  transport.close();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
