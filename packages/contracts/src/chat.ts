// POST /api/chat and GET /api/chat/stream
import { z } from 'zod';
import { fieldError, requestObject, uuid } from './internal';

/** Longest chat message accepted, in UTF-16 code units (JavaScript string length) after trimming. */
export const CHAT_MESSAGE_MAX = 4000;

export const ConversationId = uuid().meta({
  id: 'ConversationId',
  description: 'Identifies a conversation; returned by the first exchange and sent back to continue it.',
  examples: ['9b2f3c1e-4d5a-4e6f-8a7b-0c1d2e3f4a5b'],
});
export type ConversationId = z.infer<typeof ConversationId>;

export const ChatRequest = requestObject({
  message: z
    .string({ error: fieldError('must be a string') })
    .trim()
    .min(1, 'must not be empty')
    .max(CHAT_MESSAGE_MAX, `must be at most ${CHAT_MESSAGE_MAX} characters`)
    .meta({ description: `The user's message, 1 to ${CHAT_MESSAGE_MAX} characters (surrounding whitespace is removed).`, examples: ['How did Apple\'s services revenue develop last quarter?'] }),
  conversation_id: ConversationId.nullable().default(null).meta({ description: 'null starts a new conversation; a previously returned id continues it.' }),
  stream: z.boolean({ error: 'must be true or false' }).default(true).meta({ description: 'true (default) answers with an SSE stream; false with a single JSON body.' }),
}).meta({
  id: 'ChatRequest',
  description: 'One user turn of a research conversation.',
  examples: [{ message: 'How did Apple\'s services revenue develop last quarter?', conversation_id: null, stream: true }],
});
export type ChatRequest = z.infer<typeof ChatRequest>;
export type ChatRequestInput = z.input<typeof ChatRequest>;

export const ChatResponse = z
  .object({
    conversation_id: ConversationId,
    message_id: z.uuid().meta({ description: 'Identifies the assistant message.' }),
    response: z.string().meta({ description: 'The assistant\'s reply.' }),
  })
  .meta({ id: 'ChatResponse', description: 'Answer of POST /api/chat with stream false.' });
export type ChatResponse = z.infer<typeof ChatResponse>;

/**
 * Query of GET /api/chat/stream. Not strict, unlike request bodies: query strings routinely pick up extra
 * parameters (cache busters, tracking) that a client does not control.
 */
export const ChatStreamQuery = z
  .object({ conversation_id: ConversationId })
  .meta({ id: 'ChatStreamQuery', description: 'Query parameters of GET /api/chat/stream.' });
export type ChatStreamQuery = z.infer<typeof ChatStreamQuery>;
