// Standard Webhooks signing (standardwebhooks.com, the scheme Svix, Clerk and others use): the receiver gets
// `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature`, a space-separated list of
// `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, keyed with the base64-decoded part of a `whsec_` secret.
// Two signatures while a rotated secret is still honoured, so a receiver verifying either one keeps working.
import { createHmac, randomBytes } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';
/** 32 random bytes: the HMAC-SHA256 block's worth of key, within Standard Webhooks' 24-64. */
const SECRET_BYTES = 32;

/** A new signing secret: `whsec_` and the base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

function keyOf(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('a signing secret starts with whsec_');
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

/** `v1,<signature>` of one message under one secret. */
function sign(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}

/** The three headers of one attempt, signed with every secret given (the current one first). */
export function signedHeaders(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((secret) => sign(secret, id, timestampSeconds, body)).join(' '),
  };
}
