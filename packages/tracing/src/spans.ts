// The spans code calls, whether or not traces are exported. The current span stays where @fin/log keeps it (its
// one AsyncLocalStorage, which log lines, outgoing requests and outbox rows read): a span made here is a child of
// that span, given explicitly as its parent, and the code it wraps runs with the new span's ids there. No
// OpenTelemetry context manager is installed, so nothing here depends on a require hook or on patched modules.
//
// Off (the default), the tracer is @opentelemetry/api's no-op one and is not even called: withSpan runs its work
// as it is, and withRemoteSpan makes the same id-only span @fin/log always made.
import {
  INVALID_SPAN_CONTEXT,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
  type Attributes,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { childSpan, currentTrace, parseTraceparent, runInSpan, type TraceContext } from '@fin/log';

export { SpanKind, type Attributes, type Span };

/** The attributes of ours on spans (the rest are OpenTelemetry's semantic conventions). */
export const FIN_ATTRIBUTES = {
  jobId: 'fin.job.id',
  jobType: 'fin.job.type',
  tenantId: 'fin.tenant.id',
  toolOutcome: 'fin.tool.outcome',
} as const;

const TRACER_NAME = '@fin/tracing';

// The API's tracer: a proxy that stays the no-op tracer until startTracing registers the SDK's provider.
let tracer: Tracer = trace.getTracer(TRACER_NAME);
let enabled = false;

/** Whether spans are recorded and exported (startTracing found an endpoint); false unless tracing was started. */
export function tracingEnabled(): boolean {
  return enabled;
}

/**
 * Called by startTracing with the SDK's tracer, and with undefined when it shuts down; a test records spans by
 * handing it a tracer of an in-memory provider.
 */
export function useTracer(next: Tracer | undefined): void {
  tracer = next ?? trace.getTracer(TRACER_NAME);
  enabled = next !== undefined;
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
}

/** A started span and the ids it gives the code run inside it. */
export interface LiveSpan {
  readonly span: Span;
  readonly context: TraceContext;
}

/** The API's non-recording span, handed to work run without tracing (its methods do nothing). */
const NOOP_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

const live = new WeakMap<TraceContext, Span>();

function parentContext(parent: TraceContext | undefined) {
  if (parent === undefined) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: parent.traceId,
    spanId: parent.spanId,
    traceFlags: parent.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
  });
}

/**
 * Starts a span, a child of `parent` (or the root of a new trace), when tracing is on; undefined when it is off.
 * The caller ends it (endSpan), and runs the code it covers with runInSpan(live.context, …).
 */
export function startSpan(
  name: string,
  parent: TraceContext | undefined,
  { kind = SpanKind.INTERNAL, attributes }: SpanOptions = {},
): LiveSpan | undefined {
  if (!enabled) return undefined;
  const span = tracer.startSpan(name, { kind, ...(attributes === undefined ? {} : { attributes }) }, parentContext(parent));
  const { traceId, spanId, traceFlags } = span.spanContext();
  const context: TraceContext = { traceId, spanId, sampled: Boolean(traceFlags & TraceFlags.SAMPLED) };
  live.set(context, span);
  return { span, context };
}

/** Ends a span, marked failed when `error` is given (its type only: an error's message may quote input). */
export function endSpan(span: Span, error?: unknown): void {
  if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: errorName(error) });
  span.end();
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

async function runSpan<T>(started: LiveSpan, fn: (span: Span) => Promise<T>): Promise<T> {
  try {
    const result = await runInSpan(started.context, () => fn(started.span));
    endSpan(started.span);
    return result;
  } catch (error) {
    endSpan(started.span, error);
    throw error;
  }
}

/** Runs `fn` in a span, a child of the current one; without tracing, runs it as it is (with the no-op span). */
export function withSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const started = startSpan(name, currentTrace(), options);
  return started === undefined ? fn(NOOP_SPAN) : runSpan(started, fn);
}

/**
 * Runs `fn` in a span continuing the trace of a `traceparent` received from elsewhere (a message header), or a
 * new trace when there is none. Without tracing the span is the id-only one of @fin/log, as before.
 */
export function withRemoteSpan<T>(
  name: string,
  traceparent: string | undefined,
  options: SpanOptions,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = parseTraceparent(traceparent);
  const started = startSpan(name, parent, options);
  return started === undefined ? runInSpan(childSpan(parent), () => fn(NOOP_SPAN)) : runSpan(started, fn);
}

/** Adds attributes to the current span (a job id learnt midway); nothing without tracing. */
export function setSpanAttributes(attributes: Attributes): void {
  if (!enabled) return;
  const current = currentTrace();
  if (current !== undefined) live.get(current)?.setAttributes(attributes);
}
