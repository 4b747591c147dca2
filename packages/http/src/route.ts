// Declared routes: the contract schemas validate params, query and body before the handler runs, and the
// handler gets typed input. Handlers stay short and never parse or cast the request themselves.
import { formatZodError } from '@fin/contracts';
import type { Logger } from '@fin/log';
import type { Request, RequestHandler, Response } from 'express';
import { z } from 'zod';
import { badRequest } from './errors';
import { currentRequest } from './request-context';

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

function validate(schema: z.ZodType | undefined, value: unknown, issues: z.core.$ZodIssue[]): unknown {
  if (schema === undefined) return undefined;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  issues.push(...result.error.issues);
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
  return async (req, res, next) => {
    try {
      const issues: z.core.$ZodIssue[] = [];
      const params = validate(schemas.params, req.params, issues);
      const query = validate(schemas.query, req.query, issues);
      const body = validate(schemas.body, req.body, issues);
      if (issues.length > 0) throw badRequest(formatZodError(new z.ZodError(issues)));

      const context = currentRequest();
      const input = { params, query, body } as RouteInput<P, Q, B>;
      const result: unknown = await handler(input, {
        req,
        res,
        requestId: context?.requestId,
        // Read on use: the request's child logger is only made when something logs.
        get logger() {
          return context?.logger;
        },
      });
      if (result !== undefined && !res.headersSent) res.json(result);
    } catch (error) {
      next(error);
    }
  };
}
