// Declared routes: a service names the contract's entry for a route (API_ROUTES.createNews) and route() registers
// its method and path, validates its params, query, body and headers with the entry's schemas before the handler
// runs, and hands the handler typed input and the caller the gateway vouched for. Handlers stay short and never
// parse or cast the request themselves.
import { formatZodError, prototypeKeyIssues, type RouteEntry } from '@fin/contracts';
import type { Logger } from '@fin/log';
import type { Request, RequestHandler, Response, Router } from 'express';
import { z } from 'zod';
import { AppError, badRequest } from './errors';
import { GATEWAY_ONLY_DETAIL, identityOf, type Caller } from './identity';
import { currentRequest, type RequestContext } from './request-context';

type InputPart = 'params' | 'query' | 'body' | 'headers';

/** The schema an entry declares for one part of the request, or undefined. */
type SchemaOf<R, K extends InputPart> = R extends { readonly request: infer Request }
  ? Request extends { readonly [P in K]: infer S }
    ? S
    : undefined
  : undefined;
type Parsed<S> = S extends z.ZodType ? z.output<S> : undefined;

/** What the handler of `R` is given: each part parsed by its schema (undefined when the entry declares none). */
export interface RouteInput<R extends RouteEntry> {
  params: Parsed<SchemaOf<R, 'params'>>;
  query: Parsed<SchemaOf<R, 'query'>>;
  body: Parsed<SchemaOf<R, 'body'>>;
  /** The declared headers, by the names the contract gives them (`Idempotency-Key`), absent ones undefined. */
  headers: Parsed<SchemaOf<R, 'headers'>>;
  /** The caller from the gateway's signed headers; null only on a route that needs no API key (anonymous). */
  caller: R extends { readonly scope: null } ? Caller | null : Caller;
}

export interface RouteContext {
  req: Request;
  res: Response;
  requestId: string | undefined;
  /** The request's logger (with its id) when requestContext() ran, else undefined. */
  logger: Logger | undefined;
}

/**
 * What the handler returns is sent as JSON with the status the handler set (200 unless it called
 * `res.status()`); returning undefined means the handler answered itself (a stream, a 204, a page).
 */
export type RouteHandler<R extends RouteEntry> = (input: RouteInput<R>, context: RouteContext) => unknown;

/** The handler's context. The request's child logger is made only if the handler asks for it. */
class HandlerContext implements RouteContext {
  constructor(
    readonly req: Request,
    readonly res: Response,
    private readonly request: RequestContext | undefined,
  ) {}

  get requestId(): string | undefined {
    return this.request?.requestId;
  }

  get logger(): Logger | undefined {
    return this.request?.logger;
  }
}

/** /api/jobs/{job_type}/{job_id}/status → /api/jobs/:job_type/:job_id/status */
export function toExpressPath(openApiPath: string): string {
  return openApiPath.replace(/\{(\w+)\}/g, ':$1');
}

interface Failed {
  issues?: z.core.$ZodIssue[];
}

/** The parsed value, or the issues (added to `failed`, made on the first failure) and undefined. */
function validate(schema: z.ZodType | undefined, value: unknown, failed: Failed): unknown {
  if (schema === undefined) return undefined;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  (failed.issues ??= []).push(...result.error.issues);
  return undefined;
}

/**
 * The declared headers, read by name (case-insensitive, as HTTP has them) into an object keyed as the contract
 * writes them. A problem names the header as written there (`Idempotency-Key: …`), not as a JSON path.
 */
function validateHeaders(schema: z.ZodObject | undefined, req: Request, failed: Failed): unknown {
  if (schema === undefined) return undefined;
  const sent: Record<string, string> = {};
  for (const name of Object.keys(schema.shape)) {
    const value = req.headers[name.toLowerCase()];
    // EventSource never sends an empty Last-Event-ID, and one sent empty means none (as the SSE standard has it).
    if (typeof value === 'string' && !(value === '' && name === 'Last-Event-ID')) sent[name] = value;
  }
  const result = schema.safeParse(sent);
  if (result.success) return result.data;
  for (const issue of result.error.issues) {
    const reason = issue.code === 'invalid_type' && issue.input === undefined ? 'is required' : issue.message;
    (failed.issues ??= []).push({ ...issue, path: issue.path.slice(1), message: `${String(issue.path[0])}: ${reason}` });
  }
  return undefined;
}

