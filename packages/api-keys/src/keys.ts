// API keys: the one place they are created, listed and revoked, for the admin CLI (operators) and the portal
// (customers' own keys). Revocation, expiry and scope changes reach the gateways' key caches through the
// database's api_key_changed triggers, which NOTIFY on commit whichever client wrote the row.
import { API_SCOPES, type ApiScope } from '@fin/contracts';
import { prismaFor, type Pool, type Prisma } from '@fin/db';
import { API_KEY_PREFIX, generateApiKey, hashApiKey, isWellFormedApiKey } from './api-key';
import { KeyStoreError } from './errors';
import { findTenant, tenantWhere, usableKeys, type Db, type TenantRef } from './tenants';

/**
 * Keys a tenant may hold that can still be used (neither revoked nor expired), when its keys are made by the
 * customer (`capped`). An operator may go beyond it.
 */
export const MAX_ACTIVE_KEYS_PER_TENANT = 25;

export type KeyStatus = 'active' | 'revoked' | 'expired' | 'tenant_disabled';

/** What may be shown about a key: never its hash, never the key. */
export interface KeyInfo {
  id: string;
  tenant: string;
  name: string | null;
  displayPrefix: string;
  scopes: ApiScope[];
  status: KeyStatus;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
}

export interface CreateKeyInput {
  tenant: TenantRef;
  /** Default: all of them. */
  scopes?: readonly ApiScope[];
  name?: string;
  expiresAt?: Date;
  /** Refuse (`key_limit`) when the tenant already holds MAX_ACTIVE_KEYS_PER_TENANT usable keys. */
  capped?: boolean;
}

export interface CreatedKey {
  /** The plaintext key. It exists only in this return value: show it once, do not store or log it. */
  apiKey: string;
  key: KeyInfo;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const KEY_FIELDS = {
  id: true,
  name: true,
  displayPrefix: true,
  scopes: true,
  createdAt: true,
  expiresAt: true,
  revokedAt: true,
  lastUsedAt: true,
  tenant: { select: { name: true, disabledAt: true } },
} satisfies Prisma.ApiKeySelect;

type KeyRow = Prisma.ApiKeyGetPayload<{ select: typeof KEY_FIELDS }>;

function statusOf(row: KeyRow, now: Date): KeyStatus {
  if (row.revokedAt !== null) return 'revoked';
  if (row.expiresAt !== null && row.expiresAt <= now) return 'expired';
  if (row.tenant.disabledAt !== null) return 'tenant_disabled';
  return 'active';
}

function toKey(row: KeyRow, now = new Date()): KeyInfo {
  return {
    id: row.id,
    tenant: row.tenant.name,
    name: row.name,
    displayPrefix: row.displayPrefix,
    scopes: row.scopes as ApiScope[],
    status: statusOf(row, now),
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    revokedAt: row.revokedAt,
    lastUsedAt: row.lastUsedAt,
  };
}

/** Parses a comma-separated scope list, refusing unknown or no scopes. */
export function parseScopes(list: string): ApiScope[] {
  const items = [
    ...new Set(
      list
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== ''),
    ),
  ];
  if (items.length === 0) throw new KeyStoreError('invalid', `Name at least one scope: ${API_SCOPES.join(', ')}.`);
  const unknown = items.filter((item) => !(API_SCOPES as readonly string[]).includes(item));
  if (unknown.length > 0) {
    throw new KeyStoreError(
      'invalid',
      `Unknown scope ${unknown.map((s) => `"${s}"`).join(', ')}; the scopes are ${API_SCOPES.join(', ')}.`,
    );
  }
  return items as ApiScope[];
}

