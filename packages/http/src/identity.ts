// Signed internal identity. The gateway authenticates the caller and tells the service behind it who that is
// in headers signed with a key only the gateway and that service hold. A service verifies the signature, so a
// request that reaches it directly (not through the gateway) cannot claim to be any tenant.
//
// The signature covers the identity, the request id, a nonce, the method and path of the request, a timestamp
// and the SHA-256 of the body's bytes. Each service has a key of its own, derived from INTERNAL_SIGNING_SECRET
// with HKDF (the service's name as info): a key taken from one service signs for no other. A service refuses a
// body that is not the one signed, a signature older (or newer) than the allowed skew, and a nonce it has
// already accepted within that window, so a captured request cannot be sent again, to the same route or another.
import { createHmac, createSecretKey, hash, hkdfSync, randomUUID, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { Logger } from '@fin/log';
import type { Request, RequestHandler, Response } from 'express';
import { EMPTY_BODY_DIGEST, expectBodyDigest, hasRequestBody, receivedBodyDigest } from './body';
import { toAppError, unauthorized, type AppError } from './errors';
import { annotateRequest, loggerOf } from './request-context';
import { decodeSpentBudget, encodeSpentBudget, type SpentBudget } from './token-budget';

export const IDENTITY_HEADERS = {
  tenantId: 'x-fin-tenant-id',
  keyId: 'x-fin-key-id',
  scopes: 'x-fin-scopes',
  // The account's daily token budget is spent (token-budget.ts): the service may answer what exists, create nothing.
  spentBudget: 'x-fin-token-budget-spent',
  // The request id the service's log lines carry anyway (request-context.ts): signed, so it is one header, not two.
  requestId: 'x-request-id',
  nonce: 'x-fin-nonce',
  timestamp: 'x-fin-timestamp',
  bodyDigest: 'x-fin-body-sha256',
  signature: 'x-fin-signature',
} as const;

/** Every identity header; the gateway removes these from client requests before signing its own. */
export const IDENTITY_HEADER_NAMES: readonly string[] = Object.values(IDENTITY_HEADERS);

/** The authenticated caller: the tenant, the API key it used, and the key's scopes. */
export interface Caller {
  tenantId: string;
  keyId: string;
  scopes: readonly string[];
  /**
   * Set when the account's daily token budget is spent: the request may be answered from what exists (a cache hit,
   * a job in flight, an Idempotency-Key replayed), but must start no new work (tokenBudgetRefusal instead).
   */
  spentBudget?: SpentBudget;
}

export interface InternalIdentity {
  requestId: string;
  /** null for a request the gateway forwards without an API key (the portal's web pages). */
  caller: Caller | null;
}

const DEFAULT_MAX_SKEW_MS = 30_000;
/** Nonces remembered per verifier at most; beyond, the oldest is forgotten first (see SeenNonces). */
const DEFAULT_MAX_REMEMBERED_NONCES = 250_000;
const SIGNATURE_PATTERN = /^[0-9a-f]{64}$/;
const TOKEN_PATTERN = /^[\w.:-]{1,128}$/;
const TIMESTAMP_PATTERN = /^\d{1,16}$/;
const EMPTY_BODY_DIGEST_HEX = EMPTY_BODY_DIGEST.toString('hex');

/** The request the identity is signed for: the method, the path with query and the body, exactly as sent upstream. */
export interface SignedRequest {
  method: string;
  path: string;
  /** The body's bytes (a string counts as its UTF-8 bytes); absent or empty: no body. */
  body?: Uint8Array | string | undefined;
}

/**
 * The key that signs (gateway) and verifies (service) identities for one service. Derived once, at start: HKDF
 * costs more than a request should.
 */
export interface IdentityKey {
  /** The service the key belongs to, e.g. "news". */
  readonly service: string;
  /** Opaque; never logged (a KeyObject prints as an empty object). */
  readonly key: KeyObject;
}

/** Separates these keys from anything else that may ever be derived from the same secret. */
const KEY_SALT = 'fin-internal-identity';

/** The key of `service` (its name as HKDF-SHA256 info), derived from INTERNAL_SIGNING_SECRET. */
export function identityKey(secret: string, service: string): IdentityKey {
  if (secret.length === 0) throw new TypeError('identityKey needs the internal signing secret');
  if (!TOKEN_PATTERN.test(service)) throw new TypeError(`identityKey needs a service name, got ${JSON.stringify(service)}`);
  return Object.freeze({ service, key: createSecretKey(Buffer.from(hkdfSync('sha256', secret, KEY_SALT, service, 32))) });
}

function bodyDigestHex(body: Uint8Array | string | undefined): string {
  if (body === undefined || body.length === 0) return EMPTY_BODY_DIGEST_HEX;
  return hash('sha256', body, 'hex');
}

function canonical(
  method: string,
  path: string,
  tenantId: string,
  keyId: string,
  scopes: string,
  spentBudget: string,
  requestId: string,
  nonce: string,
  timestamp: string,
  bodyDigest: string,
): string {
  // JSON keeps the fields apart whatever they contain.
  return JSON.stringify([
    'fin-identity-v3',
    method.toUpperCase(),
    path,
    tenantId,
    keyId,
    scopes,
    spentBudget,
    requestId,
    nonce,
    timestamp,
    bodyDigest,
  ]);
}

function hmac(key: IdentityKey, message: string): Buffer {
  return createHmac('sha256', key.key).update(message).digest();
}

/**
 * The identity headers for one upstream request. Every call makes a new nonce: a request sent again (a retry)
 * must be signed again, since the service accepts each nonce once.
 */
export function signIdentity(
  identity: InternalIdentity,
  key: IdentityKey,
  request: SignedRequest,
  now: number = Date.now(),
): Record<string, string> {
  const { caller, requestId } = identity;
  const tenantId = caller?.tenantId ?? '';
  const keyId = caller?.keyId ?? '';
  for (const value of [tenantId, keyId, requestId, ...(caller?.scopes ?? [])]) {
    if (value !== '' && !TOKEN_PATTERN.test(value)) throw new TypeError(`cannot sign identity field ${JSON.stringify(value)}`);
  }
  const scopes = (caller?.scopes ?? []).join(',');
  const spentBudget = caller?.spentBudget === undefined ? '' : encodeSpentBudget(caller.spentBudget);
  const nonce = randomUUID();
  const timestamp = String(now);
  const bodyDigest = bodyDigestHex(request.body);
  const signature = hmac(
    key,
    canonical(request.method, request.path, tenantId, keyId, scopes, spentBudget, requestId, nonce, timestamp, bodyDigest),
  ).toString('hex');
  return {
    [IDENTITY_HEADERS.tenantId]: tenantId,
    [IDENTITY_HEADERS.keyId]: keyId,
    [IDENTITY_HEADERS.scopes]: scopes,
    [IDENTITY_HEADERS.spentBudget]: spentBudget,
    [IDENTITY_HEADERS.requestId]: requestId,
    [IDENTITY_HEADERS.nonce]: nonce,
    [IDENTITY_HEADERS.timestamp]: timestamp,
    [IDENTITY_HEADERS.bodyDigest]: bodyDigest,
    [IDENTITY_HEADERS.signature]: signature,
  };
}

export const GATEWAY_ONLY_DETAIL = 'This service only accepts requests from the gateway.';

/**
 * The nonces a verifier accepted, each kept until no signature carrying it can still be fresh: signed at most
 * `maxSkew` ahead of this clock and accepted for `maxSkew` after, so 2 × maxSkew (`ttlMs`) after it was seen.
 * Two generations: nonces go into the current one; when it is `ttlMs` old it becomes the previous one and the
 * previous one is dropped whole, so a nonce is remembered between ttlMs and 2 × ttlMs (an entry left longer
 * refuses nothing: its signature is stale by then) at the cost of one Set insertion per request, no per-entry
 * timestamp and no pruning walk. Bounded: once the current generation holds half of `max`, it is turned over
 * early, forgetting the oldest half — at the default only above about 2,000 requests a second to one process,
 * and the nonces forgotten are then still older than the skew window of a sender whose clock agrees with ours.
 * Per process: each replica keeps its own, which is enough because the signature binds the body, the method and
 * the path, and a replayed request can only be refused where it would have acted.
 */
class SeenNonces {
  private current = new Set<string>();
  private previous = new Set<string>();
  private turnAt = 0;
  private readonly generationMax: number;

  constructor(
    private readonly ttlMs: number,
    max: number,
  ) {
    this.generationMax = Math.max(1, Math.floor(max / 2));
  }

  /** Records the nonce; false when it was already seen. */
  add(nonce: string, now: number): boolean {
    if (this.current.has(nonce) || this.previous.has(nonce)) return false;
    if (now >= this.turnAt || this.current.size >= this.generationMax) {
      // Two generations apart (or at the start): nothing in either is still needed.
      if (now >= this.turnAt + this.ttlMs) this.current.clear();
      this.previous = this.current;
      this.current = new Set();
      this.turnAt = now + this.ttlMs;
    }
    this.current.add(nonce);
    return true;
  }
}

export interface VerifyIdentityOptions {
  /** How far the signing time may be from this process's clock, either way. Default 30 s. */
  maxSkewMs?: number;
  /** Accept requests forwarded without an API key (caller null). Default false: those get 401. */
  allowAnonymous?: boolean;
  /** Logger for the reason of a refusal (the client only learns that it was refused). */
  logger?: Logger;
  /** Nonces remembered at most (see SeenNonces). Default 250,000. */
  maxRememberedNonces?: number;
  now?: () => number;
}

const IDENTITY = 'finIdentity';
const REFUSED = 'refused a request without a valid gateway signature';
const BODY_MISMATCH = 'body does not match its signed digest';

/**
 * Middleware of every service behind the gateway: refuses (401) a request without a valid, fresh signature made
 * with this service's key, a nonce already accepted, or a body other than the one signed; otherwise makes the
 * identity available through identityOf(res). Each call keeps its own record of nonces.
 */
export function verifyIdentity(
  key: IdentityKey,
  {
    maxSkewMs = DEFAULT_MAX_SKEW_MS,
    allowAnonymous = false,
    logger,
    maxRememberedNonces = DEFAULT_MAX_REMEMBERED_NONCES,
    now = Date.now,
  }: VerifyIdentityOptions = {},
): RequestHandler {
  const seen = new SeenNonces(2 * maxSkewMs, maxRememberedNonces);
  const refusal = (res: Response | undefined, reason: string): AppError => {
    if (logger !== undefined) (res === undefined ? logger : loggerOf(res, logger)).warn({ reason }, REFUSED);
    return unauthorized(GATEWAY_ONLY_DETAIL);
  };
  // Called by the parser that reads the body after this check, only when the body is not the one signed.
  const refuseBody = (req: Request): AppError => refusal(req.res, BODY_MISMATCH);

  /** The reason to refuse the request, or undefined when it carries a valid, fresh identity (then set on res). */
  const check = (req: Request, res: Response): string | undefined => {
    const { headers } = req;
    const signature = headers[IDENTITY_HEADERS.signature];
    const timestamp = headers[IDENTITY_HEADERS.timestamp];
    const requestId = headers[IDENTITY_HEADERS.requestId];
    const nonce = headers[IDENTITY_HEADERS.nonce];
    const bodyDigest = headers[IDENTITY_HEADERS.bodyDigest];
    if (
      typeof signature !== 'string' ||
      typeof timestamp !== 'string' ||
      typeof requestId !== 'string' ||
      typeof nonce !== 'string' ||
      typeof bodyDigest !== 'string'
    ) {
      return 'missing identity headers';
    }
    const tenantId = stringOr(headers[IDENTITY_HEADERS.tenantId]);
    const keyId = stringOr(headers[IDENTITY_HEADERS.keyId]);
    const scopes = stringOr(headers[IDENTITY_HEADERS.scopes]);
    const spentBudget = stringOr(headers[IDENTITY_HEADERS.spentBudget]);
    if (!SIGNATURE_PATTERN.test(signature) || !SIGNATURE_PATTERN.test(bodyDigest) || !TOKEN_PATTERN.test(nonce))
      return 'malformed signature';
    const at = now();
    if (!TIMESTAMP_PATTERN.test(timestamp) || Math.abs(at - Number(timestamp)) > maxSkewMs)
      return 'signature timestamp outside the allowed skew';

    const expected = hmac(
      key,
      canonical(req.method, req.originalUrl, tenantId, keyId, scopes, spentBudget, requestId, nonce, timestamp, bodyDigest),
    );
    if (!timingSafeEqual(Buffer.from(signature, 'hex'), expected)) return 'signature mismatch';

    const anonymous = tenantId === '' && keyId === '';
    if (anonymous && !allowAnonymous) return 'no caller identity on a route that needs one';
    if (!anonymous && (tenantId === '' || keyId === '')) return 'incomplete caller identity';
    const spent = spentBudget === '' ? undefined : decodeSpentBudget(spentBudget);
    if (spentBudget !== '' && (spent === undefined || anonymous)) return 'malformed spent budget';
    // Only a valid signature uses up its nonce: a forged request cannot spend the gateway's.
    if (!seen.add(nonce, at)) return 'nonce already used (a replayed request)';

    // The body: already read (a parser ran first), absent, or checked by the parser that reads it (checkBodyDigest).
    // The digest is covered by the signature checked above: comparing it needs no constant time.
    const received = receivedBodyDigest(req);
    if (received !== undefined) {
      if (!received.equals(Buffer.from(bodyDigest, 'hex'))) return BODY_MISMATCH;
    } else if (hasRequestBody(req)) {
      expectBodyDigest(req, Buffer.from(bodyDigest, 'hex'), refuseBody);
    } else if (bodyDigest !== EMPTY_BODY_DIGEST_HEX) {
      return BODY_MISMATCH;
    }

    const identity: InternalIdentity = {
      requestId,
      caller: anonymous
        ? null
        : { tenantId, keyId, scopes: scopes === '' ? [] : scopes.split(','), ...(spent === undefined ? {} : { spentBudget: spent }) },
    };
    res.locals[IDENTITY] = identity;
    if (identity.caller) annotateRequest(res, { tenantId });
    return undefined;
  };

  return (req, res, next) => {
    const reason = check(req, res);
    if (reason === undefined) next();
    else next(refusal(res, reason));
  };
}

function stringOr(value: string | string[] | undefined): string {
  return typeof value === 'string' ? value : '';
}

/**
 * In one process, the gateway vouches for the caller itself: the identity it authenticated is set where
 * verifyIdentity would have put it, with no signature to make or check (there is no network between the two).
 */
export function vouchFor(res: Response, identity: InternalIdentity): void {
  res.locals[IDENTITY] = identity;
}

/** Whether an identity is already on the response (vouched for in one process, or verified). */
export function hasIdentity(res: Response): boolean {
  return res.locals[IDENTITY] !== undefined;
}

/** The verified identity. Throws (500) when verifyIdentity did not run on this route: a wiring mistake. */
export function identityOf(res: Response): InternalIdentity {
  const value: unknown = res.locals[IDENTITY];
  if (typeof value !== 'object' || value === null) throw toAppError(new Error('identityOf() on a route without verifyIdentity()'));
  return value as InternalIdentity;
}
