// Request ids, the per-request logger and the access log. Every log line written while handling a request carries
// its id, whether the code has the response at hand (loggerOf(res)) or not (currentLogger(), through the one
// AsyncLocalStorage of @fin/log, which holds the request's context and, through it, its span).
//
// Per request this costs one small object and one listener shared by all requests; the span, the child logger and
// the access-log line are only made when needed (a log line, an outgoing request, a sampled or failed request).
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import {
  accessLogPolicyOf,
  currentScope,
  LazySpanScope,
  parseTraceparent,
  runInScope,
  TRACEPARENT_HEADER,
  type AccessLogPolicy,
  type Logger,
  type TraceContext,
} from '@fin/log';
import { endSpan, FIN_ATTRIBUTES, SpanKind, startSpan, tracingEnabled, type LiveSpan } from '@fin/tracing';
import type { Request, RequestHandler, Response } from 'express';
import { recordRequest } from './metrics';

export const REQUEST_ID_HEADER = 'X-Request-Id';

/**
 * An id a caller may choose: 1 to 128 characters of letters, digits and `_ . : -`. Anything else (too long,
 * spaces, several ids joined by a proxy) is replaced by a generated one, so an id is always safe to log, to
 * put in a header and to sign.
 */
const REQUEST_ID_PATTERN = /^[\w.:-]{1,128}$/;

export function isWellFormedRequestId(value: string | undefined): value is string {
  return value !== undefined && REQUEST_ID_PATTERN.test(value);
}

export interface RequestContext {
  readonly requestId: string;
  /** The service's logger with `requestId` bound (and, once known, the caller's tenant: annotateRequest). */
  readonly logger: Logger;
}

/** What every request of one app shares: made once, by requestContext(). */
interface Pipeline {
  readonly logger: Logger;
  readonly quietPaths: readonly string[];
  readonly policy: AccessLogPolicy;
  /** The service name of the HTTP metrics, when this middleware also records them (createServiceApp). */
  readonly metricsService: string | undefined;
}

/**
 * A request's context, which is also its trace scope: its span (a child of the caller's `traceparent`) is made
 * when first asked for. The child logger is made on first use too: most requests log one line, when they end,
 * and that line is written by the service's logger with the request's fields, without a child.
 */
class Context extends LazySpanScope implements RequestContext {
  private child: Logger | undefined;
  private fields: Record<string, string> | undefined;
  readonly startedAt = performance.now();
  /** The exported server span, when traces are exported (@fin/tracing); then its ids are the request's span. */
  readonly exported: LiveSpan | undefined;

  constructor(
    readonly requestId: string,
    traceparent: string | undefined,
    readonly req: Request,
    readonly pipeline: Pipeline,
  ) {
    super(traceparent);
    this.exported = tracingEnabled() && !pipeline.quietPaths.includes(req.path) ? startServerSpan(req, traceparent) : undefined;
  }

  override get span(): TraceContext {
    return this.exported?.context ?? super.span;
  }

  get logger(): Logger {
    return (this.child ??= this.pipeline.logger.child(
      this.fields === undefined ? { requestId: this.requestId } : { requestId: this.requestId, ...this.fields },
    ));
  }

  /** Fields for every later line (the child logger, if one was made, is made again with them). */
  annotate(fields: Record<string, string>): void {
    this.fields = this.fields === undefined ? { ...fields } : { ...this.fields, ...fields };
    this.child = undefined;
    if (fields.tenantId !== undefined) this.exported?.span.setAttribute(FIN_ATTRIBUTES.tenantId, fields.tenantId);
  }

  /** The fields of the access-log line. */
  accessFields(res: Response, durationMs: number): Record<string, unknown> {
    const { req } = this;
    const url = req.originalUrl;
    const query = url.indexOf('?');
    const { traceId, spanId } = this.span;
    // The trace ids given here rather than by the logger's mixin: 'close' may be emitted outside the request's scope.
    const line: Record<string, unknown> = { requestId: this.requestId, ...this.fields, trace_id: traceId, span_id: spanId };
    line.method = req.method;
    line.path = query === -1 ? url : url.slice(0, query);
    line.status = res.statusCode;
    line.durationMs = Math.round(durationMs * 1000) / 1000;
    // The client went away before the response was complete (e.g. it closed an event stream).
    if (!res.writableFinished) line.aborted = true;
    return line;
  }
}

const CONTEXT = 'finRequestContext';

/** A SERVER span, a child of the caller's `traceparent`; named by its route when the request ends (endServerSpan). */
function startServerSpan(req: Request, traceparent: string | undefined): LiveSpan | undefined {
  const query = req.originalUrl.indexOf('?');
  return startSpan(req.method, parseTraceparent(traceparent), {
    kind: SpanKind.SERVER,
    // The path without its query string: a query may carry what a user typed.
    attributes: { 'http.request.method': req.method, 'url.path': query === -1 ? req.originalUrl : req.originalUrl.slice(0, query) },
  });
}

