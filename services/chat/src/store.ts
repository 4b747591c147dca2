// Conversations in Postgres. A turn is a user message and the reply to it (seq n and n + 1). The reply row is
// written when the turn starts, with status `streaming` and a lease its process renews; it ends `complete`,
// `interrupted` or `failed`. Only complete turns are context for the model, so a cut-off reply never is.
import { randomUUID } from 'node:crypto';
import type { ChatTurn } from '@fin/ai';
import { usageCounts, type ChatStreamEvent, type ErrorBody, type Usage } from '@fin/contracts';
import { Prisma, violatedUniqueIndex, type PrismaClient } from '@fin/db';
import { conflict, notFound } from '@fin/http';

type ReplyStatus = 'streaming' | 'complete' | 'interrupted' | 'failed';

interface TurnStart {
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

/**
 * How a reply ended. `usage` is what its model calls cost (for a reply that did not complete, what it had spent),
 * added to the account's chat usage of the day with the reply's end; `tenantId` is the reply's account.
 */
type ReplyEnd = { tenantId: string; usage?: Usage } & (
  | { status: 'complete'; text: string; events: readonly ChatStreamEvent[] }
  | { status: 'interrupted' | 'failed'; text: string; events: readonly ChatStreamEvent[]; error: ErrorBody }
);

export const ABANDONED_REPLY_ERROR: ErrorBody = {
  detail: 'This reply was interrupted: the chat service writing it stopped. It is not part of the conversation; send the message again.',
  status_code: 503,
  type: 'service_unavailable',
};

const conversationNotFound = (id: string) => notFound(`No conversation ${id}.`);

const REPLY_IN_PROGRESS_DETAIL =
  'A reply in this conversation is still being written. Wait for its done event, or follow it with GET /api/chat/stream and Last-Event-ID, then send the next message.';

/** The conversation, locked for the turn (Prisma has no row locks); other tenants' conversations do not exist. */
async function lockConversation(tx: Prisma.TransactionClient, tenantId: string, conversationId: string): Promise<void> {
  const locked = await tx.$queryRaw<
    unknown[]
  >`SELECT 1 FROM conversations WHERE id = ${conversationId}::uuid AND tenant_id = ${tenantId}::uuid FOR UPDATE`;
  if (locked.length === 0) throw conversationNotFound(conversationId);
}

// Leases are the database's clock: every replica writes and compares them with now(), and the model API would
// write the process's clock, so the statements that set or read a lease are SQL, sent through the client.

/** A turn: the user's message and its reply, which starts out streaming under a lease. */
const insertTurn = (turn: Turn) => Prisma.sql`
  INSERT INTO messages (id, conversation_id, seq, role, content, status, events, lease_expires_at)
  VALUES (${turn.userMessageId}::uuid, ${turn.conversationId}::uuid, ${turn.seq}, 'user', ${turn.message}, 'complete', NULL, NULL),
         (${turn.replyId}::uuid, ${turn.conversationId}::uuid, ${turn.seq + 1}, 'assistant', '', 'streaming', '[]',
          now() + ${turn.leaseMs}::int * interval '1 millisecond')`;

interface Turn {
  conversationId: string;
  userMessageId: string;
  replyId: string;
  /** The user message's; the reply's is the next. */
  seq: number;
  message: string;
  leaseMs: number;
}

type ReplyRow = {
  id: string;
  conversation_id: string;
  status: ReplyStatus;
  events: ChatStreamEvent[] | null;
  error: ErrorBody | null;
  lease_live: boolean;
};

function toStoredReply(row: ReplyRow): StoredReply {
  return {
    id: row.id,
    conversationId: row.conversation_id,
    status: row.status,
    events: row.events ?? [],
    error: row.error,
    leaseLive: row.lease_live,
  };
}

const REPLY_COLUMNS = Prisma.sql`m.id::text, m.conversation_id::text, m.status, m.events, m.error, coalesce(m.lease_expires_at > now(), false) AS lease_live`;

export interface ConversationStore {
  /**
   * Starts a turn: the conversation (a new one when `conversationId` is null) gets the user message and a
   * streaming reply, in one transaction under the conversation's row lock. 404 for a conversation the
   * tenant does not have; 409 while another reply of the conversation is being written.
   */
  startTurn(
    tenantId: string,
    conversationId: string | null,
    message: string,
    options: { contextPairs: number; trimPairs: number; leaseMs: number },
  ): Promise<TurnStart>;
  /** Records how a reply ended; false when it was no longer streaming (its lease had been taken over). */
  finishReply(replyId: string, end: ReplyEnd): Promise<boolean>;
  /** Extends the leases of these streaming replies; returns those that are still streaming. */
  renewLeases(replyIds: readonly string[], leaseMs: number): Promise<Set<string>>;
  /** A reply of the tenant, by id. */
  findReply(tenantId: string, replyId: string): Promise<StoredReply | undefined>;
  /** The conversation's latest reply; 404 for a conversation the tenant does not have. */
  latestReply(tenantId: string, conversationId: string): Promise<StoredReply | undefined>;
}

/** The update that ends a reply still streaming. */
function finishArgs(replyId: string, end: ReplyEnd) {
  return {
    where: { id: replyId, status: 'streaming' },
    data: {
      status: end.status,
      content: end.text,
      events: end.events,
      error: end.status === 'complete' ? Prisma.DbNull : end.error,
      inputTokens: end.usage?.inputTokens ?? 0,
      outputTokens: end.usage?.outputTokens ?? 0,
      leaseExpiresAt: null,
      // Recorded, never compared: the writer's clock serves.
      finishedAt: new Date(),
    },
  } satisfies Prisma.MessageUpdateManyArgs;
}

/** Every statement goes through the Prisma client (the service's, over its pool). */
export function createConversationStore(prisma: PrismaClient): ConversationStore {
  return {
    async startTurn(tenantId, conversationId, message, { contextPairs, trimPairs, leaseMs }) {
      const replyId = randomUUID();
      const turn = (id: string, lastSeq: number): Turn => ({
        conversationId: id,
        userMessageId: randomUUID(),
        replyId,
        seq: lastSeq + 1,
        message,
        leaseMs,
      });
      if (conversationId === null) {
        // A new conversation has nothing to lock or read: one statement, atomic on its own, writes it and the turn
        // (the messages' foreign keys are checked at the end of the statement, when the conversation exists).
        const id = randomUUID();
        await prisma.$executeRaw`WITH conversation AS (INSERT INTO conversations (id, tenant_id) VALUES (${id}::uuid, ${tenantId}::uuid)) ${insertTurn(turn(id, 0))}`;
        return { conversationId: id, replyId, history: [] };
      }
      return prisma
        .$transaction(async (tx): Promise<TurnStart> => {
          await lockConversation(tx, tenantId, conversationId);
          // A reply whose owner died (no renewal for a whole lease) no longer blocks the conversation.
          await tx.$executeRaw`
            UPDATE messages SET status = 'interrupted', lease_expires_at = NULL, finished_at = now(), error = ${ABANDONED_REPLY_ERROR}::jsonb
             WHERE conversation_id = ${conversationId}::uuid AND status = 'streaming' AND lease_expires_at <= now()`;
          // At most one reply streams, and only the latest turn's can: the last message says whether one does.
          const last = await tx.message.findFirst({
            where: { conversationId },
            orderBy: { seq: 'desc' },
            select: { seq: true, status: true },
          });
          if (last?.status === 'streaming') throw conflict(REPLY_IN_PROGRESS_DETAIL);
          // The complete replies with the question each answers, oldest first: the last `contextPairs` at most,
          // the oldest dropped `trimPairs` at a time, so that the conversation's start (its cached prompt prefix)
          // stays the same from turn to turn between two trims (docs/api-decisions.md#chat).
          const context = await tx.$queryRaw<{ question: string; answer: string }[]>`
            SELECT question, answer FROM (
              SELECT q.content AS question, a.content AS answer, a.seq,
                     row_number() OVER (ORDER BY a.seq) AS n, count(*) OVER () AS total
                FROM messages a
                JOIN messages q ON q.conversation_id = a.conversation_id AND q.seq = a.seq - 1 AND q.role = 'user'
               WHERE a.conversation_id = ${conversationId}::uuid AND a.role = 'assistant' AND a.status = 'complete'
            ) pairs
             WHERE n > ceil(greatest(total - ${contextPairs}, 0)::numeric / ${trimPairs}) * ${trimPairs}
             ORDER BY seq`;
          const history = context.flatMap((row): ChatTurn[] => [
            { role: 'user', content: row.question },
            { role: 'assistant', content: row.answer },
          ]);
          await tx.$executeRaw`UPDATE conversations SET updated_at = now() WHERE id = ${conversationId}::uuid`;
          await tx.$executeRaw(insertTurn(turn(conversationId, last?.seq ?? 0)));
          return { conversationId, replyId, history };
        })
        .catch((error: unknown) => {
          // The row lock makes this unreachable; the index is the database's own guarantee, should that change.
          if (violatedUniqueIndex(error) === 'messages_one_streaming_idx') throw conflict(REPLY_IN_PROGRESS_DETAIL);
          throw error;
        });
    },

    async finishReply(replyId, end) {
      const args = finishArgs(replyId, end);
      const { usage } = end;
      if (!usage) return (await prisma.message.updateMany(args)).count === 1;
      // The reply's end and its usage in the account's day commit together.
      return prisma.$transaction(async (tx) => {
        if ((await tx.message.updateMany(args)).count !== 1) return false;
        await tx.$executeRaw`SELECT usage_daily_add(${end.tenantId}::uuid, 'chat', ${JSON.stringify(usageCounts(usage))}::jsonb, ${end.status !== 'complete'})`;
        return true;
      });
    },

    async renewLeases(replyIds, leaseMs) {
      if (replyIds.length === 0) return new Set();
      const rows = await prisma.$queryRaw<{ id: string }[]>`
        UPDATE messages SET lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond'
         WHERE id = ANY(${replyIds as string[]}::uuid[]) AND status = 'streaming' RETURNING id::text`;
      return new Set(rows.map((row) => row.id));
    },

    async findReply(tenantId, replyId) {
      const rows = await prisma.$queryRaw<ReplyRow[]>`
        SELECT ${REPLY_COLUMNS} FROM messages m JOIN conversations c ON c.id = m.conversation_id
         WHERE m.id = ${replyId}::uuid AND m.role = 'assistant' AND c.tenant_id = ${tenantId}::uuid`;
      return rows[0] && toStoredReply(rows[0]);
    },

    async latestReply(tenantId, conversationId) {
      const rows = await prisma.$queryRaw<(Omit<ReplyRow, 'id'> & { id: string | null })[]>`
        SELECT ${REPLY_COLUMNS} FROM conversations c
          LEFT JOIN LATERAL (
            SELECT * FROM messages WHERE conversation_id = c.id AND role = 'assistant' ORDER BY seq DESC LIMIT 1
          ) m ON true
         WHERE c.id = ${conversationId}::uuid AND c.tenant_id = ${tenantId}::uuid`;
      const row = rows[0];
      if (row === undefined) throw conversationNotFound(conversationId);
      return row.id === null ? undefined : toStoredReply({ ...row, id: row.id });
    },
  };
}
