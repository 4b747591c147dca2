// A Server-Sent Events parser following the WHATWG HTML "event stream interpretation": lines end with CRLF, LF or
// CR (also when a CRLF is split between two chunks); `:` starts a comment; `data:` lines of one event are joined
// with line feeds; `id:` sets the last event id (kept across events, ignored when it contains NUL); `retry:` sets
// the reconnection delay; a blank line dispatches the event, and an event without data is not dispatched; an
// event cut off by the end of the stream is dropped. A UTF-8 byte order mark at the start is skipped.

/** One dispatched event. */
export interface SseMessage {
  /** The event name: `message` when the event had no `event:` field. */
  event: string;
  /** The data lines joined with line feeds. */
  data: string;
  /** The last event id as of this event (set by this event or an earlier one), if any. */
  id: string | undefined;
}

/** Incremental parser: feed it text as it arrives, take the events it completes. */
export class SseParser {
  /** The last `retry:` value, in milliseconds. */
  retryMs: number | undefined;
  /** The last event id seen (what a reconnecting client sends as Last-Event-ID). */
  lastEventId: string | undefined;
  private buffer = '';
  private started = false;
  private skipLineFeed = false;
  private eventName = '';
  private data: string[] = [];

  /** Parses `text`; returns the events completed by it. */
  feed(text: string): SseMessage[] {
    let chunk = text;
    if (!this.started && chunk.length > 0) {
      this.started = true;
      if (chunk.startsWith('\uFEFF')) chunk = chunk.slice(1);
    }
    if (this.skipLineFeed && chunk.startsWith('\n')) chunk = chunk.slice(1);
    this.skipLineFeed = false;
    this.buffer += chunk;
    const messages: SseMessage[] = [];
    let start = 0;
    for (let index = 0; index < this.buffer.length; index++) {
      const char = this.buffer[index];
      if (char !== '\n' && char !== '\r') continue;
      const line = this.buffer.slice(start, index);
      if (char === '\r') {
        if (index + 1 === this.buffer.length) this.skipLineFeed = true;
        else if (this.buffer[index + 1] === '\n') index++;
      }
      start = index + 1;
      const message = this.line(line);
      if (message !== undefined) messages.push(message);
    }
    this.buffer = this.buffer.slice(start);
    return messages;
  }

  private line(line: string): SseMessage | undefined {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.eventName = value;
        break;
      case 'data':
        this.data.push(value);
        break;
      case 'id':
        if (!value.includes('\0')) this.lastEventId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
      // Unknown fields are ignored.
    }
    return undefined;
  }

  private dispatch(): SseMessage | undefined {
    const event = this.eventName === '' ? 'message' : this.eventName;
    const data = this.data;
    this.eventName = '';
    this.data = [];
    if (data.length === 0) return undefined;
    return { event, data: data.join('\n'), id: this.lastEventId === '' ? undefined : this.lastEventId };
  }
}

/**
 * The events of a response body, in order. Stops when the body ends (an event cut off at the end is dropped).
 * `parser` keeps the last event id and retry value for a reconnection.
 */
export async function* readSse(body: ReadableStream<Uint8Array>, parser: SseParser = new SseParser()): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let done = false;
  try {
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) {
        done = true;
        yield* parser.feed(decoder.decode());
        return;
      }
      yield* parser.feed(decoder.decode(chunk.value, { stream: true }));
    }
  } finally {
    // A consumer that stops early (break, return, an error) cancels the body, closing the connection.
    if (!done) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
