import { formatSse, type AnalysisStreamEventName, type AnalysisStreamEvents } from '@fin/contracts';
import { trackEventStream } from '@fin/http';
import type express from 'express';
import type { z } from 'zod';

export interface AnalysisEventStream {
  send<E extends AnalysisStreamEventName>(event: E, data: z.input<(typeof AnalysisStreamEvents)[E]>): void;
  end(): void;
}

/**
 * Starts the SSE answer of a streamed analysis: headers go out at once (with `Location`, the job's status URL,
 * so the client knows the job before the first event), each event is written as soon as it is sent, and while
 * nothing else is written a `: keep-alive` comment goes out every `heartbeatMs` so that proxies and clients do
 * not take a model that is still thinking for a dead connection. Writes after the client left are dropped.
 */
export function openEventStream(
  res: express.Response,
  { location, heartbeatMs }: { location: string; heartbeatMs: number },
): AnalysisEventStream {
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('X-Accel-Buffering', 'no');
  res.setHeader('Location', location);
  res.flushHeaders();
  trackEventStream('analysis', res);
  res.socket?.setNoDelay(true);
  const writable = () => !res.writableEnded && !res.destroyed;
  const heartbeat = setInterval(() => {
    if (writable()) res.write(': keep-alive\n\n');
  }, heartbeatMs);
  const write = (frame: string) => {
    if (!writable()) return;
    res.write(frame);
    heartbeat.refresh();
  };
  return {
    send(event, data) {
      write(formatSse(event, data));
    },
    end() {
      clearInterval(heartbeat);
      if (writable()) res.end();
    },
  };
}
