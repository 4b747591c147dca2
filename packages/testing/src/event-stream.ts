// A client of a Server-Sent Events stream for tests and benchmarks: it reads the stream frame by frame as the
// server sends it (ids, event names, JSON data, comments such as keep-alives), and can leave mid-stream the
// way a browser tab does, by closing its connection.
import http from 'node:http';

export interface SseFrame {
  /** The frame's `id:` field, when it has one. */
  id?: string;
  /** `message` when the frame names no event, as EventSource does. */
  event: string;
  /** The data lines joined, parsed as JSON where they are JSON. */
  data: unknown;
}

export interface EventStreamClient {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Comment lines received so far (`: keep-alive` arrives as "keep-alive"), in order. */
  readonly comments: readonly string[];
  /** The last `retry:` value received, if any. */
  readonly retryMs: number | undefined;
  /** The next frame, or undefined once the stream has ended (or the connection was closed). */
  next(): Promise<SseFrame | undefined>;
  /** Every remaining frame, until the stream ends. */
  rest(): Promise<SseFrame[]>;
  /** The whole body, for an answer that is not an event stream (an error body): JSON parsed where it is JSON. */
  body(): Promise<unknown>;
  /** Leaves: destroys the connection, as a client that goes away mid-stream does. */
  close(): void;
}

export interface EventStreamRequest {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
}

function parseData(lines: string[]): unknown {
  const text = lines.join('\n');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Opens the stream; resolves once the response headers have arrived. */
export function openEventStream(url: string, init: EventStreamRequest = {}): Promise<EventStreamClient> {
  const payload = init.body === undefined ? undefined : JSON.stringify(init.body);
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: init.method ?? (payload === undefined ? 'GET' : 'POST'),
      // A connection of its own, so that close() ends exactly this stream.
      agent: false,
      headers: {
        accept: 'text/event-stream',
        ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
        ...init.headers,
      },
    });
    req.once('error', reject);
    req.once('response', (res) => {
      req.off('error', reject);
      // After the response started, a destroyed connection is an end of the stream, not an error.
      req.on('error', () => undefined);
      const frames: (SseFrame | undefined)[] = [];
      const waiting: ((frame: SseFrame | undefined) => void)[] = [];
      const comments: string[] = [];
      let retryMs: number | undefined;
      let ended = false;
      let raw = '';
      let pending = '';
      let frame: { id?: string; event?: string; data: string[] } = { data: [] };

      const push = (item: SseFrame | undefined) => {
        const deliver = waiting.shift();
        if (deliver) deliver(item);
        else frames.push(item);
      };
      const line = (text: string) => {
        if (text === '') {
          if (frame.data.length > 0)
            push({ ...(frame.id === undefined ? {} : { id: frame.id }), event: frame.event ?? 'message', data: parseData(frame.data) });
          frame = { data: [] };
          return;
        }
        if (text.startsWith(':')) {
          comments.push(text.slice(1).trim());
          return;
        }
        const colon = text.indexOf(':');
        const field = colon < 0 ? text : text.slice(0, colon);
        const value = colon < 0 ? '' : text.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') frame.id = value;
        else if (field === 'event') frame.event = value;
        else if (field === 'data') frame.data.push(value);
        else if (field === 'retry' && /^\d+$/.test(value)) retryMs = Number(value);
      };
      const end = () => {
        if (ended) return;
        ended = true;
        push(undefined);
      };

      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        raw += chunk;
        pending += chunk;
        const lines = pending.split(/\r\n|\r|\n/);
        pending = lines.pop() ?? '';
        for (const text of lines) line(text);
      });
      res.once('end', end);
      res.once('close', end);
      res.once('error', end);
      const next = () => {
        if (frames.length > 0) return Promise.resolve(frames.shift());
        if (ended) return Promise.resolve(undefined);
        return new Promise<SseFrame | undefined>((deliver) => waiting.push(deliver));
      };
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        get comments() {
          return comments;
        },
        get retryMs() {
          return retryMs;
        },
        next,
        async rest() {
          const all: SseFrame[] = [];
          for (let item = await next(); item !== undefined; item = await next()) all.push(item);
          return all;
        },
        async body() {
          while (!ended) await next();
          try {
            return JSON.parse(raw) as unknown;
          } catch {
            return raw;
          }
        },
        close() {
          req.destroy();
          res.destroy();
        },
      });
    });
    req.end(payload);
  });
}
