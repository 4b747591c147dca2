import { CHAT_MESSAGE_MAX, ChatRequest, ChatResponse, ChatStreamHeaders, ChatStreamQuery, chatEventId, parseChatEventId } from '../src';
import { UUID, ok, rejected } from './helpers';

describe('ChatRequest', () => {
  it('starts a new streamed conversation by default', () => {
    expect(ok(ChatRequest, { message: ' hi ' })).toEqual({ message: 'hi', conversation_id: null, stream: true });
  });

  it('continues a conversation and can turn streaming off', () => {
    expect(ok(ChatRequest, { message: 'more', conversation_id: UUID, stream: false })).toEqual({
      message: 'more',
      conversation_id: UUID,
      stream: false,
    });
    expect(ok(ChatRequest, { message: 'more', conversation_id: null }).conversation_id).toBeNull();
  });

  it('rejects a missing, empty or blank message', () => {
    expect(rejected(ChatRequest, {})).toBe('message: is required');
    expect(rejected(ChatRequest, { message: '' })).toBe('message: must not be empty');
    expect(rejected(ChatRequest, { message: '   ' })).toBe('message: must not be empty');
  });

  it('accepts the maximum length and rejects one more', () => {
    expect(CHAT_MESSAGE_MAX).toBe(4000);
    ok(ChatRequest, { message: 'x'.repeat(CHAT_MESSAGE_MAX) });
    expect(rejected(ChatRequest, { message: 'x'.repeat(CHAT_MESSAGE_MAX + 1) })).toBe('message: must be at most 4000 characters');
  });

  it('rejects a malformed conversation id, naming the field', () => {
    expect(rejected(ChatRequest, { message: 'hi', conversation_id: 'abc' })).toBe(
      'conversation_id: must be a UUID such as 3fa85f64-5717-4562-b3fc-2c963f66afa6, got "abc"',
    );
  });

  it('rejects a non-boolean stream and unknown fields', () => {
    expect(rejected(ChatRequest, { message: 'hi', stream: 'false' })).toBe('stream: must be true or false');
    expect(rejected(ChatRequest, { message: 'hi', history: [] })).toBe(
      'unknown field "history" (allowed: message, conversation_id, stream)',
    );
  });
});

describe('ChatResponse and ChatStreamQuery', () => {
  it('parses a non-streamed answer', () => {
    const answer = { conversation_id: UUID, message_id: '9b2f3c1e-4d5a-4e6f-8a7b-0c1d2e3f4a5b', response: 'Services grew 14%.' };
    expect(ok(ChatResponse, answer)).toEqual(answer);
    rejected(ChatResponse, { ...answer, response: undefined });
  });

  it('takes an optional conversation id and message in the stream query, tolerating other parameters', () => {
    expect(ok(ChatStreamQuery, { conversation_id: UUID, _: '1700000000' })).toEqual({ conversation_id: UUID });
    expect(ok(ChatStreamQuery, { message: ' And its margins? ' })).toEqual({ message: 'And its margins?' });
    expect(ok(ChatStreamQuery, {})).toEqual({});
    expect(rejected(ChatStreamQuery, { conversation_id: 'x' })).toMatch(/^conversation_id: must be a UUID/);
    expect(rejected(ChatStreamQuery, { message: '  ' })).toBe('message: must not be empty');
    expect(rejected(ChatStreamQuery, { message: ['a', 'b'] })).toBe('message: must be a string');
    expect(rejected(ChatStreamQuery, { message: 'x'.repeat(CHAT_MESSAGE_MAX + 1) })).toBe('message: must be at most 4000 characters');
  });
});

describe('chat event ids', () => {
  it('name the reply and the position, and parse back; anything else is not ours', () => {
    const id = chatEventId(UUID, 12);
    expect(parseChatEventId(id)).toEqual({ replyId: UUID, position: 12 });
    expect(ChatStreamHeaders.safeParse({ 'Last-Event-ID': id }).success).toBe(true);
    for (const bad of ['12', `${UUID}:0`, `${UUID}:`, `${UUID}:x`, 'abc:1', `${UUID}:1:2`]) {
      expect(parseChatEventId(bad)).toBeUndefined();
      expect(ChatStreamHeaders.safeParse({ 'Last-Event-ID': bad }).success).toBe(false);
    }
  });
});
