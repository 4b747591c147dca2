import { parseChatEventId, type ChatResponse } from '@fin/contracts';
import { badRequest, serviceUnavailable, type HandlerTable, type Lifecycle } from '@fin/http';
import type express from 'express';
import type { Chat } from './chat';
import { toAppError } from './errors';
import type { LiveReply, ReplySource } from './live-reply';
import { Heartbeat, openSse, type SseOptions } from './sse';

export interface ChatHandlerDeps {
  chat: Chat;
  lifecycle?: Lifecycle;
  heartbeatMs: number;
  /** The `retry:` EventSource clients are told (ms); shorter than the reply's detach grace. */
  retryMs?: number;
}

/**
 * Streams `source` to the client from after `after`; the client leaving detaches it. The request has been read by
 * then (identity, body, Last-Event-ID) and nothing reads it again, but an event stream may stay open for minutes:
 * its headers and body are let go rather than kept all that time (node:http keeps them twice, as parsed and raw),
 * and so is the router's continuation (the handler never calls it once the stream has begun).
 */
function follow(req: express.Request, res: express.Response, source: ReplySource, after: number, options: SseOptions): void {
  const writer = openSse(res, source.id, options);
  const detach = source.attach(writer, after);
  const close = () => {
    detach();
    writer.close();
  };
  if (res.destroyed) close();
  else res.once('close', close);
  req.headers = {};
  req.rawHeaders = [];
  req.body = undefined;
  req.next = undefined;
}

/** The non-streamed answer, once the reply has ended; undefined when the client left first. */
function answer(res: express.Response, reply: LiveReply): Promise<ChatResponse | undefined> {
  return new Promise((resolve, reject) => {
    const detach = reply.attach(
      {
        event: () => undefined,
        end: () => {
          if (reply.error !== undefined) reject(toAppError(reply.error));
          else resolve({ conversation_id: reply.conversationId, message_id: reply.id, response: reply.text });
        },
      },
      reply.events.length,
    );
    res.once('close', () => {
      detach();
      resolve(undefined);
    });
  });
}

/**
 * The chat handlers: POST /api/chat (a turn, streamed or not) and GET /api/chat/stream (a turn or a re-attach, for
 * EventSource), for the tenant the gateway vouches for. See docs/products.md (Chat).
 */
export function createChatHandlers({ chat, lifecycle, heartbeatMs, retryMs = 1_000 }: ChatHandlerDeps): HandlerTable {
  const sse: SseOptions = { heartbeat: new Heartbeat(heartbeatMs), retryMs };
  const refuseWhileClosing = () => {
    if (chat.closing || lifecycle?.shuttingDown === true) throw serviceUnavailable('The chat service is shutting down; retry.');
  };
  return {
    chat: async ({ body, caller }, { req, res }) => {
      refuseWhileClosing();
      const reply = await chat.startTurn(caller.tenantId, body.conversation_id, body.message);
      if (!body.stream) return answer(res, reply);
      follow(req, res, reply, 0, sse);
      return undefined;
    },

    chatStream: async ({ query, headers, caller }, { req, res }) => {
      const { tenantId } = caller;
      refuseWhileClosing();
      const lastEventId = headers['Last-Event-ID'];
      let source: ReplySource | undefined;
      let after = 0;
      if (lastEventId !== undefined) {
        // A re-attach never sends a turn: a reconnecting EventSource repeats the URL with its message.
        // The contract's header schema (checked before the handler) admits only event ids: this parse cannot fail.
        const named = parseChatEventId(lastEventId);
        if (named === undefined) throw new Error('Last-Event-ID passed its schema but names no event');
        source = await chat.replySource(tenantId, named.replyId, query.conversation_id);
        after = named.position;
      } else if (query.message !== undefined) {
        source = await chat.startTurn(tenantId, query.conversation_id ?? null, query.message);
      } else if (query.conversation_id !== undefined) {
        source = await chat.latestSource(tenantId, query.conversation_id);
      } else {
        throw badRequest('conversation_id: is required unless message is given or Last-Event-ID is sent.');
      }
      // Nothing left to send: 204 also tells EventSource to stop reconnecting.
      if (source === undefined || source.exhaustedAfter(after)) {
        res.status(204).end();
        return undefined;
      }
      follow(req, res, source, after, sse);
      return undefined;
    },
  };
}
