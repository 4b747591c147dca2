// W3C Trace Context (https://www.w3.org/TR/trace-context/): one trace id follows a request from the gateway
// through every service, into Kafka message headers and on into the workers that handle them. The current
// span lives in AsyncLocalStorage, so code far from the request (an outbox write, a log line) finds it without
// passing it along, and every log line written inside a span carries trace_id and span_id.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomFillSync } from 'node:crypto';

export interface TraceContext {
  /** 32 lowercase hex digits, not all zero. */
  readonly traceId: string;
  /** This span's id: 16 lowercase hex digits, not all zero. */
  readonly spanId: string;
  /** The caller's sampling decision (trace-flags bit 0), passed on unchanged. */
  readonly sampled: boolean;
}

export const TRACEPARENT_HEADER = 'traceparent';

// version-traceid-parentid-flags. A version other than 00 is parsed by its first four fields, as the
// specification asks (later versions may append fields); ff is invalid.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZEROS = /^0+$/;

/** The span a `traceparent` header names, or undefined when it is absent or malformed (then a new trace starts). */
export function parseTraceparent(value: string | undefined): TraceContext | undefined {
  const match = value === undefined ? null : TRACEPARENT.exec(value.trim());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (ZEROS.test(traceId) || ZEROS.test(spanId)) return undefined;
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

export function formatTraceparent({ traceId, spanId, sampled }: TraceContext): string {
  return `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;
}

// Ids are cut from a pool of random bytes refilled 4 KiB at a time (as node:crypto's randomUUID does): a
// randomBytes call per id costs about 3.5 µs, and every request starts a span (two ids for a new trace).
const RANDOM_POOL_BYTES = 4096;
let randomPool = Buffer.alloc(0);
let randomOffset = 0;

function randomId(bytes: number): string {
  for (;;) {
    if (randomOffset + bytes > randomPool.length) {
      randomPool = randomFillSync(Buffer.allocUnsafe(RANDOM_POOL_BYTES));
      randomOffset = 0;
    }
    const id = randomPool.toString('hex', randomOffset, randomOffset + bytes);
    randomOffset += bytes;
    if (!ZEROS.test(id)) return id;
  }
}

/** A new span: a child of `parent` (same trace), or the root of a new trace. */
export function childSpan(parent?: TraceContext): TraceContext {
  return { traceId: parent?.traceId ?? randomId(16), spanId: randomId(8), sampled: parent?.sampled ?? true };
}

const storage = new AsyncLocalStorage<TraceContext>();

/** The span the running code belongs to, if any. */
export function currentTrace(): TraceContext | undefined {
  return storage.getStore();
}

/** Runs `fn` (and everything it awaits or schedules) inside `span`. */
export function runInSpan<T>(span: TraceContext, fn: () => T): T {
  return storage.run(span, fn);
}

/** `{traceparent}` for the current span, to put on an outgoing request or message; empty outside any span. */
export function traceHeaders(): Record<string, string> {
  const span = storage.getStore();
  return span ? { [TRACEPARENT_HEADER]: formatTraceparent(span) } : {};
}

/** The fields every log line inside a span gets (pino mixin). */
export function traceLogFields(): { trace_id?: string; span_id?: string } {
  const span = storage.getStore();
  return span ? { trace_id: span.traceId, span_id: span.spanId } : {};
}
