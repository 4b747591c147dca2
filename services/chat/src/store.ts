// Conversations in Postgres. A turn is a user message and the reply to it (seq n and n + 1). The reply row is
// written when the turn starts, with status `streaming` and a lease its process renews; it ends `complete`,
// `interrupted` or `failed`. Only complete turns are context for the model, so a cut-off reply never is.
import { randomUUID } from 'node:crypto';
import type { ChatTurn } from '@fin/ai';
import type { ChatStreamEvent, ErrorBody } from '@fin/contracts';
import { withTransaction, type Pool, type PoolClient } from '@fin/db';
import { conflict, notFound } from '@fin/http';

export type ReplyStatus = 'streaming' | 'complete' | 'interrupted' | 'failed';

export interface TurnStart {
  conversationId: string;
  replyId: string;
  /** The last complete exchanges, oldest first: what the model sees before the new message. */
  history: ChatTurn[];
}

export interface StoredReply {
  id: string;
  conversationId: string;
  status: ReplyStatus;
  /** The reply's events in order (position = index + 1); empty while it streams. */
  events: ChatStreamEvent[];
  /** The error body that ended an interrupted or failed reply. */
  error: ErrorBody | null;
  /** For a streaming reply: whether its owner still renews it (false: the owner died). */
  leaseLive: boolean;
}

export type ReplyEnd =
  | { status: 'complete'; text: string; events: readonly ChatStreamEvent[]; inputTokens: number; outputTokens: number }
  | { status: 'interrupted' | 'failed'; text: string; events: readonly ChatStreamEvent[]; error: ErrorBody };

export const ABANDONED_REPLY_ERROR: ErrorBody = {
  detail: 'This reply was interrupted: the chat service writing it stopped. It is not part of the conversation; send the message again.',
  status_code: 503,
  type: 'service_unavailable',
};

const conversationNotFound = (id: string) => notFound(`No conversation ${id}.`);

export const REPLY_IN_PROGRESS_DETAIL =
  'A reply in this conversation is still being written. Wait for its done event, or follow it with GET /api/chat/stream and Last-Event-ID, then send the next message.';

/** The conversation, locked for the turn; other tenants' conversations do not exist. */
async function lockConversation(client: PoolClient, tenantId: string, conversationId: string): Promise<void> {
  const { rowCount } = await client.query('SELECT 1 FROM conversations WHERE id = $1 AND tenant_id = $2 FOR UPDATE', [conversationId, tenantId]);
  if (rowCount === 0) throw conversationNotFound(conversationId);
}

// A turn: the user's message and its reply, which starts out streaming under a lease.
const INSERT_TURN = `
  INSERT INTO messages (id, conversation_id, seq, role, content, status, events, lease_expires_at)
  VALUES ($1, $3, $4, 'user', $5, 'complete', NULL, NULL),
         ($2, $3, $4 + 1, 'assistant', '', 'streaming', '[]', now() + $6::int * interval '1 millisecond')`;
// The foreign keys of the messages are checked at the end of the statement, when the conversation exists.
const START_CONVERSATION = `WITH conversation AS (INSERT INTO conversations (id, tenant_id) VALUES ($3, $7)) ${INSERT_TURN}`;

// The newest complete replies with the question each answers, newest first.
const HISTORY = `
  SELECT q.content AS question, a.content AS answer
    FROM messages a
    JOIN messages q ON q.conversation_id = a.conversation_id AND q.seq = a.seq - 1 AND q.role = 'user'
   WHERE a.conversation_id = $1 AND a.role = 'assistant' AND a.status = 'complete'
   ORDER BY a.seq DESC
   LIMIT $2`;

function toStoredReply(row: { id: string; conversation_id: string; status: ReplyStatus; events: ChatStreamEvent[] | null; error: ErrorBody | null; lease_live: boolean }): StoredReply {
  return { id: row.id, conversationId: row.conversation_id, status: row.status, events: row.events ?? [], error: row.error, leaseLive: row.lease_live };
}

const REPLY_COLUMNS = `m.id::text, m.conversation_id::text, m.status, m.events, m.error, coalesce(m.lease_expires_at > now(), false) AS lease_live`;

export interface ConversationStore {
  /**
   * Starts a turn: the conversation (a new one when `conversationId` is null) gets the user message and a
   * streaming reply, in one transaction under the conversation's row lock. 404 for a conversation the
   * tenant does not have; 409 while another reply of the conversation is being written.
   */
  startTurn(tenantId: string, conversationId: string | null, message: string, options: { contextPairs: number; leaseMs: number }): Promise<TurnStart>;
  /** Records how a reply ended; false when it was no longer streaming (its lease had been taken over). */
  finishReply(replyId: string, end: ReplyEnd): Promise<boolean>;
  /** Extends the leases of these streaming replies; returns those that are still streaming. */
  renewLeases(replyIds: readonly string[], leaseMs: number): Promise<Set<string>>;
  /** A reply of the tenant, by id. */
  findReply(tenantId: string, replyId: string): Promise<StoredReply | undefined>;
  /** The conversation's latest reply; 404 for a conversation the tenant does not have. */
  latestReply(tenantId: string, conversationId: string): Promise<StoredReply | undefined>;
}

