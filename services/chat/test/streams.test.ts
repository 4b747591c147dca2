// The life of a stream: a client that leaves stops the model call, a quiet stream carries keep-alives, a
// shutdown ends every stream with a last event, and a client can re-attach to a reply with Last-Event-ID —
// live while it is written, from storage once it ended, and from another replica.
import { ChatDoneEvent } from '@fin/contracts';
import { hangingReply, textReply, toolUseReply } from '@fin/fakes';
import { createShutdown } from '@fin/http';
import { waitFor, type SseFrame } from '@fin/testing';
import {
  compact,
  conversationOf,
  expectValidChatEvents,
  gate,
  logger,
  outline,
  readUntil,
  startChat,
  startShared,
  textOf,
  type ChatInstance,
  type Shared,
} from './support';

const LONG = 'Bond prices fall when yields rise, because the fixed coupons of existing bonds become less attractive. '.repeat(5);

let shared: Shared;

beforeAll(async () => {
  shared = await startShared();
});
afterEach(() => shared.fake.reset());
afterAll(() => shared?.close());

const replyIdOf = (frames: readonly SseFrame[]) => frames[0]!.id!.split(':')[0]!;

async function replyRow(replyId: string) {
  const { rows } = await shared.pool.query<{ status: string; content: string; error: { type: string } | null }>(
    'SELECT status, content, error FROM messages WHERE id = $1',
    [replyId],
  );
  return rows[0];
}

/** Waits until the reply is no longer streaming; returns its row. */
const ended = (replyId: string) =>
  waitFor(async () => (await replyRow(replyId))?.status !== 'streaming' && replyRow(replyId), { what: `reply ${replyId} to end` });

async function conversationOn(chat: ChatInstance): Promise<string> {
  const frames = await (await chat.post({ message: 'What is a bond?' })).rest();
  return ChatDoneEvent.parse(frames.at(-1)?.data).conversation_id;
}

describe('without a re-attach window', () => {
  let chat: ChatInstance;
  beforeAll(async () => {
    chat = await startChat(shared, { CHAT_HEARTBEAT_MS: '1000' });
  });
  afterAll(() => chat?.stop());

  it('cancels the model call when the client disconnects, and records the reply as interrupted, never as context', async () => {
    const conversationId = await conversationOn(chat);
    shared.fake.reply(textReply(LONG, { faults: { hang: { afterEvents: 4 } } }));
    const client = await chat.post({ message: 'Why do bond prices fall?', conversation_id: conversationId });
    const seen = await readUntil(client, (frame) => frame.event === 'token');
    const modelCall = shared.fake.requests.at(-1)!;
    expect(modelCall.cancelled).toBe(false);

    client.close();
    await waitFor(() => modelCall.cancelled, { what: 'the model call to be cancelled' });
    const row = await ended(replyIdOf(seen));
    expect(row).toMatchObject({ status: 'interrupted', error: { type: 'conflict' } });
    // What was written before the cut is kept (for the record and for a re-attach), marked as not complete.
    expect(row?.content.startsWith(textOf(seen))).toBe(true);
    expect(LONG.startsWith(row?.content ?? 'x')).toBe(true);

    await (await chat.post({ message: 'What is a coupon?', conversation_id: conversationId })).rest();
    expect(conversationOf(shared.fake.requests.at(-1)?.body)).not.toContain('Why do bond prices fall?');
  });

  it("counts what a reply its client left had spent: the cut-off call's input, and its output until then", async () => {
    const day = async () =>
      (
        await shared.pool.query<{ runs: number; failed_runs: number; model_calls: string; input_tokens: string; output_tokens: string }>(
          `SELECT runs, failed_runs, model_calls::text, input_tokens::text, output_tokens::text FROM usage_daily
            WHERE tenant_id = $1 AND product = 'chat' AND day = (now() AT TIME ZONE 'UTC')::date`,
          [shared.tenantB],
        )
      ).rows[0] ?? { runs: 0, failed_runs: 0, model_calls: '0', input_tokens: '0', output_tokens: '0' };
    const before = await day();
    shared.fake.reply(
      textReply(LONG, {
        usage: { inputTokens: 4_000, outputTokens: 900, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 },
        faults: { hang: { afterEvents: 4 } },
      }),
    );
    const client = await chat.post({ message: 'Why do bond prices fall?' }, shared.tenantB);
    const seen = await readUntil(client, (frame) => frame.event === 'token');
    client.close();
    expect(await ended(replyIdOf(seen))).toMatchObject({ status: 'interrupted' });
    const after = await day();
    // Before: the account's day counted the reply as a failed run that cost nothing.
    expect(after.runs - before.runs).toBe(1);
    expect(after.failed_runs - before.failed_runs).toBe(1);
    expect(Number(after.model_calls) - Number(before.model_calls)).toBe(1);
    expect(Number(after.input_tokens) - Number(before.input_tokens)).toBe(4_000);
    // The API reports output at the end: what was written (two text deltas) is counted from what arrived.
    const output = Number(after.output_tokens) - Number(before.output_tokens);
    expect(output).toBeGreaterThan(1);
    expect(output).toBeLessThan(900);
  });

  it('sends a keep-alive comment while the model is thinking', async () => {
    shared.fake.reply(hangingReply());
    const client = await chat.post({ message: 'Think about it.' });
    await waitFor(() => client.comments.includes('keep-alive'), { what: 'a keep-alive comment' });
    client.close();
  });

  it('ends every open stream with an error event on shutdown and records the replies as interrupted', async () => {
    const service = await startChat(shared, { SHUTDOWN_DRAIN_TIMEOUT_MS: '1000' });
    shared.fake.reply(textReply(LONG, { faults: { hang: { afterEvents: 4 } } }), hangingReply());
    const writing = await service.post({ message: 'Explain bonds at length.' });
    await readUntil(writing, (frame) => frame.event === 'token');
    const thinking = await service.post({ message: 'And think hard first.' });
    await waitFor(() => shared.fake.requests.length === 2, { what: 'both model calls to start' });

    const exits: number[] = [];
    const shutdown = createShutdown({
      logger,
      lifecycle: service.lifecycle,
      servers: [service.server],
      drainTimeoutMs: 1_000,
      closers: service.closers,
      exit: (code) => exits.push(code),
    });
    const stopped = shutdown('SIGTERM');
    const streams = await Promise.all([writing.rest(), thinking.rest()]);
    await stopped;

    expect(exits).toEqual([0]);
    for (const frames of streams) {
      expectValidChatEvents(frames);
      expect(frames.at(-1)).toMatchObject({ event: 'error', data: { type: 'service_unavailable', status_code: 503 } });
      expect(await replyRow(frames.at(-1)!.id!.split(':')[0]!)).toMatchObject({
        status: 'interrupted',
        error: { type: 'service_unavailable' },
      });
    }
    expect(shared.fake.requests.map((request) => request.cancelled)).toEqual([true, true]);
  });
});

