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

  const write = (text: string) => {
    if (!res.writableEnded && !res.destroyed) res.write(text);
  };
  // The stream is quiet while the model thinks or a tool runs: a comment keeps proxies and load balancers
  // from taking it for a dead connection.
  const heartbeat = setInterval(() => write(': keep-alive\n\n'), heartbeatMs).unref();
  const end = () => {
    clearInterval(heartbeat);
    if (!res.writableEnded) res.end();
  };
  res.once('close', () => clearInterval(heartbeat));

  return {
    event: ({ position, name, data }: ReplyEvent) => write(formatSse(name, data, position === undefined ? undefined : chatEventId(replyId, position))),
    end,
  };
}
