// POST /api/chat and GET /api/chat/stream
import { z } from 'zod';
import { UNSTORABLE_TEXT_MESSAGE, fieldError, isStorableText, requestObject, uuid } from './internal';

/** Longest chat message accepted, in UTF-16 code units (JavaScript string length) after trimming. */
export const CHAT_MESSAGE_MAX = 4000;

export const ConversationId = uuid().meta({
  id: 'ConversationId',
  description: 'Identifies a conversation; returned by the first exchange and sent back to continue it.',
  examples: ['9b2f3c1e-4d5a-4e6f-8a7b-0c1d2e3f4a5b'],
});
export type ConversationId = z.infer<typeof ConversationId>;

/** The user's message: the same rules in the POST body and in the GET stream's query. */
const ChatMessage = z
  .string({ error: fieldError('must be a string') })
  .trim()
  .min(1, 'must not be empty')
  .max(CHAT_MESSAGE_MAX, `must be at most ${CHAT_MESSAGE_MAX} characters`)
  .refine(isStorableText, UNSTORABLE_TEXT_MESSAGE);

export const ChatRequest = requestObject({
  message: ChatMessage.meta({
    description: `The user's message, 1 to ${CHAT_MESSAGE_MAX} characters (surrounding whitespace is removed).`,
    examples: ["How did Apple's services revenue develop last quarter?"],
  }),
  conversation_id: ConversationId.nullable()
    .default(null)
    .meta({ description: 'null starts a new conversation; a previously returned id continues it.' }),
  stream: z
    .boolean({ error: 'must be true or false' })
    .default(true)
    .meta({ description: 'true (default) answers with an SSE stream; false with a single JSON body.' }),
}).meta({
  id: 'ChatRequest',
  description: 'One user turn of a research conversation.',
  examples: [{ message: "How did Apple's services revenue develop last quarter?", conversation_id: null, stream: true }],
});
export type ChatRequest = z.infer<typeof ChatRequest>;
export type ChatRequestInput = z.input<typeof ChatRequest>;

export const ChatResponse = z
  .object({
    conversation_id: ConversationId,
    message_id: z.uuid().meta({ description: 'Identifies the assistant message.' }),
    response: z.string().meta({ description: "The assistant's reply." }),
  })
  .meta({ id: 'ChatResponse', description: 'Answer of POST /api/chat with stream false.' });
export type ChatResponse = z.infer<typeof ChatResponse>;

/**
 * Query of GET /api/chat/stream, the route browsers' EventSource can use (it sends no body and no custom
 * headers). Not strict, unlike request bodies: query strings routinely pick up extra parameters (cache
 * busters, tracking) that a client does not control. Which parameters a request needs depends on
 * Last-Event-ID, a header, so the service checks the combination (docs/api-decisions.md, Chat).
 */
export const ChatStreamQuery = z
  .object({
    conversation_id: ConversationId.optional().meta({
      description:
        'The conversation. With message: continue it (omit it to start a new one). Without message: re-attach to its latest reply.',
    }),
    message: ChatMessage.optional().meta({
      description: `A new user turn, 1 to ${CHAT_MESSAGE_MAX} characters, answered on this stream. Ignored when Last-Event-ID is sent: a reconnecting EventSource repeats the URL, and must not send the message twice.`,
      examples: ['And its margins?'],
    }),
  })
  .meta({ id: 'ChatStreamQuery', description: 'Query parameters of GET /api/chat/stream.' });
export type ChatStreamQuery = z.infer<typeof ChatStreamQuery>;

// No /i flag: the pattern is also the header's documented JSON Schema pattern, which has no flags.
const EVENT_ID = /^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}):([1-9]\d{0,8})$/;

/**
 * Every chat event carries `id: <reply id>:<n>`: the assistant message the event belongs to (the
 * `message_id` of a non-streamed answer) and the event's position in that reply, from 1. Sent back in
 * Last-Event-ID, it says exactly which reply a client followed and how far.
 */
export function chatEventId(replyId: string, position: number): string {
  return `${replyId}:${position}`;
}

/** The reply and position an event id names; undefined when it is not one of ours. */
export function parseChatEventId(id: string): { replyId: string; position: number } | undefined {
  const [, replyId, position] = EVENT_ID.exec(id.trim()) ?? [];
  return replyId === undefined || position === undefined ? undefined : { replyId: replyId.toLowerCase(), position: Number(position) };
}

/** Request headers of GET /api/chat/stream. */
export const ChatStreamHeaders = z
  .object({
    'Last-Event-ID': z
      .string()
      .regex(EVENT_ID, { error: 'must be the id of an event of this API, such as 0b9a8c7d-6e5f-4a3b-8c1d-0e9f8a7b6c5d:12.' })
      .optional()
      .meta({
        description:
          "Re-attach: the id of the last event received (browsers' EventSource sends it when it reconnects). The stream replays the events of that reply after it, then follows the reply live if it is still being written. The query's message is then ignored. E.g. `0b9a8c7d-6e5f-4a3b-8c1d-0e9f8a7b6c5d:12` (no example value: a try-it client would send it by default).",
      }),
  })
  .meta({ id: 'ChatStreamHeaders', description: 'Request headers of GET /api/chat/stream.' });
