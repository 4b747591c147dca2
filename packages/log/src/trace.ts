// W3C Trace Context (https://www.w3.org/TR/trace-context/): one trace id follows a request from the gateway
// through every service, into Kafka message headers and on into the workers that handle them. The current
// span lives in AsyncLocalStorage, so code far from the request (an outbox write, a log line) finds it without
// passing it along, and every log line written inside a span carries trace_id and span_id. An HTTP request's
// span is only made when something needs it (LazySpanScope).
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

// Ids are cut from a pool of random bytes refilled 4 KiB at a time (as node:crypto's randomUUID does): every
// request starts a span (two ids for a new trace), and a randomBytes call per id is a system call each time
// (figures in docs/benchmarks.md, "Choices made by measurement").
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

/**
 * What the async context holds: a span, or something that makes one when first asked (an HTTP request's context,
 * see @fin/http request-context.ts, whose span costs nothing until a log line, an outgoing request or an outbox
 * write needs it). One AsyncLocalStorage per process for both the span and the request.
 */
export interface SpanScope {
  readonly span: TraceContext;
}

/** A scope whose span is made on first use: a child of the caller's `traceparent`, or the root of a new trace. */
export class LazySpanScope implements SpanScope {
  private made: TraceContext | undefined;

  constructor(private readonly traceparent: string | undefined) {}

  get span(): TraceContext {
    return (this.made ??= childSpan(parseTraceparent(this.traceparent)));
  }
}

const storage = new AsyncLocalStorage<SpanScope>();

/** The span the running code belongs to, if any. */
export function currentTrace(): TraceContext | undefined {
  return storage.getStore()?.span;
}

/** The scope the running code belongs to (for @fin/http to find its request context), if any. */
export function currentScope(): SpanScope | undefined {
  return storage.getStore();
}

/** Runs `fn` (and everything it awaits or schedules) inside `span`. */
export function runInSpan<T>(span: TraceContext, fn: () => T): T {
  return storage.run({ span }, fn);
}

/** Runs `fn` (and everything it awaits or schedules) inside `scope`, whose span may be made later. */
export function runInScope<T>(scope: SpanScope, fn: () => T): T {
  return storage.run(scope, fn);
}

/** `{traceparent}` for the current span, to put on an outgoing request or message; empty outside any span. */
export function traceHeaders(): Record<string, string> {
  const scope = storage.getStore();
  return scope ? { [TRACEPARENT_HEADER]: formatTraceparent(scope.span) } : {};
}

/** The fields every log line inside a span gets (pino mixin). */
export function traceLogFields(): { trace_id?: string; span_id?: string } {
  const scope = storage.getStore();
  if (scope === undefined) return {};
  const { traceId, spanId } = scope.span;
  return { trace_id: traceId, span_id: spanId };
}
