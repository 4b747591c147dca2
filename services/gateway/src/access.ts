// The checks before a request is forwarded: who is calling (API key), whether their key may use the route
// (scope), and, for chat, a concurrency slot held for as long as the response lives.
import { JobPathParams, formatZodError } from '@fin/contracts';
import { annotateRequest, badRequest, loggerOf, toAppError, type Caller } from '@fin/http';
import type { Logger } from '@fin/log';
import type { RequestHandler, Response } from 'express';
import { requireScope } from './auth/scope';
import type { Authenticator, Principal, Scope } from './auth/types';
import type { RateLimits } from './rate-limit/types';
import { JOB_TYPE_SCOPES, type GatewayRoute } from './routes';

/** The principal authenticate() put on the response (the rate limiter reads it from there too). */
export function principalOf(res: Response): Principal {
  const principal: unknown = res.locals.principal;
  if (typeof principal !== 'object' || principal === null) throw toAppError(new Error('principalOf() before authenticate()'));
  return principal as Principal;
}

/** What the services are told about the caller. */
export function callerFrom(principal: Principal): Caller {
  return { tenantId: principal.tenantId, keyId: principal.keyId, scopes: principal.scopes };
}

/** 401 unless X-API-Key holds a valid key; the principal goes to res.locals.principal. */
export function authenticate(authenticator: Authenticator): RequestHandler {
  return async (req, res, next) => {
    const principal = await authenticator.authenticate(req.header('x-api-key'));
    res.locals.principal = principal;
    // Every later line of the request, and its access line, names the tenant and the key (its id, never the key).
    annotateRequest(res, { tenantId: principal.tenantId, keyId: principal.keyId });
    next();
  };
}

const JobTypeParam = JobPathParams.pick({ job_type: true });

/** The scope a request on `route` needs. A {job_type} that is not a job type is a 400 naming the parameter. */
function requiredScope(route: GatewayRoute, jobType: unknown): Scope | null {
  if (route.scope !== 'job_type') return route.scope;
  const parsed = JobTypeParam.safeParse({ job_type: jobType });
  if (!parsed.success) throw badRequest(formatZodError(parsed.error));
  return JOB_TYPE_SCOPES[parsed.data.job_type];
}

/** 403 naming the scope when the caller's key does not carry the one the route needs. */
export function checkScope(route: GatewayRoute): RequestHandler {
  return (req, res, next) => {
    const scope = requiredScope(route, req.params.job_type);
    if (scope !== null) requireScope(principalOf(res), scope);
    next();
  };
}

/**
 * Takes one of the key's concurrent chat slots (429 when all are taken) and gives it back when the response
 * ends for any reason: completed, failed, or the client went away mid-stream.
 */
export function holdChatSlot(rateLimits: RateLimits, logger: Logger): RequestHandler {
  return async (_req, res, next) => {
    const release = await rateLimits.acquireChatSlot(principalOf(res));
    // The client may have left while the slot was being taken: then 'close' has already been emitted.
    if (res.closed) {
      giveBack(release, res, logger);
      return;
    }
    // An anonymous listener: it lives as long as the stream, and a named closure costs more memory under tsx.
    res.once('close', () => giveBack(release, res, logger));
    next();
  };
}

/** Gives a chat slot back (once: from the 'close' listener, or at once when the client had already left). */
function giveBack(release: () => Promise<void>, res: Response, logger: Logger): void {
  release().catch((error: unknown) => loggerOf(res, logger).warn({ err: error }, 'releasing a chat slot failed; its lease will expire'));
}
