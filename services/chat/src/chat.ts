// The chat product: starting a turn, running its reply on the AI engine, and finding what a re-attaching stream
// follows. Replies being written live in this process (so every stream of one reply shares one model call)
// and end in Postgres: complete, or interrupted/failed with the error their last event carried.
import type { AiEngine, EngineEvent } from '@fin/ai';
import { usageCounts, type ChatDoneEvent, type ChatStreamEvent, type ErrorBody, type Usage } from '@fin/contracts';
import { notFound, serviceUnavailable } from '@fin/http';
import type { Logger } from '@fin/log';
import { INTERRUPTION_ERRORS, ReplyInterrupted, replyFailure } from './errors';
import { LiveReply, storedSource, type ReplyListener, type ReplySource } from './live-reply';
import { ABANDONED_REPLY_ERROR, type ConversationStore, type StoredReply } from './store';

/** A streaming reply's lease: renewed every third of it; a reply not renewed for this long was abandoned. */
const DEFAULT_LEASE_MS = 30_000;
/** How often a reply written by another replica is looked up while a client here follows it. */
const DEFAULT_REMOTE_POLL_MS = 500;

/** Told to a client following another replica's reply when this replica shuts down: it can reconnect. */
const FOLLOW_SHUTDOWN_ERROR: ErrorBody = {
  detail: 'This chat service replica is shutting down. Reconnect with Last-Event-ID to go on following the reply.',
  status_code: 503,
  type: 'service_unavailable',
};

export interface ChatDeps {
  store: ConversationStore;
  engine: Pick<AiEngine, 'chat'>;
  logger: Logger;
  /** Complete exchanges of a conversation the model sees at most. */
  contextPairs: number;
  /** How many of the oldest exchanges are dropped at a time once there are more (default: half of contextPairs). */
  trimPairs?: number;
  /** How long a reply runs on after its last client left (re-attach window). */
  detachGraceMs: number;
  leaseMs?: number;
  remotePollMs?: number;
}

export interface Chat {
  /**
   * Starts a turn (a new conversation for null) and its reply. 404 for a conversation the tenant does not have,
   * 409 while one of its replies is still being written, 503 once shutdown began.
   */
  startTurn(tenantId: string, conversationId: string | null, message: string): Promise<LiveReply>;
  /** The reply a Last-Event-ID names; 404 unless it is the tenant's (and in `conversationId`, when given). */
  replySource(tenantId: string, replyId: string, conversationId?: string): Promise<ReplySource>;
  /** The conversation's latest reply (undefined: it has none yet); 404 for a conversation the tenant does not have. */
  latestSource(tenantId: string, conversationId: string): Promise<ReplySource | undefined>;
  /**
   * Refuses new turns, lets replies in progress finish for up to `drainMs`, then interrupts the rest: each
   * stream gets a last `error` event (service_unavailable) and the reply is recorded as interrupted. Resolves
   * once every reply is recorded. Idempotent.
   */
  shutdown(drainMs: number): Promise<void>;
  readonly closing: boolean;
}

function chatEventOf(event: EngineEvent): ChatStreamEvent {
  switch (event.type) {
    case 'text':
      return { type: 'token', content: event.text };
    case 'node_start':
      return { type: 'node_start', node: event.node };
    case 'tool_start':
      return { type: 'tool_start', tool: event.tool };
    case 'tool_end':
      return { type: 'tool_end', tool: event.tool };
    case 'thinking':
      return { type: 'progress', content: event.text };
  }
}

/** What a reply that did not complete had spent: the engine's error says (AiError.usage), when it knows. */
function spentBy(error: unknown): { usage?: Usage } {
  const usage = error instanceof Error ? (error as Error & { usage?: Usage }).usage : undefined;
  return usage ? { usage } : {};
}

const replyNotFound = (replyId: string) => notFound(`No reply ${replyId} in this conversation.`);

