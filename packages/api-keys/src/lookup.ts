// Reading a key to authenticate with it. The gateway runs these on requests whose key is not in its cache, so
// they stay plain SQL on pg (the look-up by hash as a named, prepared statement) rather than go through Prisma.
import type { Queryable } from '@fin/db';
import { parseLimitOverrides } from './limits';

/** A key that works now: neither revoked nor expired, its tenant enabled. */
export interface ActiveKey {
  keyId: string;
  tenantId: string;
  tenantName: string;
  /** As stored; callers keep the scopes they know. */
  scopes: string[];
  expiresAt: Date | null;
  limitOverrides: Record<string, number>;
}

interface ActiveKeyRow {
  key_id: string;
  tenant_id: string;
  tenant_name: string;
  scopes: string[];
  expires_at: Date | null;
  rate_limit_overrides: unknown;
}

/** The conditions of a usable key; every statement here that answers "does this key work" uses them. */
const ACTIVE = 'k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now()) AND t.disabled_at IS NULL';

const SELECT_ACTIVE = `
  SELECT k.id AS key_id, k.tenant_id, t.name AS tenant_name, k.scopes, k.expires_at, t.rate_limit_overrides
    FROM api_keys k JOIN tenants t ON t.id = k.tenant_id`;

const BY_HASH = `${SELECT_ACTIVE} WHERE k.key_hash = $1 AND ${ACTIVE}`;
const BY_ID = `${SELECT_ACTIVE} WHERE k.id = $1 AND ${ACTIVE}`;
const STILL_ACTIVE = `SELECT k.id FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE k.id = ANY($1::uuid[]) AND ${ACTIVE}`;

function toActiveKey(row: ActiveKeyRow): ActiveKey {
  return {
    keyId: row.key_id,
    tenantId: row.tenant_id,
    tenantName: row.tenant_name,
    scopes: row.scopes,
    expiresAt: row.expires_at,
    limitOverrides: parseLimitOverrides(row.rate_limit_overrides),
  };
}

/** The working key with this SHA-256 (see hashApiKey), or null. One indexed look-up (api_keys.key_hash is unique). */
export async function findActiveKey(db: Queryable, hash: Buffer): Promise<ActiveKey | null> {
  const { rows } = await db.query<ActiveKeyRow>({ name: 'api-key-by-hash', text: BY_HASH, values: [hash] });
  return rows[0] ? toActiveKey(rows[0]) : null;
}

/** The working key with this id, or null: a session that holds a key's id checks it still works. */
export async function findActiveKeyById(db: Queryable, keyId: string): Promise<ActiveKey | null> {
  const { rows } = await db.query<ActiveKeyRow>(BY_ID, [keyId]);
  return rows[0] ? toActiveKey(rows[0]) : null;
}

/** Which of these key ids still work. */
export async function stillActiveKeyIds(db: Queryable, keyIds: readonly string[]): Promise<Set<string>> {
  const { rows } = await db.query<{ id: string }>(STILL_ACTIVE, [keyIds]);
  return new Set(rows.map((row) => row.id));
}

/**
 * Records that these keys were used (api_keys.last_used_at = now). Callers batch it: the column says roughly
 * when, and it is left out of the api_key_changed trigger so that writing it notifies nobody.
 */
export async function recordKeysUsed(db: Queryable, keyIds: readonly string[]): Promise<void> {
  await db.query('UPDATE api_keys SET last_used_at = now() WHERE id = ANY($1::uuid[])', [keyIds]);
}
