// Declared routes: the contract schemas validate params, query and body before the handler runs, and the
// handler gets typed input. Handlers stay short and never parse or cast the request themselves.
import { formatZodError } from '@fin/contracts';
import type { Logger } from '@fin/log';
import type { Request, RequestHandler, Response } from 'express';
import { z } from 'zod';
import { badRequest } from './errors';
import { currentRequest, type RequestContext } from './request-context';

type Output<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface RouteSchemas<P extends z.ZodType | undefined, Q extends z.ZodType | undefined, B extends z.ZodType | undefined> {
  params?: P;
  query?: Q;
  body?: B;
}

export interface RouteInput<P, Q, B> {
  params: Output<P>;
  query: Output<Q>;
  body: Output<B>;
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
 * `res.status()`); returning undefined means the handler answered itself (a stream, a 204).
 */
export type RouteHandler<P, Q, B> = (input: RouteInput<P, Q, B>, context: RouteContext) => unknown;

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

/** The parsed value, or the issues (added to `issues`, made on the first failure) and undefined. */
function validate(schema: z.ZodType | undefined, value: unknown, failed: { issues?: z.core.$ZodIssue[] }): unknown {
  if (schema === undefined) return undefined;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  (failed.issues ??= []).push(...result.error.issues);
  return undefined;
}

/**
 * `app.post('/api/products/news', route({ body: NewsRequest }, async ({ body }) => news.request(body)))`.
 * Invalid input is a 400 `validation_error` whose detail names every offending field (params, query and body
 * are all checked, so the caller learns every problem at once).
 */
export function route<P extends z.ZodType | undefined = undefined, Q extends z.ZodType | undefined = undefined, B extends z.ZodType | undefined = undefined>(
  schemas: RouteSchemas<P, Q, B>,
  handler: RouteHandler<P, Q, B>,
): RequestHandler {
  const { params: paramsSchema, query: querySchema, body: bodySchema } = schemas;
  return async (req, res, next) => {
    try {
      const failed: { issues?: z.core.$ZodIssue[] } = {};
      const params = validate(paramsSchema, req.params, failed);
      // express parses the query string when it is first read: not at all for a route without a query schema.
      const query = querySchema === undefined ? undefined : validate(querySchema, req.query, failed);
      const body = validate(bodySchema, req.body, failed);
      if (failed.issues !== undefined) throw badRequest(formatZodError(new z.ZodError(failed.issues)));

      const input = { params, query, body } as RouteInput<P, Q, B>;
      const result: unknown = await handler(input, new HandlerContext(req, res, currentRequest()));
      if (result !== undefined && !res.headersSent) res.json(result);
    } catch (error) {
      next(error);
    }
  };
}
