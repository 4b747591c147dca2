// Writing a reply to a client as Server-Sent Events: headers at once, every event flushed as it is written (no
// compression, no buffering), an `id:` on every event, a `: keep-alive` comment while nothing else is written.
import { chatEventId, formatSse } from '@fin/contracts';
import { trackEventStream } from '@fin/http';
import type { Response } from 'express';
import type { ReplyEvent, ReplyListener } from './live-reply';

export interface SseOptions {
  heartbeatMs: number;
  /** Told to EventSource clients as `retry:`: how soon to reconnect after a dropped connection. */
  retryMs: number;
}

/**
 * The listener that writes a reply's events to one client. It lives as long as the stream (minutes), so its
 * methods are the class's, not closures made per stream (under tsx, keepNames gives each named closure a
 * property dictionary of its own).
 */
class SseWriter implements ReplyListener {
  readonly #res: Response;
  readonly #replyId: string;
  readonly #heartbeat: NodeJS.Timeout;

  constructor(res: Response, replyId: string, heartbeatMs: number) {
    this.#res = res;
    this.#replyId = replyId;
    // The stream is quiet while the model thinks or a tool runs: a comment keeps proxies and load balancers
    // from taking it for a dead connection.
    this.#heartbeat = setInterval(() => this.#write(': keep-alive\n\n'), heartbeatMs).unref();
    res.once('close', () => clearInterval(this.#heartbeat));
  }

  event({ position, name, data }: ReplyEvent): void {
    this.#write(formatSse(name, data, position === undefined ? undefined : chatEventId(this.#replyId, position)));
  }

  end(): void {
    clearInterval(this.#heartbeat);
    if (!this.#res.writableEnded) this.#res.end();
  }

  #write(text: string): void {
    if (!this.#res.writableEnded && !this.#res.destroyed) this.#res.write(text);
  }
}

/** Opens the event stream on `res`; returns the listener that writes a reply's events to it and ends it. */
export function openSse(res: Response, replyId: string, { heartbeatMs, retryMs }: SseOptions): ReplyListener {
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  res.socket?.setNoDelay(true);
  trackEventStream('chat', res);
  // A reconnect within the reply's detach grace finds it still running.
  res.write(`retry: ${retryMs}\n\n`);
  return new SseWriter(res, replyId, heartbeatMs);
}
