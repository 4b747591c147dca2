// Chat turns as a client sees them: the event stream of a reply, conversations that continue with a bounded
// context, the non-streamed answer, and one reply at a time per conversation.
import { ChatDoneEvent, ChatResponse, ErrorBody } from '@fin/contracts';
import { textReply } from '@fin/fakes';
import { compact, conversationOf, expectValidChatEvents, gate, outline, readUntil, textOf, useChat } from './support';

describe('chat turns', () => {
  const context = useChat();

  async function turn(message: string, conversationId: string | null = null) {
    const client = await context.chat.post({ message, conversation_id: conversationId });
    expect(client.status).toBe(200);
    const frames = await client.rest();
    const done = ChatDoneEvent.parse(frames.at(-1)?.data);
    return { frames, conversationId: done.conversation_id, replyId: frames[0]!.id!.split(':')[0]! };
  }

  it('streams research with market_data, then the answer in tokens, then done: every event valid and numbered', async () => {
    const client = await context.chat.post({ message: 'What is Apple trading at?' });
    expect(client.status).toBe(200);
    expect(client.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(client.headers['cache-control']).toBe('no-cache');
    const frames = await client.rest();

    expectValidChatEvents(frames);
    expect(compact(outline(frames))).toEqual([
      'node_start:research',
      'tool_start:market_data',
      'tool_end:market_data',
      'node_start:answer',
      'token',
      'done',
    ]);
    const replyId = frames[0]!.id!.split(':')[0];
    expect(frames.map((frame) => frame.id)).toEqual(frames.map((_frame, index) => `${replyId}:${index + 1}`));
    expect(textOf(frames)).toMatch(/Apple.*last traded at [\d.]+.*P\/E/);
    // EventSource clients are told to reconnect quickly, within the reply's re-attach window.
    expect(client.retryMs).toBe(1_000);
    // The model was offered the market_data tool and used it.
    expect(context.shared.fake.requests[0]?.body?.tools?.map((tool) => tool.name)).toContain('market_data');

    const { rows } = await context.shared.pool.query('SELECT status, content, output_tokens > 0 AS counted FROM messages WHERE id = $1', [
      replyId,
    ]);
    expect(rows[0]).toEqual({ status: 'complete', content: textOf(frames), counted: true });
  });

  it('continues a conversation: the model sees the earlier turn before the new message', async () => {
    const first = await turn('How is MSFT doing?');
    const before = context.shared.fake.requests.length;
    const second = await turn('And its margins?', first.conversationId);

    expect(second.conversationId).toBe(first.conversationId);
    expect(conversationOf(context.shared.fake.requests[before]?.body)).toEqual([
      'How is MSFT doing?',
      textOf(first.frames),
      'And its margins?',
    ]);
    // The follow-up names no company: the model took it from the first turn.
    expect(textOf(second.frames)).toMatch(/MSFT.*net margin/);
  });

  it('keeps the last 10 exchanges as context, dropping the oldest 5 at a time so the conversation start stays put', async () => {
    let conversationId: string | null = null;
    const replies: string[] = [];
    const seen: string[][] = [];
    for (let n = 1; n <= 13; n++) {
      const result = await turn(`Question ${n}: what is a dividend?`, conversationId);
      conversationId = result.conversationId;
      replies.push(textOf(result.frames));
      seen.push(conversationOf(context.shared.fake.requests.at(-1)?.body));
    }
    const exchanges = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_unused, index) => [
        `Question ${from + index}: what is a dividend?`,
        replies[from + index - 1]!,
      ]).flat();
    // The 11th turn sees all 10 earlier exchanges; the 12th, past 10, drops the oldest 5 and sees turns 6 to 11; the
    // 13th starts where the 12th did (its cached prefix), with one more exchange.
    expect(seen[10]).toEqual([...exchanges(1, 10), 'Question 11: what is a dividend?']);
    expect(seen[11]).toEqual([...exchanges(6, 11), 'Question 12: what is a dividend?']);
    expect(seen[12]).toEqual([...exchanges(6, 12), 'Question 13: what is a dividend?']);
    const { rows } = await context.shared.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM messages WHERE conversation_id = $1', [
      conversationId,
    ]);
    expect(rows[0]?.n).toBe(26);
  });

  it('answers with one JSON body when stream is false', async () => {
    const client = await context.chat.post({ message: 'What is Tesla worth?', stream: false });
    expect(client.status).toBe(200);
    expect(client.headers['content-type']).toMatch(/^application\/json/);
    const answer = ChatResponse.parse(await client.body());
    expect(answer.response).toMatch(/Tesla.*last traded at/);
    const { rows } = await context.shared.pool.query(
      "SELECT conversation_id::text, status, content FROM messages WHERE id = $1 AND role = 'assistant'",
      [answer.message_id],
    );
    expect(rows[0]).toEqual({ conversation_id: answer.conversation_id, status: 'complete', content: answer.response });
  });

  it("refuses a message while the conversation's reply is being written (409), and takes it once that reply is done", async () => {
    const { conversationId } = await turn('What is a P/E ratio?');
    const thinking = gate();
    context.shared.fake.reply(async () => {
      await thinking.opened;
      return textReply('It compares price with earnings.');
    });
    const slow = await context.chat.post({ message: 'Explain it again.', conversation_id: conversationId });

    const refused = await context.chat.post({ message: 'Too early.', conversation_id: conversationId });
    expect(refused.status).toBe(409);
    const error = ErrorBody.parse(await refused.body());
    expect(error).toMatchObject({ type: 'conflict', status_code: 409 });
    expect(error.detail).toMatch(/still being written/);

    thinking.open();
    expect((await slow.rest()).at(-1)?.event).toBe('done');
    const after = await turn('Now it is fine.', conversationId);
    expect(after.conversationId).toBe(conversationId);
  });

  it('sends a turn over GET /api/chat/stream with the message in the query, new or continued', async () => {
    const started = await context.chat.stream({ message: 'How is NVDA doing?' });
    expect(started.status).toBe(200);
    const first = await started.rest();
    expectValidChatEvents(first);
    const { conversation_id } = ChatDoneEvent.parse(first.at(-1)?.data);

    const before = context.shared.fake.requests.length;
    const continued = await context.chat.stream({ conversation_id, message: 'And its P/E?' });
    const second = await readUntil(continued, (frame) => frame.event === 'done');
    // `done` says what the reply cost, in the units the model provider bills.
    const usage = expect.objectContaining({
      model_calls: 2,
      cache_creation_input_tokens: expect.any(Number) as unknown,
      web_searches: 0,
    }) as unknown;
    expect(second.at(-1)?.data).toEqual({ type: 'done', conversation_id, usage });
    const { input_tokens, output_tokens } = (second.at(-1)?.data as { usage: { input_tokens: number; output_tokens: number } }).usage;
    expect(input_tokens).toBeGreaterThan(0);
    expect(output_tokens).toBeGreaterThan(0);
    // And the account's chat usage of the day counts it, with the reply's end.
    const { rows } = await context.shared.pool.query<{ runs: number; output_tokens: string }>(
      "SELECT runs, output_tokens FROM usage_daily WHERE tenant_id = $1 AND product = 'chat' AND day = (now() AT TIME ZONE 'UTC')::date",
      [context.shared.tenantA],
    );
    expect(rows[0]?.runs).toBeGreaterThanOrEqual(2);
    expect(Number(rows[0]?.output_tokens)).toBeGreaterThanOrEqual(output_tokens);
    expect(conversationOf(context.shared.fake.requests[before]?.body).slice(0, 2)).toEqual(['How is NVDA doing?', textOf(first)]);
  });
});