export function createConversationStore(pool: Pool): ConversationStore {
  return {
    async startTurn(tenantId, conversationId, message, { contextPairs, leaseMs }) {
      const replyId = randomUUID();
      const turn = (id: string, lastSeq: number) => [randomUUID(), replyId, id, lastSeq + 1, message, leaseMs];
      if (conversationId === null) {
        // A new conversation has nothing to lock or read: one statement, atomic on its own, writes it and the turn.
        const id = randomUUID();
        await pool.query(START_CONVERSATION, [...turn(id, 0), tenantId]);
        return { conversationId: id, replyId, history: [] };
      }
      return withTransaction(pool, async (client): Promise<TurnStart> => {
        await lockConversation(client, tenantId, conversationId);
        // A reply whose owner died (no renewal for a whole lease) no longer blocks the conversation.
        await client.query(
          `UPDATE messages SET status = 'interrupted', lease_expires_at = NULL, finished_at = now(), error = $2
            WHERE conversation_id = $1 AND status = 'streaming' AND lease_expires_at <= now()`,
          [conversationId, ABANDONED_REPLY_ERROR],
        );
        const { rows } = await client.query<{ seq: number; streaming: boolean }>(
          `SELECT coalesce(max(seq), 0) AS seq, bool_or(status = 'streaming') AS streaming FROM messages WHERE conversation_id = $1`,
          [conversationId],
        );
        if (rows[0]?.streaming === true) throw conflict(REPLY_IN_PROGRESS_DETAIL);
        const context = await client.query<{ question: string; answer: string }>(HISTORY, [conversationId, contextPairs]);
        const history = context.rows.reverse().flatMap((row): ChatTurn[] => [
          { role: 'user', content: row.question },
          { role: 'assistant', content: row.answer },
        ]);
        await client.query('UPDATE conversations SET updated_at = now() WHERE id = $1', [conversationId]);
        await client.query(INSERT_TURN, turn(conversationId, rows[0]?.seq ?? 0));
        return { conversationId, replyId, history };
      }).catch((error: unknown) => {
        // The row lock makes this unreachable; the index is the database's own guarantee, should that change.
        if ((error as { constraint?: string }).constraint === 'messages_one_streaming_idx') throw conflict(REPLY_IN_PROGRESS_DETAIL);
        throw error;
      });
    },

    async finishReply(replyId, end) {
      const { rowCount } = await pool.query(
        `UPDATE messages
            SET status = $2, content = $3, events = $4, error = $5, input_tokens = $6, output_tokens = $7,
                lease_expires_at = NULL, finished_at = now()
          WHERE id = $1 AND status = 'streaming'`,
        [
          replyId,
          end.status,
          end.text,
          JSON.stringify(end.events),
          end.status === 'complete' ? null : end.error,
          end.status === 'complete' ? end.inputTokens : 0,
          end.status === 'complete' ? end.outputTokens : 0,
        ],
      );
      return rowCount === 1;
    },

    async renewLeases(replyIds, leaseMs) {
      if (replyIds.length === 0) return new Set();
      const { rows } = await pool.query<{ id: string }>(
        `UPDATE messages SET lease_expires_at = now() + $2::int * interval '1 millisecond'
          WHERE id = ANY($1::uuid[]) AND status = 'streaming' RETURNING id::text`,
        [replyIds, leaseMs],
      );
      return new Set(rows.map((row) => row.id));
    },

    async findReply(tenantId, replyId) {
      const { rows } = await pool.query<Parameters<typeof toStoredReply>[0]>(
        `SELECT ${REPLY_COLUMNS} FROM messages m JOIN conversations c ON c.id = m.conversation_id
          WHERE m.id = $1 AND m.role = 'assistant' AND c.tenant_id = $2`,
        [replyId, tenantId],
      );
      return rows[0] && toStoredReply(rows[0]);
    },

    async latestReply(tenantId, conversationId) {
      const { rows } = await pool.query<Parameters<typeof toStoredReply>[0] & { id: string | null }>(
        `SELECT ${REPLY_COLUMNS} FROM conversations c
           LEFT JOIN LATERAL (
             SELECT * FROM messages WHERE conversation_id = c.id AND role = 'assistant' ORDER BY seq DESC LIMIT 1
           ) m ON true
          WHERE c.id = $1 AND c.tenant_id = $2`,
        [conversationId, tenantId],
      );
      const row = rows[0];
      if (row === undefined) throw conversationNotFound(conversationId);
      return row.id === null ? undefined : toStoredReply(row);
    },
  };
}
