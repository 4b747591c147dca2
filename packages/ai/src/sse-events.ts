// The Messages API's server-sent events read straight from the response body, as the SDK's Stream reads them
// (same line rules, `ping` skipped, an `error` event thrown as the SDK's APIError), without the SDK's Stream: a
// chat reply keeps its model call open for as long as the reply streams, and the Stream holds three suspended
// async generators, their frames and promises, a TextDecoder and an AbortController of its own for that whole
// time (docs/benchmarks.md, chat-stream).
import { APIError } from '@anthropic-ai/sdk';
import type { RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages/messages';
import { StringDecoder } from 'node:string_decoder';

/**
 * Splits a stream of bytes into server-sent events and hands each Messages API event to `onEvent`. Lines end
 * with \n, \r\n or \r; a BOM at a line's start is ignored; only `event:` and `data:` fields count.
 */
export class MessageEventReader {
  readonly #decoder = new StringDecoder('utf8');
  readonly #headers: Headers | undefined;
  #text = '';
  #event: string | null = null;
  #data: string[] = [];

  constructor(headers: Headers | undefined) {
    this.#headers = headers;
  }

  /** Reads a chunk of the body: each event it completes goes to `onEvent` (an `error` event throws). */
  push(chunk: Uint8Array, onEvent: (event: RawMessageStreamEvent) => void): void {
    const decoded = this.#decoder.write(chunk);
    this.#text += decoded;
    // A chunk without a line ending completes nothing (a \r at the end may still be followed by \n).
    if (!decoded.includes('\n') && !decoded.includes('\r') && !this.#text.endsWith('\r')) return;
    this.#lines(onEvent);
  }

  /** The body ended: what is left is read as lines (an event without its blank line is dropped, as the SDK drops it). */
  end(onEvent: (event: RawMessageStreamEvent) => void): void {
    const rest = this.#text + this.#decoder.end();
    this.#text = '';
    if (rest === '') return;
    for (const line of rest.replace(/\r$/, '').split(/\r\n|[\n\r]/)) this.#line(line, onEvent);
  }

  #lines(onEvent: (event: RawMessageStreamEvent) => void): void {
    const text = this.#text;
    let start = 0;
    for (let index = 0; index < text.length; index++) {
      const char = text.charCodeAt(index);
      if (char !== 0x0a && char !== 0x0d) continue;
      // A \r at the end of what has arrived may be the first half of \r\n.
      if (char === 0x0d && index + 1 === text.length) break;
      const line = text.slice(start, index);
      if (char === 0x0d && text.charCodeAt(index + 1) === 0x0a) index++;
      start = index + 1;
      this.#line(line, onEvent);
    }
    this.#text = text.slice(start);
  }

  #line(line: string, onEvent: (event: RawMessageStreamEvent) => void): void {
    if (line.charCodeAt(0) === 0xfeff) line = line.slice(1);
    if (line === '') {
      const event = this.#event;
      const data = this.#data.join('\n');
      this.#event = null;
      this.#data = [];
      this.#dispatch(event, data, onEvent);
      return;
    }
    const colon = line.indexOf(':');
    if (colon === 0) return;
    const field = colon === -1 ? line : line.slice(0, colon);
    if (field !== 'event' && field !== 'data') return;
    const value = colon === -1 ? '' : line.slice(line.charCodeAt(colon + 1) === 0x20 ? colon + 2 : colon + 1);
    if (field === 'event') this.#event = value;
    else this.#data.push(value);
  }

  #dispatch(event: string | null, data: string, onEvent: (event: RawMessageStreamEvent) => void): void {
    if (event === null || event === 'ping') return;
    if (event === 'error') {
      const body = safeJson(data) ?? data;
      const type = (body as { error?: { type?: unknown } } | undefined)?.error?.type;
      throw new APIError(undefined, body, undefined, this.#headers, typeof type === 'string' ? (type as never) : undefined);
    }
    if (data === '') return;
    onEvent(JSON.parse(data) as RawMessageStreamEvent);
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
