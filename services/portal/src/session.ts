// Portal sessions: a customer signs in with an API key, and gets a signed cookie naming that key. The cookie holds
// no secret (the key id, the tenant id, a random nonce and an expiry) and is signed with HMAC-SHA256 under a key
// derived from PORTAL_SESSION_SECRET, the portal's own secret: the secret every service holds to verify the
// gateway's signatures (INTERNAL_SIGNING_SECRET) cannot make a session. Every request re-checks in the database
// that the key is still active, so revoking the key (or disabling the tenant) ends its sessions at once.
//
// CSRF: the cookie is SameSite=Strict, and every form that changes something carries a synchronizer token
// (HMAC of the session's nonce), checked in constant time. The sign-in form, before any session exists, uses a
// double-submit token (a random cookie echoed in the form). Requests whose Origin or Sec-Fetch-Site says they
// come from another site are refused before the token is even looked at.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';

export const SESSION_COOKIE = 'fin_portal_session';
const LOGIN_CSRF_COOKIE = 'fin_portal_login';
const COOKIE_PATH = '/portal';

export interface Session {
  keyId: string;
  tenantId: string;
  nonce: string;
  expiresAt: number;
}

export interface SessionOptions {
  /** PORTAL_SESSION_SECRET; the session key is derived from it, so it never signs anything else. */
  secret: string;
  /** Secure cookies (HTTPS only). Off only for local plain-http use. */
  secureCookies: boolean;
  ttlMs: number;
  now?: () => number;
}

const b64 = (buffer: Buffer) => buffer.toString('base64url');

function equal(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Reads one cookie from the Cookie header (no parser dependency for two cookies). */
function cookieOf(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const index = part.indexOf('=');
    if (index > 0 && part.slice(0, index).trim() === name) return part.slice(index + 1).trim();
  }
  return undefined;
}

export interface Sessions {
  issue(res: Response, keyId: string, tenantId: string): Session;
  /** The verified, unexpired session of the request, or null. The caller still checks the key is active. */
  read(req: Request): Session | null;
  clear(res: Response): void;
  csrfToken(session: Session): string;
  checkCsrf(session: Session, token: unknown): boolean;
  /** Sets (if absent) and returns the sign-in form's double-submit token. */
  loginToken(req: Request, res: Response): string;
  checkLoginToken(req: Request, token: unknown): boolean;
}

export function createSessions({ secret, secureCookies, ttlMs, now = Date.now }: SessionOptions): Sessions {
  // v2: sessions signed before the portal had a secret of its own (v1, under INTERNAL_SIGNING_SECRET) are void.
  const key = createHmac('sha256', secret).update('fin-portal-session-v2').digest();
  const sign = (text: string) => b64(createHmac('sha256', key).update(text).digest());
  const cookieOptions = { httpOnly: true, secure: secureCookies, sameSite: 'strict' as const, path: COOKIE_PATH };

  return {
    issue(res, keyId, tenantId) {
      const session: Session = { keyId, tenantId, nonce: b64(randomBytes(18)), expiresAt: now() + ttlMs };
      const payload = b64(Buffer.from(JSON.stringify([session.keyId, session.tenantId, session.nonce, session.expiresAt])));
      res.cookie(SESSION_COOKIE, `${payload}.${sign(`session:${payload}`)}`, { ...cookieOptions, maxAge: ttlMs });
      res.clearCookie(LOGIN_CSRF_COOKIE, cookieOptions);
      return session;
    },

    read(req) {
      const value = cookieOf(req, SESSION_COOKIE);
      if (value === undefined || value.length > 1_024) return null;
      const [payload, signature, extra] = value.split('.');
      if (payload === undefined || signature === undefined || extra !== undefined) return null;
      if (!equal(signature, sign(`session:${payload}`))) return null;
      try {
        const parsed: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
        if (!Array.isArray(parsed) || parsed.length !== 4) return null;
        const [keyId, tenantId, nonce, expiresAt] = parsed as unknown[];
        if (typeof keyId !== 'string' || typeof tenantId !== 'string' || typeof nonce !== 'string' || typeof expiresAt !== 'number')
          return null;
        if (expiresAt <= now()) return null;
        return { keyId, tenantId, nonce, expiresAt };
      } catch {
        return null;
      }
    },

    clear(res) {
      res.clearCookie(SESSION_COOKIE, cookieOptions);
    },

    csrfToken: (session) => sign(`csrf:${session.nonce}`),

    checkCsrf: (session, token) => typeof token === 'string' && equal(token, sign(`csrf:${session.nonce}`)),

    loginToken(req, res) {
      const existing = cookieOf(req, LOGIN_CSRF_COOKIE);
      if (existing !== undefined && /^[\w-]{24,64}$/.test(existing)) return existing;
      const token = b64(randomBytes(24));
      res.cookie(LOGIN_CSRF_COOKIE, token, { ...cookieOptions, maxAge: 3_600_000 });
      return token;
    },

    checkLoginToken(req, token) {
      const cookie = cookieOf(req, LOGIN_CSRF_COOKIE);
      return cookie !== undefined && typeof token === 'string' && equal(cookie, token);
    },
  };
}

/**
 * A state-changing request from another site: refused before any token check. Browsers send Sec-Fetch-Site and
 * Origin on POSTs; when present they must say same-origin (the gateway passes the client's Host on as
 * X-Forwarded-Host).
 */
export function isCrossSite(req: Request): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') return true;
  const origin = req.headers.origin;
  if (typeof origin !== 'string' || origin === 'null') return origin === 'null';
  const host = req.headers['x-forwarded-host'] ?? req.headers.host;
  try {
    return new URL(origin).host !== host;
  } catch {
    return true;
  }
}
