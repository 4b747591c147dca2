// Copying a service's response body to the client: event streams frame by frame with no time limit,
// anything else chunk by chunk with an idle limit. Both respect the client's pace (backpressure).
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { formatSse, type ErrorBody } from '@fin/contracts';
import { cutStream } from '@fin/http';
import type { Response } from 'express';

const NOTHING = Buffer.alloc(0);

/** Longest run of bytes held back while waiting for the end of an event (a stream that never ends one). */
const MAX_PENDING_FRAME_BYTES = 64 * 1024;

/** The event stream being copied to each response, so that it can be cut (see cutEventStream). */
const copies = new WeakMap<Response, EventStreamCopy>();
/** Cuts asked for before the service's stream began: it is cut as soon as it does. */
const cutsBeforeStart = new WeakMap<Response, ErrorBody>();
/** Responses whose event stream ended other than by the service ending it: it failed, or it was cut. */
const unfinished = new WeakSet<Response>();

/**
 * Ends the event stream being relayed on `res` with a last `error` event carrying `error` (the same ending as a
 * service failing mid-stream), and closes the service's side so it stops its work. Used when the caller's key
 * is revoked. A response whose event stream has not begun yet is cut when it begins; one that is not an event
 * stream is left alone.
 */
export function cutEventStream(res: Response, error: ErrorBody): void {
  const copy = copies.get(res);
  if (copy !== undefined) copy.cut(error);
  else if (!res.headersSent) cutsBeforeStart.set(res, error);
  else if (isEventStreamResponse(res)) {
    // Written by a handler of this process (inProcessUpstream): ended here, and the handler told (streamEndedEarly).
    unfinished.add(res);
    cutStream(res, formatSse('error', error));
  }
}

function isEventStreamResponse(res: Response): boolean {
  const type = res.getHeader('content-type');
  return typeof type === 'string' && /^text\/event-stream\b/i.test(type);
}

/**
 * Whether the event stream relayed on `res` ended before the service ended it (failed mid-stream, or cut): the
 * work behind it may still be running. False for a response that was not an event stream.
 */
export function eventStreamUnfinished(res: Response): boolean {
  return unfinished.has(res);
}

/** Where the last complete SSE event in `buffer` ends (after its blank line); 0 when there is none. */
function lastEventEnd(buffer: Buffer): number {
  const ends = [buffer.lastIndexOf('\n\n'), buffer.lastIndexOf('\r\r')].map((index) => (index < 0 ? 0 : index + 2));
  const crlf = buffer.lastIndexOf('\r\n\r\n');
  return Math.max(...ends, crlf < 0 ? 0 : crlf + 4);
}

async function write(res: Response, chunk: Buffer, signal: AbortSignal): Promise<void> {
  if (!res.write(chunk)) await once(res, 'drain', { signal });
}

/**
 * Bytes kept from a read while waiting for the rest of an event: copied into a buffer of their own when they are a
 * small part of a larger one (a socket read, or Node's shared pool for small buffers).
 */
function keep(bytes: Buffer): Buffer {
  if (bytes.length * 2 >= bytes.buffer.byteLength) return bytes;
  const own = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(own);
  return own;
}

/**
 * Forwards every complete event as soon as it has arrived. A partial event is held until its end arrives, so
 * that when the service fails mid-event the client never sees half an event glued to the `error` event.
 * Resolves when the service ended the stream; rejects when it failed (or `signal` aborted).
 *
 * Driven by events rather than an async loop: a stream may stay open and quiet for minutes, and a suspended
 * loop keeps its last chunk (and the read buffer under it) alive all that time.
 */
export function copyEventStream(body: Readable, res: Response, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      return;
    }
    const copy = new EventStreamCopy(body, res, signal, resolve, reject);
    const early = cutsBeforeStart.get(res);
    if (early !== undefined) copy.cut(early);
    else copies.set(res, copy);
  });
}

/**
 * The state of one copy, for as long as the stream is open. Its listeners are made once, in the constructor, so
 * that they can be removed by reference when the copy settles.
 */