describe('with a re-attach window', () => {
  let chat: ChatInstance;
  beforeAll(async () => {
    chat = await startChat(shared, { CHAT_DETACH_GRACE_MS: '60000' });
  });
  afterAll(() => chat?.stop());

  it('picks a reply up live where the client left it, after its Last-Event-ID', async () => {
    const thinking = gate();
    shared.fake.reply(toolUseReply('market_data', { symbol: 'AAPL', kind: 'quote' }), async () => {
      await thinking.opened;
      return textReply('Apple last traded at 190.');
    });
    const first = await chat.post({ message: 'What is Apple trading at?' });
    const seen = await readUntil(first, (frame) => frame.event === 'tool_end');
    first.close();

    const resumed = await chat.stream({}, { lastEventId: seen[1]!.id! });
    expect(resumed.status).toBe(200);
    expect(await resumed.next()).toEqual(seen[2]);
    thinking.open();
    const rest = await resumed.rest();
    expectValidChatEvents(rest);
    expect(compact(outline(rest))).toEqual(['node_start:answer', 'token', 'done']);
    expect(rest[0]?.id).toBe(`${replyIdOf(seen)}:4`);
    expect(textOf(rest)).toBe('Apple last traded at 190.');
    expect(shared.fake.requests.some((request) => request.cancelled)).toBe(false);
  });

  it("replays a finished reply from storage, answers 204 once nothing is left, and never sends the query's message again", async () => {
    const frames = await (await chat.stream({ message: 'How is GOOGL doing?' })).rest();
    const { conversation_id } = ChatDoneEvent.parse(frames.at(-1)?.data);

    const fromStorage = await chat.stream({ message: 'How is GOOGL doing?' }, { lastEventId: frames[2]!.id! });
    expect(await fromStorage.rest()).toEqual(frames.slice(3));
    const nothingLeft = await chat.stream({ message: 'How is GOOGL doing?' }, { lastEventId: frames.at(-1)!.id! });
    expect(nothingLeft.status).toBe(204);
    const { rows } = await shared.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM messages WHERE conversation_id = $1', [
      conversation_id,
    ]);
    expect(rows[0]?.n).toBe(2);

    const latest = await chat.stream({ conversation_id });
    expect(await latest.rest()).toEqual(frames);
  });

  it('lets a new message replace a reply whose client left, instead of refusing it', async () => {
    const conversationId = await conversationOn(chat);
    shared.fake.reply(textReply(LONG, { faults: { hang: { afterEvents: 4 } } }));
    const left = await chat.post({ message: 'Why do bond prices fall?', conversation_id: conversationId });
    const seen = await readUntil(left, (frame) => frame.event === 'token');
    const modelCall = shared.fake.requests.at(-1)!;
    left.close();

    const next = await (await chat.post({ message: 'Never mind: what is a coupon?', conversation_id: conversationId })).rest();
    expect(next.at(-1)?.event).toBe('done');
    expect(modelCall.cancelled).toBe(true);
    expect(await replyRow(replyIdOf(seen))).toMatchObject({ status: 'interrupted', error: { type: 'conflict' } });
  });

  it('follows a reply being written by another replica and replays it once it is complete', async () => {
    const other = await startChat(shared);
    try {
      const conversationId = await conversationOn(chat);
      const thinking = gate();
      shared.fake.reply(async () => {
        await thinking.opened;
        return textReply('Written on the first replica.');
      });
      const writer = await chat.post({ message: 'Say something.', conversation_id: conversationId });
      await waitFor(() => shared.fake.requests.length === 2, { what: 'the model call' });

      const follower = await other.stream({ conversation_id: conversationId });
      expect(follower.status).toBe(200);
      thinking.open();
      const [written, followed] = await Promise.all([writer.rest(), follower.rest()]);
      expect(followed).toEqual(written);
      expect(textOf(followed)).toBe('Written on the first replica.');
    } finally {
      await other.stop();
    }
  });
});
