// What an open model stream costs by itself, in a process of its own (run by the chat-stream scenario with
// --breakdown, under `node --expose-gc`): the Anthropic SDK's MessageStream held open against the fakes (whose
// reply to a "[hold]" message stays open after a few tokens), over the SDK's default transport (undici's fetch)
// and over the transport the engine uses (packages/ai/src/transport.ts, node:http). Prints one JSON line per
// variant: heap, external memory and RSS per open stream, each after a full garbage collection.
import { createRequire } from 'node:module';
import path from 'node:path';
import { createHttpFetch } from '../../../packages/ai/src/transport';
import { REPO_ROOT } from '../lib/processes';

interface MessageStream {
  on(event: 'text', listener: (delta: string) => void): MessageStream;
  on(event: 'error', listener: (error: unknown) => void): MessageStream;
  abort(): void;
  done(): Promise<void>;
}

interface AnthropicClient {
  messages: { stream(body: Record<string, unknown>): MessageStream };
}

type AnthropicConstructor = new (options: Record<string, unknown>) => AnthropicClient;

// The SDK is a dependency of @fin/ai, not of the benchmarks: loaded from there, the exact copy the services use.
const { default: Anthropic } = createRequire(path.join(REPO_ROOT, 'packages/ai/package.json'))('@anthropic-ai/sdk') as { default: AnthropicConstructor };

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
        input_schema: { type: 'object', properties: { symbol: { type: 'string' }, kind: { type: 'string', enum: ['overview', 'news'] } }, required: ['symbol'] },
      },
    ],
  };
}

async function measure(variant: string, client: AnthropicClient, count: number): Promise<void> {
  const before = await collected();
  const streams: MessageStream[] = [];
  const opening = 50;
  let next = 0;
  await Promise.all(
    Array.from({ length: opening }, async () => {
      while (next < count) {
        const stream = client.messages.stream(body(next++));
        streams.push(stream);
        await new Promise<void>((resolve, reject) => {
          stream.on('text', () => resolve());
          stream.on('error', reject);
        });
      }
    }),
  );
  const after = await collected();
  const per = (key: 'heapUsed' | 'heapTotal' | 'external' | 'rss') => (after[key] - before[key]) / count / 1000;
  process.stdout.write(`${JSON.stringify({ variant, streams: count, heapUsedKB: per('heapUsed'), heapTotalKB: per('heapTotal'), externalKB: per('external'), rssKB: per('rss') })}\n`);
  for (const stream of streams) {
    stream.on('error', () => undefined);
    stream.abort();
  }
  await Promise.allSettled(streams.map((stream) => stream.done()));
}

async function main(): Promise<void> {
  const baseURL = process.env.BENCH_ANTHROPIC_URL;
  const count = Number(process.env.BENCH_STREAMS ?? '1000');
  if (!baseURL) throw new Error('BENCH_ANTHROPIC_URL is required');
  const options = { apiKey: 'sk-ant-bench-0000000000', baseURL, maxRetries: 0, timeout: 600_000 };
  // Warm-up: the SDK's and the transports' code and caches, so that the first variant does not pay for them.
  const transport = createHttpFetch();
  await measure('warm-up', new Anthropic({ ...options, fetch: transport.fetch }), 50);
  await measure('warm-up', new Anthropic(options), 50);
  await measure('SDK over its default transport (undici fetch)', new Anthropic(options), count);
  await measure('SDK over the engine transport (node:http)', new Anthropic({ ...options, fetch: transport.fetch }), count);
  transport.close();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
