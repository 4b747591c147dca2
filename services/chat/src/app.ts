import { ChatRequest, ChatStreamQuery, parseChatEventId, type ChatResponse } from '@fin/contracts';
import type { Pool } from '@fin/db';
import { badRequest, callerOf, createServiceApp, identityKey, route, serviceUnavailable, verifyIdentity, type Lifecycle } from '@fin/http';
import type { Logger } from '@fin/log';
import type express from 'express';
import type { Chat } from './chat';
import { toAppError } from './errors';
import type { LiveReply, ReplySource } from './live-reply';
import { Heartbeat, openSse, type SseOptions } from './sse';

export interface ChatAppDeps {
  chat: Chat;
  pool: Pool;
  logger: Logger;
  signingSecret: string;
  lifecycle?: Lifecycle;
  heartbeatMs: number;
  /** The `retry:` EventSource clients are told (ms); shorter than the reply's detach grace. */
  retryMs?: number;
}

const LAST_EVENT_ID_DETAIL = 'Last-Event-ID: must be the id of an event of this API, such as 0b9a8c7d-6e5f-4a3b-8c1d-0e9f8a7b6c5d:12.';

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
 * The chat API: POST /api/chat (a turn, streamed or not) and GET /api/chat/stream (a turn or a re-attach, for
 * EventSource). Tenant identity comes from the gateway's signed headers. See docs/products.md (Chat).
 */
export function createApp({ chat, pool, logger, signingSecret, lifecycle, heartbeatMs, retryMs = 1_000 }: ChatAppDeps): express.Express {
  const sse: SseOptions = { heartbeat: new Heartbeat(heartbeatMs), retryMs };
  const gatewayOnly = verifyIdentity(identityKey(signingSecret, 'chat'), { logger });
  const refuseWhileClosing = () => {
    if (chat.closing || lifecycle?.shuttingDown === true) throw serviceUnavailable('The chat service is shutting down; retry.');
  };
  return createServiceApp({
    name: 'chat',
    logger,
    lifecycle,
    readiness: async () => {
      await pool.query('SELECT 1');
    },
    routes: (app) => {
      app.post(
        '/api/chat',
        gatewayOnly,
        route({ body: ChatRequest }, async ({ body }, { req, res }) => {
          const { tenantId } = callerOf(res);
          refuseWhileClosing();
          const reply = await chat.startTurn(tenantId, body.conversation_id, body.message);
          if (!body.stream) return answer(res, reply);
          follow(req, res, reply, 0, sse);
          return undefined;
        }),
      );

      app.get(
        '/api/chat/stream',
        gatewayOnly,
        route({ query: ChatStreamQuery }, async ({ query }, { req, res }) => {
          const { tenantId } = callerOf(res);
          refuseWhileClosing();
          const lastEventId = req.header('last-event-id');
          let source: ReplySource | undefined;
          let after = 0;
          if (lastEventId !== undefined && lastEventId !== '') {
            // A re-attach never sends a turn: a reconnecting EventSource repeats the URL with its message.
            const named = parseChatEventId(lastEventId);
            if (named === undefined) throw badRequest(LAST_EVENT_ID_DETAIL);
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
        }),
      );
    },
  });
}
