// Verifying a webhook delivery, as Standard Webhooks describes: `webhook-signature` holds one or more
// `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` (two while a rotated secret is still
// honoured), keyed with the base64-decoded part of the endpoint's `whsec_` secret. A delivery is accepted when one
// of its signatures matches (compared in constant time) and its timestamp is within the tolerance of now, which
// stops an old delivery from being replayed. WebCrypto (global in Node 20+, Deno, Bun and browsers) computes the
// HMAC, so the SDK keeps no runtime dependency.
import { FinancialIntelligenceError } from './errors';
import type { WebhookEvent } from './types';

/** The delivery is not authentic (or too old): answer it with a 4xx and do not act on it. */
export class WebhookVerificationError extends FinancialIntelligenceError {
  override readonly name: string = 'WebhookVerificationError';
}

/** Request headers as fetch (Headers) or Node's http module (an object of strings or string arrays) give them. */
export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyWebhookOptions {
  /** How far the delivery's timestamp may be from now, in seconds; default 300. */
  toleranceSeconds?: number;
  /** Now, for tests. */
  now?: Date;
}

const SECRET_PREFIX = 'whsec_';

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
  const key = Object.keys(record).find((candidate) => candidate.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return typeof value === 'string' ? value : value?.[0];
}

function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let index = 0; index < a.length; index++) difference |= (a[index] ?? 0) ^ (b[index] ?? 0);
  return difference === 0;
}

/** The part of WebCrypto's SubtleCrypto used here (typed structurally: the DOM and Node declare it differently). */
interface HmacSubtle {
  importKey(
    format: 'raw',
    keyData: Uint8Array,
    algorithm: { name: 'HMAC'; hash: 'SHA-256' },
    extractable: boolean,
    usages: ['sign'],
  ): Promise<unknown>;
  sign(algorithm: 'HMAC', key: unknown, data: Uint8Array): Promise<ArrayBuffer>;
}

async function hmac(secret: string, content: Uint8Array): Promise<Uint8Array> {
  if (!secret.startsWith(SECRET_PREFIX)) throw new TypeError('A webhook signing secret starts with whsec_.');
  const subtle = (globalThis as { crypto?: { subtle?: HmacSubtle } }).crypto?.subtle;
  if (subtle === undefined) throw new TypeError('verifyWebhook needs WebCrypto (globalThis.crypto.subtle).');
  const key = await subtle.importKey('raw', fromBase64(secret.slice(SECRET_PREFIX.length)), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
  ]);
  return new Uint8Array(await subtle.sign('HMAC', key, content));
}

/**
 * Checks a delivery's signature and age and returns its parsed body. `payload` is the raw body exactly as received
 * (parse it only after verifying: re-serialised JSON would not match the signature). `secret` is the endpoint's
 * signing secret, or several (while you roll a secret over). Throws WebhookVerificationError when the delivery is
 * not authentic or outside the tolerance.
 */
export async function verifyWebhook(
  payload: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string | readonly string[],
  options: VerifyWebhookOptions = {},
): Promise<WebhookEvent> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (id === undefined || timestamp === undefined || signatures === undefined) {
    throw new WebhookVerificationError('Missing webhook-id, webhook-timestamp or webhook-signature header.');
  }
  const seconds = Number(timestamp);
  const now = (options.now ?? new Date()).getTime() / 1000;
  if (!/^\d+$/.test(timestamp) || Math.abs(now - seconds) > (options.toleranceSeconds ?? 300)) {
    throw new WebhookVerificationError('The webhook-timestamp is not within the tolerance of the current time.');
  }
  const body = typeof payload === 'string' ? new TextEncoder().encode(payload) : payload;
  const prefix = new TextEncoder().encode(`${id}.${timestamp}.`);
  const content = new Uint8Array(prefix.length + body.length);
  content.set(prefix);
  content.set(body, prefix.length);
  const offered = signatures
    .split(' ')
    .filter((signature) => signature.startsWith('v1,'))
    .map((signature) => {
      try {
        return fromBase64(signature.slice(3));
      } catch {
        return new Uint8Array();
      }
    });
  for (const candidate of typeof secret === 'string' ? [secret] : secret) {
    const expected = await hmac(candidate, content);
    if (offered.some((signature) => equalBytes(signature, expected))) {
      return JSON.parse(new TextDecoder().decode(body)) as WebhookEvent;
    }
  }
  throw new WebhookVerificationError('No webhook-signature matches the signing secret.');
}
