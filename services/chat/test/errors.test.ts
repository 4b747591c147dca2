// What the chat service refuses and how replies fail: bad input is a 400 naming the field, another tenant's
// conversation is the same 404 as a missing one, a model failure ends the stream with an `error` event, and
// a reply that did not complete never becomes context.
import { randomUUID } from 'node:crypto';
import { ChatDoneEvent, ErrorBody } from '@fin/contracts';
import { errorReply, textReply } from '@fin/fakes';
import { openEventStream } from '@fin/testing';
import { conversationOf, expectValidChatEvents, textOf, useChat, type ChatInstance } from './support';

describe('chat errors', () => {
  const context = useChat();

  async function conversation(tenant = context.shared.tenantA): Promise<{ conversationId: string; replyId: string }> {
    const frames = await (await context.chat.post({ message: 'What is an index fund?' }, tenant)).rest();
    return { conversationId: ChatDoneEvent.parse(frames.at(-1)?.data).conversation_id, replyId: frames[0]!.id!.split(':')[0]! };
  }

  async function expectError(pending: ReturnType<ChatInstance['post']>, status: number, type: string): Promise<ErrorBody> {
    const client = await pending;
    const body = ErrorBody.parse(await client.body());
    expect([client.status, body.status_code, body.type]).toEqual([status, status, type]);
    return body;
  }

  it.each([
    ['an empty message', { message: '' }, 'message: must not be empty'],
    ['a blank message', { message: ' \n\t ' }, 'message: must not be empty'],
    ['a message one character too long', { message: 'x'.repeat(4_001) }, 'message: must be at most 4000 characters'],
    ['a 200 KB message', { message: 'x'.repeat(200_000) }, 'message: must be at most 4000 characters'],
    ['no message', {}, 'message: is required'],
    ['a malformed conversation id', { message: 'hi', conversation_id: 'abc' }, 'conversation_id: must be a UUID'],
    ['a stream flag that is not a boolean', { message: 'hi', stream: 'yes' }, 'stream: must be true or false'],
    ['an unknown field', { message: 'hi', history: [] }, 'unknown field "history"'],
  ])('refuses %s with a 400 naming the field', async (_label, body, detail) => {
    const error = await expectError(context.chat.post(body), 400, 'validation_error');
    expect(error.detail).toContain(detail);
    expect(context.shared.fake.requests).toHaveLength(0);
  });

  it('refuses a body over the size limit with 400 naming the body', async () => {
    await expectError(context.chat.post({ message: 'x'.repeat(300_000) }), 400, 'validation_error');
  });

  it.each([
    [{ message: '   ' }, undefined, 'message: must not be empty'],
    [{ conversation_id: 'not-a-uuid', message: 'hi' }, undefined, 'conversation_id: must be a UUID'],
    [{}, undefined, 'conversation_id: is required unless message is given'],
    [{ message: 'hi' }, 'garbage', 'Last-Event-ID: must be the id of an event'],
    [{ message: 'hi' }, `${randomUUID()}:0`, 'Last-Event-ID: must be the id of an event'],
  ])('refuses GET /api/chat/stream with %j and Last-Event-ID %s with a 400 naming the field', async (query, lastEventId, detail) => {
    const error = await expectError(context.chat.stream(query, { lastEventId }), 400, 'validation_error');
    expect(error.detail).toContain(detail);
  });

  it("treats another tenant's conversation and reply exactly like missing ones (404)", async () => {
    const { conversationId, replyId } = await conversation(context.shared.tenantA);
    const missing = randomUUID();
    const theirs = await expectError(
      context.chat.post({ message: 'Hello?', conversation_id: conversationId }, context.shared.tenantB),
      404,
      'not_found',
    );
    const none = await expectError(
      context.chat.post({ message: 'Hello?', conversation_id: missing }, context.shared.tenantB),
      404,
      'not_found',
    );
    expect(theirs.detail.replace(conversationId, '<id>')).toBe(none.detail.replace(missing, '<id>'));

    await expectError(context.chat.stream({ conversation_id: conversationId }, { tenant: context.shared.tenantB }), 404, 'not_found');
    await expectError(context.chat.stream({}, { tenant: context.shared.tenantB, lastEventId: `${replyId}:1` }), 404, 'not_found');
    // The owner still can.
    expect((await context.chat.stream({ conversation_id: conversationId })).status).toBe(200);
    // And a reply named with another conversation of the owner is not found either.
    const other = await conversation(context.shared.tenantA);
    await expectError(context.chat.stream({ conversation_id: other.conversationId }, { lastEventId: `${replyId}:1` }), 404, 'not_found');
  });

  it('refuses a request that did not come through the gateway', async () => {
    const client = await openEventStream(`${context.chat.url}/api/chat`, { body: { message: 'hi' } });
    expect(client.status).toBe(401);
    expect(ErrorBody.parse(await client.body()).type).toBe('unauthorized');
  });

  it('ends the stream with an error event when the model fails mid-reply; the failed turn is not context', async () => {
    const { conversationId } = await conversation();
    context.shared.fake.reply(
      textReply('The yield curve is inverted because', {
        faults: { failMidStream: { afterEvents: 4, error: { type: 'overloaded_error' } } },
      }),
    );
    const frames = await (await context.chat.post({ message: 'Why is the curve inverted?', conversation_id: conversationId })).rest();

    expectValidChatEvents(frames);
    expect(frames.map((frame) => frame.event)).not.toContain('done');
    expect(frames.at(-1)).toMatchObject({ event: 'error', data: { type: 'service_unavailable', status_code: 503 } });
    const replyId = frames[0]!.id!.split(':')[0];
    const { rows } = await context.shared.pool.query('SELECT status, content, error FROM messages WHERE id = $1', [replyId]);
    expect(rows[0]).toEqual({ status: 'failed', content: textOf(frames), error: frames.at(-1)?.data });

    await (await context.chat.post({ message: 'Try again: what is a bond?', conversation_id: conversationId })).rest();
    const seen = conversationOf(context.shared.fake.requests.at(-1)?.body);
    expect(seen).not.toContain('Why is the curve inverted?');
    expect(seen.at(-1)).toBe('Try again: what is a bond?');
  });

  it('answers a model failure of a non-streamed turn with the error status and body', async () => {
    context.shared.fake.reply(errorReply('overloaded_error'));
    const error = await expectError(context.chat.post({ message: 'What is a bond?', stream: false }), 503, 'service_unavailable');
    expect(error.detail).toMatch(/busy/);
  });

  it('ends a stream the model API refused as our invalid request with an error event model_request_rejected, never a 500', async () => {
    context.shared.fake.reply(errorReply('invalid_request_error', { message: 'messages.0: internal detail' }));
    const frames = await (await context.chat.post({ message: 'What is a bond?' })).rest();
    expect(frames.at(-1)).toMatchObject({ event: 'error', data: { type: 'model_request_rejected', status_code: 502 } });
    expect(JSON.stringify(frames)).not.toContain('internal detail');
    const error = await (async () => {
      context.shared.fake.reply(errorReply('invalid_request_error'));
      return expectError(context.chat.post({ message: 'What is a bond?', stream: false }), 502, 'model_request_rejected');
    })();
    expect(error.detail).toMatch(/our error/);
  });

  it('ends a stream the model declined (stop_reason refusal) with an error event model_refused', async () => {
    context.shared.fake.reply({ content: [], stopReason: 'refusal' });
    const frames = await (await context.chat.post({ message: 'Something the model declines' })).rest();
    expect(frames.at(-1)).toMatchObject({ event: 'error', data: { type: 'model_refused', status_code: 422 } });
  });

  it('no longer blocks a conversation whose reply was abandoned by a replica that died', async () => {
    const { conversationId } = await conversation();
    const abandoned = randomUUID();
    await context.shared.pool.query(
      `INSERT INTO messages (id, conversation_id, seq, role, content, status, events, lease_expires_at)
       VALUES ($1, $2, 3, 'user', 'lost question', 'complete', NULL, NULL),
              ($3, $2, 4, 'assistant', 'half an', 'streaming', '[]', now() - interval '1 second')`,
      [randomUUID(), conversationId, abandoned],
    );
    const frames = await (await context.chat.post({ message: 'Still there?', conversation_id: conversationId })).rest();
    expect(frames.at(-1)?.event).toBe('done');
    const { rows } = await context.shared.pool.query("SELECT status, error->>'type' AS type FROM messages WHERE id = $1", [abandoned]);
    expect(rows[0]).toEqual({ status: 'interrupted', type: 'service_unavailable' });
    expect(conversationOf(context.shared.fake.requests.at(-1)?.body)).not.toContain('lost question');
  });
});
