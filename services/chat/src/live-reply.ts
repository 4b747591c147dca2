// A reply being written in this process, and what every stream of a reply attaches to. A reply has a fixed
// sequence of events (positions 1, 2, …: node_start, tool_start/tool_end, token, then done, or an error last);
// a listener that attaches after position p gets the events after p that exist, then the rest as they happen.
// A reply that is not in this process is replayed from storage through the same interface.
import type { ChatStreamEvent, ChatStreamEventName, ErrorBody } from '@fin/contracts';
import { ReplyInterrupted, type Interruption } from './errors';

export interface ReplyEvent {
  /**
   * 1-based position in the reply: the n of its event id `<reply id>:<n>`. Absent on an event that is not
   * part of the reply (this process shutting down while a client follows a reply written elsewhere).
   */
  position?: number;
  name: ChatStreamEventName;
  data: ChatStreamEvent | ErrorBody;
}

export interface ReplyListener {
  event(event: ReplyEvent): void;
  /** The reply ended (after its done or error event); nothing follows. */
  end(): void;
}

/** Something a stream can follow: a live reply, a stored one, or one being written by another replica. */
export interface ReplySource {
  readonly id: string;
  /** Whether the reply has ended and a listener attaching after `position` would get nothing. */
  exhaustedAfter(position: number): boolean;
  /** Delivers the events after `after` (synchronously where they exist), then live ones; returns detach(). */
  attach(listener: ReplyListener, after: number): () => void;
}

function eventsOf(events: readonly ChatStreamEvent[], error: ErrorBody | undefined, after: number): ReplyEvent[] {
  const out: ReplyEvent[] = [];
  events.slice(Math.max(0, after)).forEach((data, offset) => {
    out.push({ position: Math.max(0, after) + offset + 1, name: data.type, data });
  });
  if (error !== undefined && after <= events.length) out.push({ position: events.length + 1, name: 'error', data: error });
  return out;
}

/** A reply that has ended, as it was stored. */
export function storedSource(id: string, events: readonly ChatStreamEvent[], error: ErrorBody | undefined): ReplySource {
  const total = events.length + (error === undefined ? 0 : 1);
  return {
    id,
    exhaustedAfter: (position) => position >= total,
    attach(listener, after) {
      for (const event of eventsOf(events, error, after)) listener.event(event);
      listener.end();
      return () => undefined;
    },
  };
}

export interface LiveReplyOptions {
  id: string;
  conversationId: string;
  tenantId: string;
  /** How long the reply runs on once its last listener detached; 0: stop at once. */
  detachGraceMs: number;
}

export class LiveReply implements ReplySource {
  readonly id: string;
  readonly conversationId: string;
  readonly tenantId: string;
  readonly events: ChatStreamEvent[] = [];
  /** The text of its token events so far. */
  text = '';
  error: ErrorBody | undefined;
  ended = false;
  /** Aborts the model call; its reason is a ReplyInterrupted. */
  readonly controller = new AbortController();
  private readonly listeners = new Set<ReplyListener>();
  private readonly detachGraceMs: number;
  private graceTimer: NodeJS.Timeout | undefined;

  constructor({ id, conversationId, tenantId, detachGraceMs }: LiveReplyOptions) {
    this.id = id;
    this.conversationId = conversationId;
    this.tenantId = tenantId;
    this.detachGraceMs = detachGraceMs;
  }

  get listenerCount(): number {
    return this.listeners.size;
  }

  exhaustedAfter(position: number): boolean {
    return this.ended && position >= this.events.length + (this.error === undefined ? 0 : 1);
  }

  attach(listener: ReplyListener, after: number): () => void {
    for (const event of eventsOf(this.events, this.error, after)) listener.event(event);
    if (this.ended) {
      listener.end();
      return () => undefined;
    }
    clearTimeout(this.graceTimer);
    this.graceTimer = undefined;
    this.listeners.add(listener);
    return () => {
      if (!this.listeners.delete(listener) || this.listeners.size > 0 || this.ended) return;
      // The last client left. Keep going for a moment so a reconnecting client can re-attach; then stop
      // paying for a reply nobody reads.
      if (this.detachGraceMs === 0) this.interrupt('detached');
      else this.graceTimer = setTimeout(() => this.interrupt('detached'), this.detachGraceMs).unref();
    };
  }

  /** Stops the model call; the run then ends the reply with the interruption's error. */
  interrupt(reason: Interruption): void {
    clearTimeout(this.graceTimer);
    if (!this.ended && !this.controller.signal.aborted) this.controller.abort(new ReplyInterrupted(reason));
  }

  /** The interruption that stopped this reply, if we stopped it. */
  get interruption(): Interruption | undefined {
    const reason: unknown = this.controller.signal.reason;
    return reason instanceof ReplyInterrupted ? reason.reason : undefined;
  }

  publish(data: ChatStreamEvent): void {
    this.events.push(data);
    if (data.type === 'token') this.text += data.content;
    const event: ReplyEvent = { position: this.events.length, name: data.type, data };
    for (const listener of this.listeners) listener.event(event);
    if (data.type === 'done') this.close();
  }

  fail(error: ErrorBody): void {
    this.error = error;
    const event: ReplyEvent = { position: this.events.length + 1, name: 'error', data: error };
    for (const listener of this.listeners) listener.event(event);
    this.close();
  }

  private close(): void {
    this.ended = true;
    clearTimeout(this.graceTimer);
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const listener of listeners) listener.end();
  }
}