/** A new key for an enabled tenant; only its SHA-256 is stored. */
export async function createKey(
  pool: Pool,
  { tenant, scopes = API_SCOPES, name, expiresAt, capped = false }: CreateKeyInput,
): Promise<CreatedKey> {
  const chosen = parseScopes(scopes.join(','));
  if (expiresAt && expiresAt.getTime() <= Date.now()) throw new KeyStoreError('invalid', 'The expiry must be in the future.');
  if (name !== undefined && (name.length === 0 || name.length > 200)) throw new KeyStoreError('invalid', 'A key name is 1–200 characters.');
  const generated = generateApiKey();
  return prismaFor(pool).$transaction(async (tx) => {
    const owner = await findTenant(tx, tenant);
    if (owner.disabledAt) throw new KeyStoreError('conflict', `Tenant "${owner.name}" is disabled; enable it before creating keys.`);
    if (capped) {
      // Count and insert under one per-tenant lock: without it, concurrent requests all see room and all insert.
      // The lock is SQL because Prisma has no advisory locks; it is held until this transaction ends.
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('api_keys:' || ${owner.id}::text))`;
      const active = await tx.apiKey.count({ where: { tenantId: owner.id, ...usableKeys(new Date()) } });
      if (active >= MAX_ACTIVE_KEYS_PER_TENANT) {
        throw new KeyStoreError('key_limit', `this account already has ${MAX_ACTIVE_KEYS_PER_TENANT} active keys; revoke one first`);
      }
    }
    const row = await tx.apiKey.create({
      data: {
        tenantId: owner.id,
        name: name ?? null,
        displayPrefix: generated.displayPrefix,
        // Prisma's Bytes is a Uint8Array over an ArrayBuffer, which a Buffer's type does not promise: copy it.
        keyHash: new Uint8Array(generated.hash),
        scopes: chosen,
        expiresAt: expiresAt ?? null,
      },
      select: KEY_FIELDS,
    });
    return { apiKey: generated.key, key: toKey(row) };
  });
}

/** Every key, or a tenant's, in the order they were made (never the hash or the key). */
export async function listKeys(pool: Pool, { tenant }: { tenant?: TenantRef } = {}): Promise<KeyInfo[]> {
  const prisma = prismaFor(pool);
  if (tenant !== undefined) await findTenant(prisma, tenant);
  const rows = await prisma.apiKey.findMany({
    where: tenant === undefined ? {} : { tenant: tenantWhere(tenant) },
    select: KEY_FIELDS,
    orderBy: [{ tenant: { name: 'asc' } }, { createdAt: 'asc' }, { id: 'asc' }],
  });
  const now = new Date();
  return rows.map((row) => toKey(row, now));
}

async function keyById(db: Db, id: string, where: Prisma.ApiKeyWhereInput): Promise<KeyInfo> {
  const row = await db.apiKey.findFirst({ where: { ...where, id }, select: KEY_FIELDS });
  if (row === null) throw new KeyStoreError('not_found', `No API key with id ${id}.`);
  return toKey(row);
}

/** The id a revocation names: the key's id, its display prefix (when that matches one key) or the key itself. */
async function resolveKeyId(db: Db, reference: string, where: Prisma.ApiKeyWhereInput): Promise<string> {
  if (UUID.test(reference)) return reference.toLowerCase();
  if (isWellFormedApiKey(reference)) {
    const row = await db.apiKey.findFirst({ where: { ...where, keyHash: new Uint8Array(hashApiKey(reference)) }, select: { id: true } });
    if (row === null) throw new KeyStoreError('not_found', 'That API key does not exist.');
    return row.id;
  }
  if (reference.startsWith(API_KEY_PREFIX)) {
    const rows = await db.apiKey.findMany({ where: { ...where, displayPrefix: reference }, select: { id: true } });
    if (rows.length === 0) throw new KeyStoreError('not_found', `No API key with the prefix ${reference}.`);
    if (rows.length > 1)
      throw new KeyStoreError('conflict', `${rows.length} keys have the prefix ${reference}; revoke by id (see keys list).`);
    return (rows[0] as { id: string }).id;
  }
  throw new KeyStoreError('invalid', `"${reference}" is neither a key id (UUID) nor a key prefix (${API_KEY_PREFIX}…).`);
}

/**
 * Revokes a key given its id, its display prefix (when that matches one key) or the key itself (for a leaked
 * key reported by someone who only has the key); with `tenant`, only a key of that tenant (`not_found` for
 * anyone else's). Revoking a revoked key changes nothing and is not an error: it keeps its first revocation time.
 */
export async function revokeKey(pool: Pool, reference: string, { tenant }: { tenant?: TenantRef } = {}): Promise<KeyInfo> {
  const prisma = prismaFor(pool);
  const owned: Prisma.ApiKeyWhereInput = tenant === undefined ? {} : { tenant: tenantWhere(tenant) };
  const id = await resolveKeyId(prisma, reference, owned);
  await prisma.apiKey.updateMany({ where: { ...owned, id, revokedAt: null }, data: { revokedAt: new Date() } });
  return keyById(prisma, id, owned);
}
