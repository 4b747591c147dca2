// Request ids and the per-request logger. Every log line written while handling a request carries its id,
// whether the code has the response at hand (loggerOf(res)) or not (currentLogger(), through AsyncLocalStorage).
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { childSpan, parseTraceparent, runInSpan, TRACEPARENT_HEADER, type Logger } from '@fin/log';
import type { RequestHandler, Response } from 'express';

export const REQUEST_ID_HEADER = 'X-Request-Id';

/**
 * An id a caller may choose: 1 to 128 characters of letters, digits and `_ . : -`. Anything else (too long,
 * spaces, several ids joined by a proxy) is replaced by a generated one, so an id is always safe to log, to
 * put in a header and to sign.
 */
export const REQUEST_ID_PATTERN = /^[\w.:-]{1,128}$/;

export function isWellFormedRequestId(value: string | undefined): value is string {
  return value !== undefined && REQUEST_ID_PATTERN.test(value);
}

export interface RequestContext {
  readonly requestId: string;
  /** The service's logger with `requestId` bound (and, once known, the caller's tenant: annotateRequest). */
  readonly logger: Logger;
}

/**
 * The child logger is made on first use: most requests log one line, when they end, and an event stream may stay
 * open for minutes holding whatever its context holds.
 */
class Context implements RequestContext {
  private child: Logger | undefined;
  private fields: Record<string, string> = {};

  constructor(
    readonly requestId: string,
    private readonly base: Logger,
  ) {}

  get logger(): Logger {
    return (this.child ??= this.base.child({ requestId: this.requestId, ...this.fields }));
  }

  /** Fields for every later line (the child logger is made again, with them). */
  annotate(fields: Record<string, string>): void {
    this.fields = { ...this.fields, ...fields };
    this.child = undefined;
  }
}

const storage = new AsyncLocalStorage<RequestContext>();
const CONTEXT = 'finRequestContext';

/** The context of the request being handled, in code that runs on its behalf (also after awaits). */
export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}

/** The request's logger where there is one, else `fallback`. */
export function currentLogger(fallback: Logger): Logger {
  return storage.getStore()?.logger ?? fallback;
}

function contextOf(res: Response): RequestContext | undefined {
  const value: unknown = res.locals[CONTEXT];
  return typeof value === 'object' && value !== null ? (value as RequestContext) : undefined;
}

/**
 * Adds fields (the caller's `tenantId`, once authenticated) to every later log line of the request, including
 * its "request completed" line, wherever the request's logger is looked up (loggerOf, currentLogger).
 */
export function annotateRequest(res: Response, fields: Record<string, string>): void {
  const context = contextOf(res);
  if (context instanceof Context) context.annotate(fields);
}

/** The request id of a response that went through requestContext(). */
export function requestIdOf(res: Response): string | undefined {
  return contextOf(res)?.requestId;
}

/** The request's logger, or `fallback` for a response that did not go through requestContext(). */
export function loggerOf(res: Response, fallback: Logger): Logger {
  return contextOf(res)?.logger ?? fallback;
}

export interface RequestContextOptions {
  logger: Logger;
  /** Paths whose completion is logged at debug rather than info (probes that run every few seconds). */
  quietPaths?: readonly string[];
}

/**
 * The first middleware of every service: takes the caller's X-Request-Id when well-formed (the gateway sends
 * its own, so one id follows a request through every service) or generates one, sets it on the response,
 * binds it to a child logger, and logs one line when the response is done. The request runs in a span of the
 * caller's W3C trace (`traceparent`) or of a new one, so its log lines carry trace_id and whatever it sends
 * on (a forwarded request, an outbox event) continues the trace.
 */
export function requestContext({ logger, quietPaths = [] }: RequestContextOptions): RequestHandler {
  return (req, res, next) => {
    const incoming = req.header(REQUEST_ID_HEADER);
    const requestId = isWellFormedRequestId(incoming) ? incoming : randomUUID();
    const context = new Context(requestId, logger);
    res.locals[CONTEXT] = context;
    res.setHeader(REQUEST_ID_HEADER, requestId);

    const started = process.hrtime.bigint();
    res.once('close', () => {
      const fields = {
        method: req.method,
        path: req.originalUrl.split('?')[0],
        status: res.statusCode,
        durationMs: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
        // The client went away before the response was complete (e.g. it closed an event stream).
        ...(res.writableFinished ? {} : { aborted: true }),
      };
      const quiet = quietPaths.includes(req.path) && res.statusCode < 400;
      context.logger[quiet ? 'debug' : 'info'](fields, 'request completed');
    });
    runInSpan(childSpan(parseTraceparent(req.header(TRACEPARENT_HEADER))), () => storage.run(context, next));
  };
}
