// What the chat service's tests share: a database of the file's own with two tenants, the fake Claude behind the
// real SDK and engine (sample market data for the market_data tool), and the service itself listening on a port
// of its own, reached with signed identities as the gateway would send them.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { aiConfigShape, createAiEngine, offlineAnalyst, SampleMarketDataProvider, type AiEngine } from '@fin/ai';
import { parseConfig } from '@fin/config';
import { ChatStreamEvents, type ChatStreamEventName } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { startFakeAnthropic, type FakeAnthropic, type MessagesRequestBody } from '@fin/fakes';
import { identityKey, serveDefinition, served, signIdentity } from '@fin/http';
import { createLogger, type Logger } from '@fin/log';
import {
  createTestDatabase,
  openEventStream,
  testCustomerToolsKey,
  type EventStreamClient,
  type SseFrame,
  type TestDatabase,
} from '@fin/testing';
import { chatConfigShape } from '../src/config';
import type { ServedService } from '@fin/http';
import { chatService } from '../src/service';

const SECRET = 'chat-test-secret-0123456789abcdef0123';
const KEY = identityKey(SECRET, 'chat');
export const logger: Logger = createLogger({ service: 'chat-test', level: 'silent' });

export interface Shared {
  db: TestDatabase;
  pool: Pool;
  fake: FakeAnthropic;
  engine: AiEngine;
  tenantA: string;
  tenantB: string;
  close(): Promise<void>;
}

/** The database, tenants, fake Claude (answered by the offline analyst unless a test scripts it) and engine. */
export async function startShared(): Promise<Shared> {
  const db = await createTestDatabase();
  const pool = createPool({ connectionString: db.url, applicationName: 'chat-test', max: 10 });
  const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('acme'), ('globex') RETURNING id::text");
  const fake = await startFakeAnthropic({ handler: offlineAnalyst() });
  const config = parseConfig(aiConfigShape, {
    ANTHROPIC_API_KEY: 'sk-ant-test-0000000000',
    ANTHROPIC_BASE_URL: fake.url,
    AI_MAX_RETRIES: '0',
    AI_WEB_SEARCH: 'false',
  });
  const engine = await createAiEngine({ config, logger, marketData: new SampleMarketDataProvider() });
  return {
    db,
    pool,
    fake,
    engine,
    tenantA: rows[0]!.id,
    tenantB: rows[1]!.id,
    async close() {
      await engine.close();
      await fake.close();
      await pool.end();
      await db.drop();
    },
  };
}

