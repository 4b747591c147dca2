// Signed internal identity. The gateway authenticates the caller and tells the service behind it who that is
// in headers signed with a secret only the gateway and the services hold. A service verifies the signature, so
// a request that reaches it directly (not through the gateway) cannot claim to be any tenant.
//
// The signature covers the identity, the request id, the method and path of the request, and a timestamp: a
// captured set of headers cannot be replayed on another route or, after the allowed clock skew, at all.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Logger } from '@fin/log';
import type { RequestHandler, Response } from 'express';
import { AppError, toAppError, unauthorized } from './errors';
import { annotateRequest, loggerOf } from './request-context';

export const IDENTITY_HEADERS = {
  tenantId: 'x-fin-tenant-id',
  keyId: 'x-fin-key-id',
  scopes: 'x-fin-scopes',
  requestId: 'x-fin-request-id',
  timestamp: 'x-fin-timestamp',
  signature: 'x-fin-signature',
} as const;

/** Every identity header; the gateway removes these from client requests before signing its own. */
export const IDENTITY_HEADER_NAMES: readonly string[] = Object.values(IDENTITY_HEADERS);

/** The authenticated caller: the tenant, the API key it used, and the key's scopes. */
export interface Caller {
  tenantId: string;
  keyId: string;
  scopes: readonly string[];
}

export interface InternalIdentity {
  requestId: string;
  /** null for a request the gateway forwards without an API key (the portal's web pages). */
  caller: Caller | null;
}

/** The request the identity is signed for: the method and the path with query, exactly as sent upstream. */
export interface SignedRequest {
  method: string;
  path: string;
}

export const DEFAULT_MAX_SKEW_MS = 30_000;
const SIGNATURE_PATTERN = /^[0-9a-f]{64}$/;
const TOKEN_PATTERN = /^[\w.:-]{1,128}$/;

function canonical(method: string, path: string, tenantId: string, keyId: string, scopes: string, requestId: string, timestamp: string): string {
  // JSON keeps the fields apart whatever they contain.
  return JSON.stringify(['fin-identity-v1', method.toUpperCase(), path, tenantId, keyId, scopes, requestId, timestamp]);
}

function hmac(secret: string, message: string): Buffer {
  return createHmac('sha256', secret).update(message).digest();
}

/** The identity headers for one upstream request. */
export function signIdentity(identity: InternalIdentity, secret: string, request: SignedRequest, now: number = Date.now()): Record<string, string> {
  const { caller, requestId } = identity;
  const tenantId = caller?.tenantId ?? '';
  const keyId = caller?.keyId ?? '';
  for (const value of [tenantId, keyId, requestId, ...(caller?.scopes ?? [])]) {
    if (value !== '' && !TOKEN_PATTERN.test(value)) throw new TypeError(`cannot sign identity field ${JSON.stringify(value)}`);
  }
  const scopes = (caller?.scopes ?? []).join(',');
  const timestamp = String(now);
  const signature = hmac(secret, canonical(request.method, request.path, tenantId, keyId, scopes, requestId, timestamp)).toString('hex');
  return {
    [IDENTITY_HEADERS.tenantId]: tenantId,
    [IDENTITY_HEADERS.keyId]: keyId,
    [IDENTITY_HEADERS.scopes]: scopes,
    [IDENTITY_HEADERS.requestId]: requestId,
    [IDENTITY_HEADERS.timestamp]: timestamp,
    [IDENTITY_HEADERS.signature]: signature,
  };
}

export const GATEWAY_ONLY_DETAIL = 'This service only accepts requests from the gateway.';

export interface VerifyIdentityOptions {
  /** How far the signing time may be from this process's clock, either way. Default 30 s. */
  maxSkewMs?: number;
  /** Accept requests forwarded without an API key (caller null). Default false: those get 401. */
  allowAnonymous?: boolean;
  /** Logger for the reason of a refusal (the client only learns that it was refused). */
  logger?: Logger;
  now?: () => number;
}

const IDENTITY = 'finIdentity';

/**
 * Middleware of every service behind the gateway: refuses (401) a request without a valid, fresh signature;
 * otherwise makes the identity available through identityOf(res) and callerOf(res).
 */
export function verifyIdentity(secret: string, { maxSkewMs = DEFAULT_MAX_SKEW_MS, allowAnonymous = false, logger, now = Date.now }: VerifyIdentityOptions = {}): RequestHandler {
  if (secret.length === 0) throw new TypeError('verifyIdentity needs the internal signing secret');
  return (req, res, next) => {
    const refuse = (reason: string) => {
      if (logger !== undefined) loggerOf(res, logger).warn({ reason }, 'refused a request without a valid gateway signature');
      next(unauthorized(GATEWAY_ONLY_DETAIL));
    };
    const header = (name: string) => {
      const value = req.headers[name];
      return typeof value === 'string' ? value : undefined;
    };
    const signature = header(IDENTITY_HEADERS.signature);
    const timestamp = header(IDENTITY_HEADERS.timestamp);
    const tenantId = header(IDENTITY_HEADERS.tenantId) ?? '';
    const keyId = header(IDENTITY_HEADERS.keyId) ?? '';
    const scopes = header(IDENTITY_HEADERS.scopes) ?? '';
    const requestId = header(IDENTITY_HEADERS.requestId);

    if (signature === undefined || timestamp === undefined || requestId === undefined) return refuse('missing identity headers');
    if (!SIGNATURE_PATTERN.test(signature)) return refuse('malformed signature');
    const signedAt = Number(timestamp);
    if (!/^\d{1,16}$/.test(timestamp) || Math.abs(now() - signedAt) > maxSkewMs) return refuse('signature timestamp outside the allowed skew');

    const expected = hmac(secret, canonical(req.method, req.originalUrl, tenantId, keyId, scopes, requestId, timestamp));
    if (!timingSafeEqual(Buffer.from(signature, 'hex'), expected)) return refuse('signature mismatch');

    const anonymous = tenantId === '' && keyId === '';
    if (anonymous && !allowAnonymous) return refuse('no caller identity on a route that needs one');
    if (!anonymous && (tenantId === '' || keyId === '')) return refuse('incomplete caller identity');

    const identity: InternalIdentity = {
      requestId,
      caller: anonymous ? null : { tenantId, keyId, scopes: scopes === '' ? [] : scopes.split(',') },
    };
    res.locals[IDENTITY] = identity;
    if (identity.caller) annotateRequest(res, { tenantId: identity.caller.tenantId });
    next();
  };
}

/** The verified identity. Throws (500) when verifyIdentity did not run on this route: a wiring mistake. */
export function identityOf(res: Response): InternalIdentity {
  const value: unknown = res.locals[IDENTITY];
  if (typeof value !== 'object' || value === null) throw toAppError(new Error('identityOf() on a route without verifyIdentity()'));
  return value as InternalIdentity;
}

/** The verified caller; 401 for an anonymous request on a route that needs a caller. */
export function callerOf(res: Response): Caller {
  const { caller } = identityOf(res);
  if (caller === null) throw new AppError('unauthorized', GATEWAY_ONLY_DETAIL);
  return caller;
}