/**
 * A route's handler called with its caller as an argument: how the gateway calls a unit of its own process, having
 * authenticated the caller itself (no identity to sign or verify). Rejects with what the error translator answers.
 */
export type RouteCall = (caller: Caller | null, req: Request, res: Response) => Promise<void>;

/**
 * `handler` for `entry`, called with its caller: input checked against the entry's schemas, the result sent as JSON.
 * A keyed route (scope not null) without a caller is refused with 401.
 */
export function routeCall<R extends RouteEntry>(entry: R, handler: RouteHandler<R>): RouteCall {
  const { params: paramsSchema, query: querySchema, body: bodySchema, headers: headersSchema } = entry.request ?? {};
  return async (caller, req, res) => {
    // Before anything can answer: an error answer of such a route is no-store too, which costs nothing.
    if (entry.secretInAnswer === true) res.set('Cache-Control', 'no-store');
    const failed: Failed = {};
    const params = validate(paramsSchema, req.params, failed);
    // express parses the query string when it is first read: not at all for a route without a query schema.
    const query = querySchema === undefined ? undefined : validate(querySchema, req.query, failed);
    // Prototype keys are refused before any schema copies the body (a copy drops them or changes its prototype).
    const prototypeKeys = prototypeKeyIssues(req.body);
    if (prototypeKeys.length > 0) throw badRequest(formatZodError(new z.ZodError(prototypeKeys)));
    const body = validate(bodySchema, req.body, failed);
    const headers = validateHeaders(headersSchema, req, failed);
    if (failed.issues !== undefined) throw badRequest(formatZodError(new z.ZodError(failed.issues)));
    if (caller === null && entry.scope !== null) throw new AppError('unauthorized', GATEWAY_ONLY_DETAIL);

    const input = { params, query, body, headers, caller } as RouteInput<R>;
    const result: unknown = await handler(input, new HandlerContext(req, res, currentRequest()));
    // Only a success is cacheable: an error thrown above never gets the entry's Cache-Control.
    if (entry.cacheControl !== undefined && !res.headersSent) res.set('Cache-Control', entry.cacheControl);
    if (result !== undefined && !res.headersSent) res.json(result);
  };
}

/**
 * The express handler that runs `handler` for `entry` behind verifyIdentity: the caller is the identity verified
 * before it (401 on a keyed route for an anonymous one), then as routeCall.
 */
export function routeHandler<R extends RouteEntry>(entry: R, handler: RouteHandler<R>): RequestHandler {
  const call = routeCall(entry, handler);
  return (req, res, next) => {
    let caller: Caller | null;
    try {
      caller = identityOf(res).caller;
    } catch (error) {
      next(error);
      return;
    }
    call(caller, req, res).catch(next);
  };
}

export interface RouteOptions {
  /** Middleware of this route alone, run before its input is checked (e.g. the portal's session check). */
  before?: readonly RequestHandler[];
}

/**
 * `route(app, API_ROUTES.createNews, async ({ body, headers, caller }) => news.request(caller.tenantId, body))`
 * registers the entry's method and path on `router`. Invalid input is a 400 `validation_error` whose detail names
 * every offending field (params, query, body and headers are all checked, so the caller learns every problem at
 * once). The identity must have been verified before (verifyIdentity mounted ahead of the route): a keyed route
 * without a caller is refused with 401.
 */
export function route<R extends RouteEntry>(router: Router, entry: R, handler: RouteHandler<R>, { before = [] }: RouteOptions = {}): void {
  router[entry.method](toExpressPath(entry.path), ...before, routeHandler(entry, handler));
}
