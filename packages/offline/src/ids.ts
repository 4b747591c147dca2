import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** An id in the API's style: a prefix, "01" and base62 characters (msg_01…, toolu_01…, req_01…). */
export function apiId(prefix: 'msg' | 'toolu' | 'srvtoolu' | 'req'): string {
  const bytes = randomBytes(22);
  let body = '';
  for (const byte of bytes) body += ALPHABET.charAt(byte % ALPHABET.length);
  return `${prefix}_01${body}`;
}

/** Opaque base64 the API puts in encrypted_content / encrypted_index; clients only pass it back. */
export function opaque(seed: string): string {
  return Buffer.from(`fake:${seed}`).toString('base64');
}