export interface ChatInstance extends ServedService {
  url: string;
  /** A signed request, as the gateway forwards it; the answer read as an event stream (or a body). */
  send(
    method: 'GET' | 'POST',
    path: string,
    options?: { tenant?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<EventStreamClient>;
  /** POST /api/chat as tenant A unless said otherwise. */
  post(body: unknown, tenant?: string): Promise<EventStreamClient>;
  /** GET /api/chat/stream with this query. */
  stream(query: Record<string, string>, options?: { tenant?: string; lastEventId?: string }): Promise<EventStreamClient>;
  /** Closes the server (and every stream on it) without the shutdown sequence. */
  stop(): Promise<void>;
}

/** The chat service on a port of its own over the shared pool and engine. */
export async function startChat(shared: Shared, env: Record<string, string> = {}): Promise<ChatInstance> {
  const config = parseConfig(chatConfigShape, {
    PORT: '0',
    DATABASE_URL: shared.db.url,
    INTERNAL_SIGNING_SECRET: SECRET,
    ANTHROPIC_API_KEY: 'sk-ant-test-0000000000',
    CUSTOMER_TOOLS_ENCRYPTION_KEY: testCustomerToolsKey(),
    CHAT_DETACH_GRACE_MS: '0',
    SHUTDOWN_DRAIN_TIMEOUT_MS: '0',
    ...env,
  });
  const service = served(await serveDefinition(chatService, { config, logger, shared: { pool: shared.pool, engine: shared.engine } }));
  const url = `http://127.0.0.1:${(service.server.address() as AddressInfo).port}`;
  const send: ChatInstance['send'] = (method, path, options = {}) => {
    const caller = { tenantId: options.tenant ?? shared.tenantA, keyId: randomUUID(), scopes: ['chat'] };
    const signed = signIdentity({ requestId: randomUUID(), caller }, KEY, {
      method,
      path,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    return openEventStream(`${url}${path}`, { method, body: options.body, headers: { ...signed, ...options.headers } });
  };
  return {
    ...service,
    url,
    send,
    post: (body, tenant) => send('POST', '/api/chat', { body, tenant }),
    stream: (query, options = {}) =>
      send('GET', `/api/chat/stream${Object.keys(query).length > 0 ? `?${new URLSearchParams(query).toString()}` : ''}`, {
        tenant: options.tenant,
        headers: options.lastEventId === undefined ? {} : { 'Last-Event-ID': options.lastEventId },
      }),
    async stop() {
      await service.closers[0]?.close();
      await new Promise<void>((resolve) => {
        service.server.close(() => resolve());
        service.server.closeAllConnections();
      });
    },
  };
}

export interface ChatTestContext {
  readonly shared: Shared;
  readonly chat: ChatInstance;
}

/**
 * A test file's setup: the shared parts and one chat instance (with `env`), the fake's script reset after each
 * test, everything closed after the last.
 */
export function useChat(env: Record<string, string> = {}): ChatTestContext {
  const context: { shared?: Shared; chat?: ChatInstance } = {};
  beforeAll(async () => {
    context.shared = await startShared();
    context.chat = await startChat(context.shared, env);
  });
  afterEach(() => context.shared?.fake.reset());
  afterAll(async () => {
    await context.chat?.stop();
    await context.shared?.close();
  });
  return {
    get shared() {
      return context.shared!;
    },
    get chat() {
      return context.chat!;
    },
  };
}

/**
 * Checks every frame against the contract: an id of this reply, an event the chat stream declares, data its
 * schema accepts, and a `type` equal to the event name (the error body's `type` is its category instead).
 */
export function expectValidChatEvents(frames: readonly SseFrame[]): void {
  for (const frame of frames) {
    const schema = ChatStreamEvents[frame.event as ChatStreamEventName];
    expect([frame.event, schema !== undefined]).toEqual([frame.event, true]);
    expect(schema.safeParse(frame.data).error).toBeUndefined();
    if (frame.event !== 'error') expect((frame.data as { type: string }).type).toBe(frame.event);
    expect(frame.id).toMatch(/^[0-9a-f-]{36}:\d+$/);
  }
}

/** `event` or `event:node` / `event:tool` for each frame: the shape of a stream at a glance. */
export function outline(frames: readonly SseFrame[]): string[] {
  return frames.map((frame) => {
    const data = frame.data as { node?: string; tool?: string };
    return [frame.event, data.node ?? data.tool].filter((part) => part !== undefined).join(':');
  });
}

/** Consecutive token events folded into one `token` entry. */
export function compact(names: readonly string[]): string[] {
  return names.filter((name, index) => name !== 'token' || names[index - 1] !== 'token');
}

/** The text of the token frames. */
export function textOf(frames: readonly SseFrame[]): string {
  return frames.flatMap((frame) => (frame.event === 'token' ? [(frame.data as { content: string }).content] : [])).join('');
}

/** Reads frames until one satisfies `until` (included); fails when the stream ends first. */
export async function readUntil(client: EventStreamClient, until: (frame: SseFrame) => boolean): Promise<SseFrame[]> {
  const frames: SseFrame[] = [];
  for (;;) {
    const frame = await client.next();
    if (frame === undefined) throw new Error(`the stream ended before the expected event; got ${JSON.stringify(outline(frames))}`);
    frames.push(frame);
    if (until(frame)) return frames;
  }
}

/** The conversation (user and assistant texts, in order) a request to the model carried. */
export function conversationOf(body: MessagesRequestBody | undefined): string[] {
  return (body?.messages ?? []).flatMap((entry) => {
    if (typeof entry.content === 'string') return [entry.content];
    // A turn marked as a prompt-cache breakpoint is sent as its text block; tool results are not conversation.
    const texts = entry.content.filter((block) => block.type === 'text').map((block) => String(block.text));
    return texts.length > 0 ? [texts.join('')] : [];
  });
}

/** A promise with its resolve function: a gate a scripted model turn waits at. */
export function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}
