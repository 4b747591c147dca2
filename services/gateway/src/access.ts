// The checks before a request is forwarded: who is calling (API key), whether their key may use the route
// (scope), the account's limits, and, for chat, a concurrency slot held for as long as the response lives. They
// run once per request, in order, and hand the upstream the caller as an argument (admission()).
import { JobPathParams, formatZodError } from '@fin/contracts';
import { annotateRequest, badRequest, loggerOf, type Caller } from '@fin/http';
import type { Logger } from '@fin/log';
import type { Request, Response } from 'express';
import { requireScope } from './auth/scope';
import type { Authenticator, Principal, Scope } from './auth/types';
import { cutEventStream, eventStreamUnfinished } from './proxy/stream';
import type { RateLimits, ReleaseChatSlot } from './rate-limit/types';
import { JOB_TYPE_SCOPES, type GatewayRoute } from './routes';

export interface AccessDeps {
  authenticator: Authenticator;
  rateLimits: RateLimits;
  logger: Logger;
  /** Proxies in front of the gateway that append to X-Forwarded-For (CLIENT_ADDRESS_HOPS). Default 0. */
  trustedProxyHops?: number | undefined;
}

/**
 * What a request of `route` must pass before its service is called, in order: the API key (401; 429 for an address
 * that keeps failing), the scope (403), the account's per-minute limit and daily token budget (429), a chat slot
 * (429), and on a route that may stream, a watch that ends the stream when the key is revoked. Resolves to the
 * caller the upstream is given, or to undefined when the client left while its chat slot was being taken (nothing
 * is sent to the service then).
 */
export function admission(route: GatewayRoute, deps: AccessDeps): (req: Request, res: Response) => Promise<Caller | undefined> {
  const { authenticator, rateLimits, logger, trustedProxyHops = 0 } = deps;
  const limit = route.target.kind === 'proxy' ? route.target.limit : null;
  const holdsChatSlot = route.limit === 'concurrent_streams';
  const mayStream = Object.values(route.responses).some((response) => response.events !== undefined);
  return async (req, res) => {
    const principal = await authenticator.authenticate(req.header('x-api-key'), clientAddressOf(req, trustedProxyHops));
    // Every later line of the request, and its access line, names the tenant and the key (its id, never the key).
    annotateRequest(res, { tenantId: principal.tenantId, keyId: principal.keyId });
    const scope = requiredScope(route, req.params.job_type);
    if (scope !== null) requireScope(principal, scope);
    const spentBudget = limit === null ? undefined : await rateLimits.admit(limit, principal, req, res);
    if (holdsChatSlot && !(await holdChatSlot(rateLimits, principal, res, logger))) return undefined;
    if (mayStream) endStreamOnRevocation(authenticator, principal, res);
    return callerOf(principal, spentBudget);
  };
}

/**
 * What the services are told about the caller: its tenant, key and scopes (nothing else of the principal), and
 * whether its daily token budget is spent (then the service creates no new work).
 */
function callerOf(principal: Principal, spentBudget: Caller['spentBudget']): Caller {
  const { tenantId, keyId, scopes } = principal;
  return spentBudget === undefined ? { tenantId, keyId, scopes } : { tenantId, keyId, scopes, spentBudget };
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

const JobTypeParam = JobPathParams.pick({ job_type: true });

/** The scope a request on `route` needs. A {job_type} that is not a job type is a 400 naming the parameter. */
function requiredScope(route: GatewayRoute, jobType: unknown): Scope | null {
  if (route.scope === 'any') return null;
  if (route.scope !== 'job_type') return route.scope;
  const parsed = JobTypeParam.safeParse({ job_type: jobType });
  if (!parsed.success) throw badRequest(formatZodError(parsed.error));
  return JOB_TYPE_SCOPES[parsed.data.job_type];
}

/** The last event of a stream whose key was revoked (or whose tenant was disabled) while it was open. */
const REVOKED_STREAM = {
  detail: 'Invalid API key: it was revoked while this stream was open.',
  status_code: 401,
  type: 'unauthorized',
} as const;

/**
 * Ends the response's event stream, with a last `error` event, as soon as the caller's key is revoked or its
 * tenant disabled (the key-change notifications reach every replica within moments). On the routes that may answer
 * with an event stream: a stream may stay open for many minutes after its key was authenticated.
 */
function endStreamOnRevocation(authenticator: Authenticator, principal: Principal, res: Response): void {
  const unwatch = authenticator.watch(principal, () => cutEventStream(res, REVOKED_STREAM));
  res.once('close', unwatch);
}

/**
 * Takes one of the account's concurrent chat slots (429 when all are taken) and gives it back when the response
 * closes; false when the client already left. When the service ended the response (the reply is over), the slot is free at once. When the client
 * left first, or the stream was cut, the reply may still be running: the chat service keeps a reply whose last
 * client left running for its detach grace, so the slot stays taken until that has passed (see chat-slots.ts).
 */
async function holdChatSlot(rateLimits: RateLimits, principal: Principal, res: Response, logger: Logger): Promise<boolean> {
  const release = await rateLimits.acquireChatSlot(principal);
  // The client may have left while the slot was being taken: then 'close' has already been emitted, and
  // nothing is sent to the service.
  if (res.closed) {
    giveBack(release, 'ended', res, logger);
    return false;
  }
  res.once('close', () => giveBack(release, !res.writableFinished || eventStreamUnfinished(res) ? 'detached' : 'ended', res, logger));
  return true;
}

/** Gives a chat slot back (once: from the 'close' listener, or at once when the client had already left). */
function giveBack(release: ReleaseChatSlot, how: 'ended' | 'detached', res: Response, logger: Logger): void {
  release(how).catch((error: unknown) => loggerOf(res, logger).warn({ err: error }, 'releasing a chat slot failed; its lease will expire'));
}
