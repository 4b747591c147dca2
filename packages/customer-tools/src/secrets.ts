// Header values of customer tools (their API keys, bearer tokens) are secrets: encrypted at rest with
// AES-256-GCM, never returned by the API, never logged. Each ciphertext names the key that sealed it, so keys can
// rotate: a new current key seals everything written from then on, previous keys still open what they sealed
// until `reencryptToolSecrets` has moved every row to the current key and the old key can be dropped.
//
// Layout of a sealed value (bytea): version (1 byte, 1) | key id length (1 byte) | key id (ASCII) | IV (12 bytes)
// | GCM tag (16 bytes) | ciphertext. The additional authenticated data binds it to its tenant and tool, so a
// ciphertext copied onto another tool's row (by someone with write access to the table) does not decrypt.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const FORMAT_VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const KEY_ID_PATTERN = /^[A-Za-z0-9._-]{1,32}$/;

export interface EncryptionKey {
  id: string;
  key: Buffer;
}

/** The current key (seals) and every key that may still open stored values. */
export interface Keyring {
  readonly current: EncryptionKey;
  seal(plaintext: Buffer, context: SealContext): Buffer<ArrayBuffer>;
  open(sealed: Buffer, context: SealContext): Buffer;
  /** The id of the key that sealed `sealed`. */
  keyIdOf(sealed: Buffer): string;
}

export interface SealContext {
  tenantId: string;
  toolId: string;
}

/** Raised for a value that cannot be opened; the message never contains key material or plaintext. */
export class SecretsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretsError';
  }
}

/**
 * Parses `<id>:<base64 of 32 random bytes>`, e.g. `2025-11:…` (generate the key with `openssl rand -base64 32`).
 * Returns an error message instead of throwing, for the config schema; the message never echoes the key.
 */
export function parseEncryptionKey(text: string): EncryptionKey | string {
  const separator = text.indexOf(':');
  if (separator <= 0) return 'expected <key id>:<base64 of 32 bytes>, e.g. k1:$(openssl rand -base64 32)';
  const id = text.slice(0, separator).trim();
  if (!KEY_ID_PATTERN.test(id)) return 'the key id must be 1 to 32 letters, digits, ".", "_" or "-"';
  const encoded = text.slice(separator + 1).trim();
  const key = Buffer.from(encoded, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || key.length !== KEY_BYTES)
    return `key ${id}: expected exactly ${KEY_BYTES} bytes, base64-encoded`;
  return { id, key };
}

function aad({ tenantId, toolId }: SealContext): Buffer {
  return Buffer.from(`fin-customer-tool-headers-v1:${tenantId}:${toolId}`, 'utf8');
}

export function createKeyring(current: EncryptionKey, previous: readonly EncryptionKey[] = []): Keyring {
  const byId = new Map<string, Buffer>();
  for (const entry of [current, ...previous]) {
    if (byId.has(entry.id)) throw new SecretsError(`encryption key id "${entry.id}" is configured twice`);
    byId.set(entry.id, entry.key);
  }
  const keyIdOf = (sealed: Buffer): string => {
    if (sealed.length < 2 || sealed[0] !== FORMAT_VERSION) throw new SecretsError('stored header secrets have an unknown format');
    const idLength = sealed[1] ?? 0;
    return sealed.subarray(2, 2 + idLength).toString('ascii');
  };
  return {
    current,
    keyIdOf,
    seal(plaintext, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', current.key, iv);
      cipher.setAAD(aad(context));
      const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      const id = Buffer.from(current.id, 'ascii');
      return Buffer.concat([Buffer.from([FORMAT_VERSION, id.length]), id, iv, cipher.getAuthTag(), ciphertext]);
    },
    open(sealed, context) {
      const id = keyIdOf(sealed);
      const key = byId.get(id);
      if (key === undefined) throw new SecretsError(`stored header secrets were sealed with key "${id}", which is not configured`);
      const start = 2 + id.length;
      const iv = sealed.subarray(start, start + IV_BYTES);
      const tag = sealed.subarray(start + IV_BYTES, start + IV_BYTES + TAG_BYTES);
      const ciphertext = sealed.subarray(start + IV_BYTES + TAG_BYTES);
      // GCM accepts tags as short as 4 bytes unless told the length: a value cut short inside its tag would be
      // checked against a truncated tag, which can be forged. Only full 16-byte tags are ever written; the check
      // names the problem, and authTagLength holds even if the parsing above changes.
      if (tag.length !== TAG_BYTES) throw new SecretsError(`stored header secrets sealed with key "${id}" are truncated`);
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
        decipher.setAAD(aad(context));
        decipher.setAuthTag(tag);
        return Buffer.concat([decipher.update(ciphertext), decipher.final()]);
      } catch {
        throw new SecretsError(`stored header secrets failed authentication under key "${id}"`);
      }
    },
  };
}

/** Seals a tool's headers (name → value); null when there are none, so no ciphertext is stored for nothing. */
export function sealHeaders(keyring: Keyring, headers: Readonly<Record<string, string>>, context: SealContext): Buffer<ArrayBuffer> | null {
  if (Object.keys(headers).length === 0) return null;
  return keyring.seal(Buffer.from(JSON.stringify(headers), 'utf8'), context);
}

/** A stored column as the keyring reads it: Prisma returns bytes as a plain Uint8Array (viewed here, not copied). */
export function sealedBytes(bytes: Uint8Array | null): Buffer | null {
  return bytes === null ? null : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function openHeaders(keyring: Keyring, sealed: Buffer | null, context: SealContext): Record<string, string> {
  if (sealed === null) return {};
  const value: unknown = JSON.parse(keyring.open(sealed, context).toString('utf8'));
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new SecretsError('stored header secrets are not an object');
  return Object.fromEntries(Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}
