import { offlineAnalyst } from '@fin/ai';
import { ChatDoneEvent, ChatStreamEvents, ErrorBody, type ChatStreamEventName } from '@fin/contracts';
import {
  hangingReply,
  startFakeAnthropic,
  startFakeFinnhub,
  textReply,
  type FakeAnthropic,
  type FakeFinnhub,
  type MessagesRequestBody,
} from '@fin/fakes';
import { createTestDatabase, openEventStream, waitFor, type EventStreamClient, type SseFrame, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { UPSTREAM_MODES, sharedEnv, startSystem, type System } from '../src/system';

/**
 * Chat through the whole system: a client talks to the gateway with an API key, the gateway holds a chat slot
 * and relays the event stream from the chat service, which streams the fake Claude's reply and keeps the
 * conversation in Postgres. Every service is a process of its own.
 */
describe.each(UPSTREAM_MODES)('chat through the whole system (%s upstream)', (upstream) => {
  let db: TestDatabase;
  let claude: FakeAnthropic;
  let finnhub: FakeFinnhub;
  let system: System;
  let key: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    claude = await startFakeAnthropic({ handler: offlineAnalyst() });
    finnhub = await startFakeFinnhub({ token: 'finnhub-e2e-token' });
    // A short re-attach window, so that a client that leaves stops the model call within a second. The gateway
    // reads it too: a chat slot whose client left stays taken that long (plus a second), while the reply runs on.
    const env = {
      ...sharedEnv({ databaseUrl: db.url, anthropicUrl: claude.url, finnhubUrl: finnhub.apiBaseUrl, finnhubToken: 'finnhub-e2e-token' }),
      CHAT_DETACH_GRACE_MS: '1000',
    };
    system = await startSystem(env, {}, { products: ['chat'], upstream });
    key = system.tenantKey('acme');
  }, 120_000);

  afterEach(() => claude.reset());
  afterAll(async () => {
    await system?.stop();
    await Promise.all([claude?.close(), finnhub?.close()]);
    await db?.drop();
  });

  const headers = (extra: Record<string, string> = {}) => ({ 'X-API-Key': key, ...extra });
  const post = (body: unknown) => openEventStream(`${system.gatewayUrl}/api/chat`, { body, headers: headers() });
  const get = (query: Record<string, string>, lastEventId?: string) =>
    openEventStream(`${system.gatewayUrl}/api/chat/stream?${new URLSearchParams(query).toString()}`, {
      headers: headers(lastEventId === undefined ? {} : { 'Last-Event-ID': lastEventId }),
    });

  function expectValid(frames: readonly SseFrame[]): void {
    for (const frame of frames) {
      expect(ChatStreamEvents[frame.event as ChatStreamEventName]?.safeParse(frame.data).success).toBe(true);
      if (frame.event !== 'error') expect((frame.data as { type: string }).type).toBe(frame.event);
    }
  }
  const outline = (frames: readonly SseFrame[]) =>
    frames
      .map((frame) =>
        [frame.event, (frame.data as { node?: string; tool?: string }).node ?? (frame.data as { tool?: string }).tool]
          .filter(Boolean)
          .join(':'),
      )
      .filter((name, index, names) => name !== 'token' || names[index - 1] !== 'token');
  const text = (frames: readonly SseFrame[]) =>
    frames.flatMap((frame) => (frame.event === 'token' ? [(frame.data as { content: string }).content] : [])).join('');
  /** The conversation's texts a model call carried (a turn marked as a cache breakpoint is sent as its text block). */
  const said = (body: MessagesRequestBody | undefined) =>
    (body?.messages ?? []).flatMap((entry) => {
      if (typeof entry.content === 'string') return [entry.content];
      const texts = entry.content.filter((block) => block.type === 'text').map((block) => String(block.text));
      return texts.length > 0 ? [texts.join('')] : [];
    });

  async function turn(message: string, conversationId: string | null) {
    const client = await post({ message, conversation_id: conversationId });
    expect(client.status).toBe(200);
    const frames = await client.rest();
    return { frames, conversationId: ChatDoneEvent.parse(frames.at(-1)?.data).conversation_id };
  }

  it('streams research with market_data, tokens and done; a second message continues the conversation', async () => {
    const client = await post({ message: 'What is Apple trading at?', conversation_id: null });
    expect(client.status).toBe(200);
    expect(client.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(client.headers['x-request-id']).toBeDefined();
    const first = await client.rest();
    expectValid(first);
    expect(outline(first)).toEqual([
      'node_start:research',
      'tool_start:market_data',
      'tool_end:market_data',
      'node_start:answer',
      'token',
      'done',
    ]);
    expect(text(first)).toMatch(/Apple.*last traded at/);
    const { conversation_id } = ChatDoneEvent.parse(first.at(-1)?.data);

    const before = claude.requests.length;
    const second = await turn('And its margins?', conversation_id);
    expect(second.conversationId).toBe(conversation_id);
    expect(said(claude.requests[before]?.body)).toEqual(['What is Apple trading at?', text(first), 'And its margins?']);
  });

  it('still answers the 12th turn, with a bounded context', async () => {
    let conversationId: string | null = null;
    for (let n = 1; n <= 12; n++) ({ conversationId } = await turn(`Question ${n}: what is a dividend?`, conversationId));
    const seen = said(claude.requests.at(-1)?.body);
    // Past 10 complete exchanges the oldest 5 are left out at once: turns 6 to 11, and the new question.
    expect(seen).toHaveLength(13);
    expect(seen[0]).toBe('Question 6: what is a dividend?');
    expect(seen.at(-1)).toBe('Question 12: what is a dividend?');
  });

  it('stops the model call when the client disconnects mid-stream, and records the reply as interrupted', async () => {
    claude.reply(
      textReply('Dividends are paid out of profits, usually every quarter, and '.repeat(6), { faults: { hang: { afterEvents: 4 } } }),
    );
    const client = await post({ message: 'Tell me everything about dividends.', conversation_id: null });
    let frame = await client.next();
    while (frame !== undefined && frame.event !== 'token') frame = await client.next();
    const replyId = frame?.id?.split(':')[0];
    const modelCall = claude.requests.at(-1)!;
    expect(modelCall.cancelled).toBe(false);

    client.close();
    await waitFor(() => modelCall.cancelled, { what: 'the model call to be cancelled' });
    const status = await waitFor(async () => {
      const connection = new pg.Client(db.url);
      await connection.connect();
      try {
        const { rows } = await connection.query<{ status: string }>('SELECT status FROM messages WHERE id = $1', [replyId]);
        return rows[0]?.status !== 'streaming' && rows[0]?.status;
      } finally {
        await connection.end();
      }
    });
    expect(status).toBe('interrupted');
  });

  it('chats over GET /api/chat/stream and re-attaches with Last-Event-ID through the gateway', async () => {
    const started = await get({ message: 'How is NVDA doing?' });
    expect(started.status).toBe(200);
    const frames = await started.rest();
    expectValid(frames);
    expect(frames.every((frame) => /^[0-9a-f-]{36}:\d+$/.test(frame.id ?? ''))).toBe(true);
    const { conversation_id } = ChatDoneEvent.parse(frames.at(-1)?.data);

    // An EventSource that reconnects repeats its URL (message included) and sends the last id it saw.
    const resumed = await get({ message: 'How is NVDA doing?' }, frames[1]!.id);
    expect(await resumed.rest()).toEqual(frames.slice(2));
    const finished = await get({ message: 'How is NVDA doing?', conversation_id }, frames.at(-1)!.id);
    expect(finished.status).toBe(204);
  });

  it('counts GET streams against the 10 concurrent chat streams of an account', async () => {
    // A reply an earlier test's client left holds its slot until the detach grace has passed.
    await waitFor(
      async () => {
        const connection = new pg.Client(db.url);
        await connection.connect();
        try {
          const { rows } = await connection.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM chat_stream_slots WHERE lease_expires_at > now()',
          );
          return rows[0]?.n === 0;
        } finally {
          await connection.end();
        }
      },
      { what: 'the chat slots of earlier tests to be free', intervalMs: 250 },
    );
    claude.setHandler(() => hangingReply());
    const open: EventStreamClient[] = [];
    try {
      for (let n = 0; n < 10; n++) {
        const client = await get({ message: `Stream ${n}` });
        expect(client.status).toBe(200);
        open.push(client);
      }
      const refused = await get({ message: 'One too many' });
      expect(refused.status).toBe(429);
      expect(ErrorBody.parse(await refused.body()).type).toBe('rate_limit_exceeded');
    } finally {
      for (const client of open) client.close();
      claude.reset();
    }
    // Closing them frees the slots, once the chat service's detach grace has passed (the replies run on that long).
    // Polled once a second: every attempt counts against the account's 60 chat requests a minute.
    await waitFor(
      async () => {
        const again = await post({ message: 'What is a bond?', conversation_id: null, stream: false });
        const ok = again.status === 200;
        await again.body();
        return ok;
      },
      { what: 'a chat slot to be free again', intervalMs: 1_000, timeoutMs: 30_000 },
    );
  });
});