class EventStreamCopy {
  #pending: Buffer = NOTHING;
  #settled = false;
  readonly #body: Readable;
  readonly #res: Response;
  readonly #signal: AbortSignal;
  readonly #resolve: () => void;
  readonly #reject: (error: unknown) => void;
  readonly #onData: (chunk: Buffer) => void;
  readonly #onDrain: () => void;
  readonly #onEnd: () => void;
  readonly #onError: (error: unknown) => void;
  readonly #onClose: () => void;
  readonly #onAbort: () => void;

  constructor(body: Readable, res: Response, signal: AbortSignal, resolve: () => void, reject: (error: unknown) => void) {
    this.#body = body;
    this.#res = res;
    this.#signal = signal;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#onData = (chunk) => this.#forward(chunk);
    this.#onDrain = () => body.resume();
    this.#onEnd = () => {
      if (this.#pending.length > 0) res.write(this.#pending);
      this.#pending = NOTHING;
      this.#finish();
    };
    this.#onError = (error) => this.#finish(error);
    // Closed without its end: the service's connection failed (an error event usually comes first).
    this.#onClose = () => {
      if (!body.readableEnded)
        this.#finish(Object.assign(new Error('the service closed the stream before its end'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    };
    this.#onAbort = () => this.#finish(signal.reason ?? new Error('aborted'));
    signal.addEventListener('abort', this.#onAbort, { once: true });
    body.on('data', this.#onData);
    body.once('end', this.#onEnd);
    body.on('error', this.#onError);
    body.once('close', this.#onClose);
  }

  #forward(chunk: Buffer): void {
    let pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    const end = pending.length > MAX_PENDING_FRAME_BYTES ? pending.length : lastEventEnd(pending);
    if (end === 0) {
      this.#pending = keep(pending);
      return;
    }
    const complete = pending.subarray(0, end);
    pending = end === pending.length ? NOTHING : keep(pending.subarray(end));
    this.#pending = pending;
    if (!this.#res.write(complete)) {
      this.#body.pause();
      this.#res.once('drain', this.#onDrain);
    }
  }

  /** Ends the client's stream here with an `error` event, after the last complete event, and drops the service's. */
  cut(error: ErrorBody): void {
    if (this.#settled) return;
    this.#pending = NOTHING;
    unfinished.add(this.#res);
    this.#res.write(formatSse('error', error));
    this.#finish();
    this.#body.destroy();
  }

  #finish(error?: unknown): void {
    if (this.#settled) return;
    this.#settled = true;
    copies.delete(this.#res);
    if (error !== undefined) unfinished.add(this.#res);
    // The error listener stays: an error after the end (the body destroyed on abort) must not go unhandled.
    this.#body.off('data', this.#onData);
    this.#body.off('end', this.#onEnd);
    this.#body.off('close', this.#onClose);
    this.#res.off('drain', this.#onDrain);
    this.#signal.removeEventListener('abort', this.#onAbort);
    if (error === undefined) this.#resolve();
    else this.#reject(error);
  }
}

export class IdleTimeoutError extends Error {
  constructor(readonly idleMs: number) {
    super(`no data from the service for ${idleMs} ms`);
    this.name = 'IdleTimeoutError';
  }
}

/** Forwards a body chunk by chunk; fails when the service sends nothing for `idleMs` (client pauses excepted). */
export async function copyBody(body: Readable, res: Response, signal: AbortSignal, idleMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    timer = setTimeout(() => body.destroy(new IdleTimeoutError(idleMs)), idleMs);
  };
  arm();
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      clearTimeout(timer);
      await write(res, chunk, signal);
      arm();
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Reads at most `maxBytes` of a body; undefined when it is longer (it is then destroyed). */
export async function readBounded(body: Readable, maxBytes: number, idleMs: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => body.destroy(new IdleTimeoutError(idleMs)), idleMs);
  };
  arm();
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) {
        body.destroy();
        return undefined;
      }
      chunks.push(chunk);
      arm();
    }
    return Buffer.concat(chunks);
  } finally {
    clearTimeout(timer);
  }
}