export function createChat(deps: ChatDeps): Chat {
  const { store, engine, logger, contextPairs, detachGraceMs } = deps;
  const trimPairs = Math.min(contextPairs, deps.trimPairs ?? Math.ceil(contextPairs / 2));
  const leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;
  const remotePollMs = deps.remotePollMs ?? DEFAULT_REMOTE_POLL_MS;
  const running = new Map<string, { reply: LiveReply; settled: Promise<void> }>();
  /** Streams following another replica's reply: each function ends one with FOLLOW_SHUTDOWN_ERROR. */
  const followers = new Set<() => void>();
  let stopping: Promise<void> | undefined;

  // One statement renews every reply this process writes. One that is no longer streaming was taken over
  // (its lease ran out while the database was unreachable): a newer turn exists, so it stops.
  const leases = setInterval(() => {
    const ids = [...running.keys()];
    if (ids.length === 0) return;
    store.renewLeases(ids, leaseMs).then(
      (still) => {
        for (const id of ids) if (!still.has(id)) running.get(id)?.reply.interrupt('superseded');
      },
      (error: unknown) => logger.warn({ err: error }, 'could not renew the leases of replies in progress; retrying'),
    );
  }, leaseMs / 3).unref();

  async function run(reply: LiveReply, history: Parameters<AiEngine['chat']>[0]['history'], message: string): Promise<void> {
    const { signal } = reply.controller;
    try {
      let outcome: { text: string; usage: Usage } | undefined;
      // The engine offers the tenant's customer tools and audits their calls under the conversation.
      const caller = { tenantId: reply.tenantId, conversationId: reply.conversationId };
      for await (const item of engine.chat({ history, message }, { signal, caller })) {
        if (item.kind === 'event') reply.publish(chatEventOf(item.event));
        else outcome = { text: item.result.result.text, usage: item.result.usage };
      }
      if (outcome === undefined) throw new Error('the chat run ended without a reply');
      const done: ChatDoneEvent = { type: 'done', conversation_id: reply.conversationId, usage: usageCounts(outcome.usage) };
      // Recorded before `done` goes out: a client that sends its next message on `done` finds this turn complete.
      const recorded = await store.finishReply(reply.id, {
        tenantId: reply.tenantId,
        status: 'complete',
        events: [...reply.events, done],
        ...outcome,
      });
      if (!recorded) throw new ReplyInterrupted('superseded');
      reply.publish(done);
    } catch (error) {
      // Made only when a reply fails or is interrupted: a child logger per open stream is memory for nothing.
      const log = logger.child({ conversationId: reply.conversationId, replyId: reply.id });
      const interruption = reply.interruption ?? (error instanceof ReplyInterrupted ? error.reason : undefined);
      const body = interruption === undefined ? replyFailure(error) : INTERRUPTION_ERRORS[interruption];
      if (interruption !== undefined) log.info({ reason: interruption }, 'reply interrupted');
      else log[body.status_code >= 500 ? 'error' : 'warn']({ err: error, type: body.type }, 'reply failed');
      await store
        .finishReply(reply.id, {
          tenantId: reply.tenantId,
          ...spentBy(error),
          status: interruption === undefined ? 'failed' : 'interrupted',
          text: reply.text,
          events: reply.events,
          error: body,
        })
        .catch((storeError: unknown) => log.error({ err: storeError }, 'could not record how the reply ended; its lease will expire'));
      reply.fail(body);
    } finally {
      running.delete(reply.id);
    }
  }

  function liveFor(tenantId: string, predicate: (reply: LiveReply) => boolean): LiveReply | undefined {
    for (const { reply } of running.values()) if (reply.tenantId === tenantId && predicate(reply)) return reply;
    return undefined;
  }

  /** A reply being written elsewhere: looked up until it ends, then replayed from storage. */
  function remoteSource(tenantId: string, replyId: string): ReplySource {
    return {
      id: replyId,
      exhaustedAfter: () => false,
      attach(listener: ReplyListener, after: number) {
        let timer: NodeJS.Timeout | undefined;
        let stopped = false;
        const stop = () => {
          stopped = true;
          clearTimeout(timer);
          followers.delete(shutdownFollow);
        };
        const shutdownFollow = () => {
          stop();
          listener.event({ name: 'error', data: FOLLOW_SHUTDOWN_ERROR });
          listener.end();
        };
        const look = async () => {
          const stored = await store.findReply(tenantId, replyId).catch((error: unknown) => {
            logger.warn({ err: error, replyId }, 'could not look up a reply written by another replica; retrying');
            return undefined;
          });
          if (stopped) return;
          if (stored !== undefined && (stored.status !== 'streaming' || !stored.leaseLive)) {
            stop();
            sourceOf(tenantId, stored).attach(listener, after);
            return;
          }
          timer = setTimeout(() => void look(), remotePollMs);
        };
        followers.add(shutdownFollow);
        timer = setTimeout(() => void look(), remotePollMs);
        return stop;
      },
    };
  }

  function sourceOf(tenantId: string, stored: StoredReply): ReplySource {
    if (stored.status !== 'streaming') return storedSource(stored.id, stored.events, stored.error ?? undefined);
    // Its owner died: the next turn of the conversation will record it as interrupted.
    if (!stored.leaseLive) return storedSource(stored.id, stored.events, ABANDONED_REPLY_ERROR);
    return running.get(stored.id)?.reply ?? remoteSource(tenantId, stored.id);
  }

  return {
    get closing() {
      return stopping !== undefined;
    },

    async startTurn(tenantId, conversationId, message) {
      if (stopping !== undefined) throw serviceUnavailable('The chat service is shutting down; send the message again.');
      if (conversationId !== null) {
        // A reply nobody follows any more (its client left; it runs on only for a possible re-attach) gives way
        // to the new message instead of blocking it.
        const abandoned = liveFor(tenantId, (reply) => reply.conversationId === conversationId && reply.listenerCount === 0);
        if (abandoned !== undefined) {
          abandoned.interrupt('superseded');
          await running.get(abandoned.id)?.settled;
        }
      }
      const turn = await store.startTurn(tenantId, conversationId, message, { contextPairs, trimPairs, leaseMs });
      const reply = new LiveReply({ id: turn.replyId, conversationId: turn.conversationId, tenantId, detachGraceMs });
      const entry = { reply, settled: Promise.resolve() };
      running.set(reply.id, entry);
      entry.settled = run(reply, turn.history, message);
      return reply;
    },

    async replySource(tenantId, replyId, conversationId) {
      const live = running.get(replyId)?.reply;
      if (live !== undefined && live.tenantId === tenantId) {
        if (conversationId !== undefined && live.conversationId !== conversationId) throw replyNotFound(replyId);
        return live;
      }
      const stored = await store.findReply(tenantId, replyId);
      if (stored === undefined || (conversationId !== undefined && stored.conversationId !== conversationId)) throw replyNotFound(replyId);
      return sourceOf(tenantId, stored);
    },

    async latestSource(tenantId, conversationId) {
      const live = liveFor(tenantId, (reply) => reply.conversationId === conversationId);
      if (live !== undefined) return live;
      const stored = await store.latestReply(tenantId, conversationId);
      return stored === undefined ? undefined : sourceOf(tenantId, stored);
    },

    shutdown(drainMs) {
      stopping ??= (async () => {
        if (running.size > 0) {
          let timer: NodeJS.Timeout | undefined;
          const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, drainMs)));
          await Promise.race([deadline, Promise.all([...running.values()].map((entry) => entry.settled))]);
          clearTimeout(timer);
        }
        for (const { reply } of running.values()) reply.interrupt('shutdown');
        for (const shutdownFollow of [...followers]) shutdownFollow();
        await Promise.all([...running.values()].map((entry) => entry.settled));
        clearInterval(leases);
      })();
      return stopping;
    },
  };
}