/** Ends the request's span with its status and route (`GET /v1/news/:ticker`); a 5xx marks it failed. */
function endServerSpan({ span }: LiveSpan, req: Request, res: Response): void {
  const route: unknown = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof route === 'string') {
    span.setAttribute('http.route', req.baseUrl + route);
    span.updateName(`${req.method} ${req.baseUrl}${route}`);
  }
  span.setAttribute('http.response.status_code', res.statusCode);
  endSpan(span, res.statusCode >= 500 ? new Error(`HTTP ${res.statusCode}`) : undefined);
}

/** The context of the request being handled, in code that runs on its behalf (also after awaits). */
export function currentRequest(): RequestContext | undefined {
  const scope = currentScope();
  return scope instanceof Context ? scope : undefined;
}

/** The request's logger where there is one, else `fallback`. */
export function currentLogger(fallback: Logger): Logger {
  return currentRequest()?.logger ?? fallback;
}

function contextOf(res: Response): Context | undefined {
  const value: unknown = res.locals[CONTEXT];
  return value instanceof Context ? value : undefined;
}

/**
 * Adds fields (the caller's `tenantId`, once authenticated) to every later log line of the request, including
 * its access-log line, wherever the request's logger is looked up (loggerOf, currentLogger).
 */
export function annotateRequest(res: Response, fields: Record<string, string>): void {
  contextOf(res)?.annotate(fields);
}

/** The request id of a response that went through requestContext(). */
export function requestIdOf(res: Response): string | undefined {
  return contextOf(res)?.requestId;
}

/** The request's logger, or `fallback` for a response that did not go through requestContext(). */
export function loggerOf(res: Response, fallback: Logger): Logger {
  return contextOf(res)?.logger ?? fallback;
}

/**
 * Whether the request gets its access-log line: always when it failed (4xx, 5xx), was aborted or was slow;
 * otherwise with the policy's sample rate.
 */
function shouldLog(res: Response, durationMs: number, policy: AccessLogPolicy): boolean {
  if (res.statusCode >= 400 || !res.writableFinished || durationMs >= policy.slowMs) return true;
  return policy.sampleRate >= 1 || (policy.sampleRate > 0 && Math.random() < policy.sampleRate);
}

/** The one 'close' listener, shared by every request (no closure per request). */
function requestClosed(this: Response): void {
  const context = contextOf(this);
  if (context === undefined) return;
  const { pipeline, req } = context;
  const durationMs = performance.now() - context.startedAt;
  if (context.exported !== undefined) endServerSpan(context.exported, req, this);
  if (pipeline.metricsService !== undefined) recordRequest(pipeline.metricsService, req, this, durationMs / 1000);

  const quiet = this.statusCode < 400 && pipeline.quietPaths.includes(req.path);
  const level = quiet ? 'debug' : 'info';
  if (!pipeline.logger.isLevelEnabled(level) || !shouldLog(this, durationMs, pipeline.policy)) return;
  pipeline.logger[level](context.accessFields(this, durationMs), 'request completed');
}

export interface RequestContextOptions {
  logger: Logger;
  /** Paths whose completion is logged at debug rather than info (probes that run every few seconds). */
  quietPaths?: readonly string[];
  /** Also record the HTTP metrics (metrics.ts) under this service name, from the same listener. */
  metricsService?: string;
}

/**
 * The first middleware of every service: takes the caller's X-Request-Id when well-formed (the gateway sends
 * its own, so one id follows a request through every service) or generates one, sets it on the response, and
 * writes the access-log line (see shouldLog; the policy is the logger's: accessLogPolicyOf) when the response is
 * done. The request runs in a span of the caller's W3C trace (`traceparent`) or of a new one, so its log lines
 * carry trace_id and whatever it sends on (a forwarded request, an outbox event) continues the trace.
 */
export function requestContext({ logger, quietPaths = [], metricsService }: RequestContextOptions): RequestHandler {
  const pipeline: Pipeline = { logger, quietPaths, policy: accessLogPolicyOf(logger), metricsService };
  return (req, res, next) => {
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && REQUEST_ID_PATTERN.test(incoming) ? incoming : randomUUID();
    const traceparent = req.headers[TRACEPARENT_HEADER];
    const context = new Context(requestId, typeof traceparent === 'string' ? traceparent : undefined, req, pipeline);
    res.locals[CONTEXT] = context;
    res.setHeader(REQUEST_ID_HEADER, requestId);
    res.on('close', requestClosed);
    runInScope(context, next);
  };
}
