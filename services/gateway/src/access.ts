// The checks before a request is forwarded: who is calling (API key), whether their key may use the route
// (scope), and, for chat, a concurrency slot held for as long as the response lives.
import { JobPathParams, formatZodError } from '@fin/contracts';
import { annotateRequest, badRequest, loggerOf, toAppError, type Caller } from '@fin/http';
import type { Logger } from '@fin/log';
import type { Request, RequestHandler, Response } from 'express';
import { requireScope } from './auth/scope';
import type { Authenticator, Principal, Scope } from './auth/types';
import { cutEventStream, eventStreamUnfinished } from './proxy/stream';
import { spentBudgetOf } from './rate-limit/token-budget';
import type { RateLimits, ReleaseChatSlot } from './rate-limit/types';
import { JOB_TYPE_SCOPES, type GatewayRoute } from './routes';

/** The principal authenticate() put on the response (the rate limiter reads it from there too). */
function principalOf(res: Response): Principal {
  const principal: unknown = res.locals.principal;
  if (typeof principal !== 'object' || principal === null) throw toAppError(new Error('principalOf() before authenticate()'));
  return principal as Principal;
}

/**
 * What the services are told about the caller: its tenant, key and scopes (signed; nothing else of the principal
 * is read), and whether its daily token budget is spent (then the service creates no new work).
 */
export function callerFrom(res: Response): Caller {
  const principal = principalOf(res);
  const spentBudget = spentBudgetOf(res);
  return spentBudget === undefined
    ? principal
    : { tenantId: principal.tenantId, keyId: principal.keyId, scopes: principal.scopes, spentBudget };
}

/**
 * The caller's address, for throttling failed authentications: the connection's peer, or with `trustedProxyHops`
 * proxies in front (each appending to X-Forwarded-For) the address the outermost of them saw. Entries left of it
 * are the client's own claims and never used.
 */
function clientAddressOf(req: Request, trustedProxyHops: number): string | undefined {
  const peer = req.socket.remoteAddress;
  if (trustedProxyHops === 0) return peer;
  const header = req.headers['x-forwarded-for'];
  const chain = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  return chain[chain.length - trustedProxyHops] ?? chain[0] ?? peer;
}

/**
 * 401 unless X-API-Key holds a valid key (429 for an address that keeps failing); the principal goes to
 * res.locals.principal.
 */
export function authenticate(authenticator: Authenticator, trustedProxyHops = 0): RequestHandler {
  return async (req, res, next) => {
    const principal = await authenticator.authenticate(req.header('x-api-key'), clientAddressOf(req, trustedProxyHops));
    res.locals.principal = principal;
    // Every later line of the request, and its access line, names the tenant and the key (its id, never the key).
    annotateRequest(res, { tenantId: principal.tenantId, keyId: principal.keyId });
    next();
  };
}

const JobTypeParam = JobPathParams.pick({ job_type: true });

/** The scope a request on `route` needs. A {job_type} that is not a job type is a 400 naming the parameter. */
function requiredScope(route: GatewayRoute, jobType: unknown): Scope | null {
  if (route.scope === 'any') return null;
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

/** The last event of a stream whose key was revoked (or whose tenant was disabled) while it was open. */
const REVOKED_STREAM = {
  detail: 'Invalid API key: it was revoked while this stream was open.',
  status_code: 401,
  type: 'unauthorized',
} as const;

/**
 * Ends the response's event stream, with a last `error` event, as soon as the caller's key is revoked or its
 * tenant disabled (the key-change notifications reach every replica within moments). Mounted on the routes that
 * may answer with an event stream: a stream may stay open for many minutes after its key was authenticated.
 */
export function endStreamOnRevocation(authenticator: Authenticator): RequestHandler {
  return (_req, res, next) => {
    const unwatch = authenticator.watch(principalOf(res), () => cutEventStream(res, REVOKED_STREAM));
    res.once('close', unwatch);
    next();
  };
}

/**
 * Takes one of the account's concurrent chat slots (429 when all are taken) and gives it back when the response
 * closes. When the service ended the response (the reply is over), the slot is free at once. When the client
 * left first, or the stream was cut, the reply may still be running: the chat service keeps a reply whose last
 * client left running for its detach grace, so the slot stays taken until that has passed (see chat-slots.ts).
 */
export function holdChatSlot(rateLimits: RateLimits, logger: Logger): RequestHandler {
  return async (_req, res, next) => {
    const release = await rateLimits.acquireChatSlot(principalOf(res));
    // The client may have left while the slot was being taken: then 'close' has already been emitted, and
    // nothing was sent to the service.
    if (res.closed) {
      giveBack(release, 'ended', res, logger);
      return;
    }
    res.once('close', () => giveBack(release, !res.writableFinished || eventStreamUnfinished(res) ? 'detached' : 'ended', res, logger));
    next();
  };
}

/** Gives a chat slot back (once: from the 'close' listener, or at once when the client had already left). */
function giveBack(release: ReleaseChatSlot, how: 'ended' | 'detached', res: Response, logger: Logger): void {
  release(how).catch((error: unknown) => loggerOf(res, logger).warn({ err: error }, 'releasing a chat slot failed; its lease will expire'));
}
