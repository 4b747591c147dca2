// Writing a reply to a client as Server-Sent Events: headers at once, every event flushed as it is written (no
// compression, no buffering), an `id:` on every event, a `: keep-alive` comment while nothing else is written.
import { chatEventId, formatSse } from '@fin/contracts';
import { trackEventStream } from '@fin/http';
import type { Response } from 'express';
import type { ReplyEvent, ReplyListener } from './live-reply';

const KEEP_ALIVE = ': keep-alive\n\n';

/** An open stream, as the heartbeat sees it. */
export interface KeptAlive {
  keepAlive(): void;
}

/**
 * One timer for every open stream of an app: each open stream gets a keep-alive comment at least every
 * `intervalMs` (the first within `intervalMs` of opening). A timer per stream, with its closure and close
 * listener, was about half a kilobyte for each of thousands of quiet streams. The timer runs only while a stream
 * is open, so an app that streams nothing holds none.
 */
export class Heartbeat {
  readonly #writers = new Set<KeptAlive>();
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;

  constructor(intervalMs: number) {
    this.#intervalMs = intervalMs;
  }

  add(writer: KeptAlive): void {
    this.#writers.add(writer);
    // The stream is quiet while the model thinks or a tool runs: a comment keeps proxies and load balancers
    // from taking it for a dead connection.
    this.#timer ??= setInterval(() => this.#beat(), this.#intervalMs).unref();
  }

  delete(writer: KeptAlive): void {
    if (!this.#writers.delete(writer) || this.#writers.size > 0) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #beat(): void {
    for (const writer of this.#writers) writer.keepAlive();
  }
}

export interface SseOptions {
  heartbeat: Heartbeat;
  /** Told to EventSource clients as `retry:`: how soon to reconnect after a dropped connection. */
  retryMs: number;
}

/**
 * The listener that writes a reply's events to one client. It lives as long as the stream (minutes), so its
 * methods are the class's, not closures made per stream.
 */
class SseWriter implements ReplyListener, KeptAlive {
  readonly #res: Response;
  readonly #replyId: string;
  readonly #heartbeat: Heartbeat;

  constructor(res: Response, replyId: string, heartbeat: Heartbeat) {
    this.#res = res;
    this.#replyId = replyId;
    this.#heartbeat = heartbeat;
    heartbeat.add(this);
  }

  event({ position, name, data }: ReplyEvent): void {
    this.#write(formatSse(name, data, position === undefined ? undefined : chatEventId(this.#replyId, position)));
  }

  end(): void {
    this.close();
    if (!this.#res.writableEnded) this.#res.end();
  }

  /** The client's connection closed: no more keep-alives. */
  close(): void {
    this.#heartbeat.delete(this);
  }

  keepAlive(): void {
    this.#write(KEEP_ALIVE);
  }

  #write(text: string): void {
    if (!this.#res.writableEnded && !this.#res.destroyed) this.#res.write(text);
  }
}

/** Opens the event stream on `res`; returns the writer of a reply's events to it (close() it when `res` closes). */
export function openSse(res: Response, replyId: string, { heartbeat, retryMs }: SseOptions): ReplyListener & { close(): void } {
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  res.socket?.setNoDelay(true);
  trackEventStream('chat', res);
  // A reconnect within the reply's detach grace finds it still running.
  res.write(`retry: ${retryMs}\n\n`);
  return new SseWriter(res, replyId, heartbeat);
}
