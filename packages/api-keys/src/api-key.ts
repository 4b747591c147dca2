// The API key format: `fin_` + 36 random base62 characters + a 6-character base62 CRC32 of everything before
// it (the scheme GitHub uses for its tokens), 46 characters in all, e.g.
//
//   fin_u8VPBbuxSgEKfWLsxO3zxWPsqcLEN4DNmK6C3Pw0XP   (display prefix: fin_u8VPBb)
//
// - The prefix makes a leaked key recognisable (secret scanners, log review) and tells support what it is.
// - 36 base62 characters carry 214 bits from crypto.randomBytes; the 6 shown in `display_prefix` leave 178
//   secret bits, well beyond guessing.
// - The checksum lets the gateway reject a mistyped, truncated or made-up key without a database lookup.
//   CRC32 detects every single-character change (any burst of up to 32 bits). It is not a secret and does not
//   authenticate anything: the SHA-256 lookup does.
// - Only SHA-256(key) is stored. A salt or a slow hash adds nothing for a random 214-bit secret; they exist
//   for low-entropy passwords.
import { hash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

export const API_KEY_PREFIX = 'fin_';
const BODY_LENGTH = 36;
const CHECKSUM_LENGTH = 6;
/** Characters of the body shown in listings (after the prefix). */
const DISPLAY_CHARS = 6;
export const API_KEY_LENGTH = API_KEY_PREFIX.length + BODY_LENGTH + CHECKSUM_LENGTH;

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SHAPE = new RegExp(`^${API_KEY_PREFIX}[0-9A-Za-z]{${BODY_LENGTH + CHECKSUM_LENGTH}}$`);
// 248 = 4 × 62: bytes at or above it are discarded so every character is equally likely.
const UNBIASED_BELOW = 248;

/** `length` characters of base62 from the CSPRNG, without modulo bias. */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte >= UNBIASED_BELOW) continue;
      out += ALPHABET.charAt(byte % 62);
      if (out.length === length) break;
    }
  }
  return out;
}

/** A 32-bit number as exactly 6 base62 digits (62^6 > 2^32). */
function base62Fixed(value: number, width: number): string {
  let out = '';
  let rest = value;
  for (let index = 0; index < width; index++) {
    out = ALPHABET.charAt(rest % 62) + out;
    rest = Math.floor(rest / 62);
  }
  return out;
}

function checksumOf(keyWithoutChecksum: string): string {
  return base62Fixed(crc32(keyWithoutChecksum), CHECKSUM_LENGTH);
}

/**
 * True when `candidate` has the prefix, length, alphabet and checksum of a key this service issues. Pure and
 * constant-cost: the authenticator calls it before touching the cache or the database.
 */
export function isWellFormedApiKey(candidate: string): boolean {
  if (candidate.length !== API_KEY_LENGTH || !SHAPE.test(candidate)) return false;
  const head = candidate.slice(0, -CHECKSUM_LENGTH);
  return checksumOf(head) === candidate.slice(-CHECKSUM_LENGTH);
}

/** SHA-256 of the whole key: the only form in which a key is stored (api_keys.key_hash). */
export function hashApiKey(key: string): Buffer {
  return hash('sha256', key, 'buffer');
}

/** The non-secret start of a key (prefix + 6 characters), shown in listings to tell keys apart. */
export function displayPrefixOf(key: string): string {
  return key.slice(0, API_KEY_PREFIX.length + DISPLAY_CHARS);
}

export interface GeneratedApiKey {
  /** The plaintext key: handed to the operator once, never stored or logged. */
  key: string;
  hash: Buffer;
  displayPrefix: string;
}

export function generateApiKey(): GeneratedApiKey {
  const head = API_KEY_PREFIX + randomBase62(BODY_LENGTH);
  const key = head + checksumOf(head);
  return { key, hash: hashApiKey(key), displayPrefix: displayPrefixOf(key) };
}
