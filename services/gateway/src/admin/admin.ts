// Operator functions for tenants, API keys and limit overrides, used by the admin CLI (and by tests). Every
// change that matters to a running gateway (revocation, scopes, disabling, overrides) is picked up by the
// replicas' key caches through the api_key_changed triggers, within moments.
import type { Queryable } from '@fin/db';
import { SCOPES, type Scope } from '../auth/types';
import { API_KEY_PREFIX, generateApiKey, hashApiKey, isWellFormedApiKey } from '@fin/api-keys';
import {
  DEFAULT_CHAT_CONCURRENCY,
  DEFAULT_LIMITS,
  OVERRIDABLE_LIMITS,
  parseLimitOverrides,
  type OverridableLimit,
} from '../rate-limit/defaults';

/** A refused operation, with a message meant for the operator (the CLI prints it and exits 1). */
export class AdminError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AdminError';
  }
}

export interface TenantInfo {
  id: string;
  name: string;
  createdAt: Date;
  disabledAt: Date | null;
  limitOverrides: Record<string, number>;
  activeKeys: number;
}

export type KeyStatus = 'active' | 'revoked' | 'expired' | 'tenant_disabled';

/** What may be shown about a key: never its hash, never the key. */
export interface KeyInfo {
  id: string;
  tenant: string;
  name: string | null;
  displayPrefix: string;
  scopes: Scope[];
  status: KeyStatus;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
}

export interface CreateKeyInput {
  tenant: string;
  /** Default: all of them. */
  scopes?: readonly Scope[];
  name?: string;
  expiresAt?: Date;
}

export interface CreatedKey {
  /** The plaintext key. It exists only in this return value: show it once, do not store or log it. */
  apiKey: string;
  key: KeyInfo;
}

// Letters, digits and . _ - : safe in a shell argument, a log line and a header.
const TENANT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_PER_MINUTE = 1_000_000;
/** An account's concurrent chat requests at most (all of its keys together). */
const MAX_CHAT_STREAMS = 10_000;

interface TenantRow {
  id: string;
  name: string;
  created_at: Date;
  disabled_at: Date | null;
  rate_limit_overrides: unknown;
  active_keys: string;
}

interface KeyRow {
  id: string;
  tenant: string;
  name: string | null;
  display_prefix: string;
  scopes: string[];
  status: KeyStatus;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

const TENANT_COLUMNS = `t.id, t.name, t.created_at, t.disabled_at, t.rate_limit_overrides,
  (SELECT count(*) FROM api_keys k WHERE k.tenant_id = t.id AND k.revoked_at IS NULL
      AND (k.expires_at IS NULL OR k.expires_at > now())) AS active_keys`;

const KEY_SELECT = `
  SELECT k.id, t.name AS tenant, k.name, k.display_prefix, k.scopes, k.created_at, k.expires_at, k.revoked_at,
         k.last_used_at,
         CASE WHEN k.revoked_at IS NOT NULL THEN 'revoked'
              WHEN k.expires_at IS NOT NULL AND k.expires_at <= now() THEN 'expired'
              WHEN t.disabled_at IS NOT NULL THEN 'tenant_disabled'
              ELSE 'active' END AS status
    FROM api_keys k JOIN tenants t ON t.id = k.tenant_id`;

function toTenant(row: TenantRow): TenantInfo {
  return {
    id: row.id,
    name: row.name,
    createdAt: row.created_at,
    disabledAt: row.disabled_at,
    limitOverrides: parseLimitOverrides(row.rate_limit_overrides),
    activeKeys: Number(row.active_keys),
  };
}

function toKey(row: KeyRow): KeyInfo {
  return {
    id: row.id,
    tenant: row.tenant,
    name: row.name,
    displayPrefix: row.display_prefix,
    scopes: row.scopes as Scope[],
    status: row.status,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    lastUsedAt: row.last_used_at,
  };
}

function checkTenantName(name: string): void {
  if (!TENANT_NAME.test(name)) {
    throw new AdminError(`"${name}" is not a valid tenant name: use 1–100 letters, digits, ".", "_" or "-", starting with a letter or digit.`);
  }
}

async function tenantRow(db: Queryable, name: string): Promise<TenantRow> {
  const { rows } = await db.query<TenantRow>(`SELECT ${TENANT_COLUMNS} FROM tenants t WHERE t.name = $1`, [name]);
  if (!rows[0]) throw new AdminError(`No tenant named "${name}".`);
  return rows[0];
}

export async function createTenant(db: Queryable, name: string): Promise<TenantInfo> {
  checkTenantName(name);
  try {
    const { rows } = await db.query<TenantRow>(
      `WITH t AS (INSERT INTO tenants (name) VALUES ($1) RETURNING *)
       SELECT t.id, t.name, t.created_at, t.disabled_at, t.rate_limit_overrides, 0 AS active_keys FROM t`,
      [name],
    );
    return toTenant(rows[0] as TenantRow);
  } catch (error) {
    if ((error as { code?: string }).code === '23505') throw new AdminError(`A tenant named "${name}" already exists.`);
    throw error;
  }
}

export async function listTenants(db: Queryable): Promise<TenantInfo[]> {
  const { rows } = await db.query<TenantRow>(`SELECT ${TENANT_COLUMNS} FROM tenants t ORDER BY t.name`);
  return rows.map(toTenant);
}

async function setDisabled(db: Queryable, name: string, disabled: boolean): Promise<TenantInfo> {
  const { rowCount } = await db.query(
    'UPDATE tenants SET disabled_at = CASE WHEN $2::boolean THEN coalesce(disabled_at, now()) END WHERE name = $1',
    [name, disabled],
  );
  if (rowCount === 0) throw new AdminError(`No tenant named "${name}".`);
  return toTenant(await tenantRow(db, name));
}

/** Every key of the tenant stops working at once (401 on every replica within moments); keys stay listed. */
export function disableTenant(db: Queryable, name: string): Promise<TenantInfo> {
  return setDisabled(db, name, true);
}

export function enableTenant(db: Queryable, name: string): Promise<TenantInfo> {
  return setDisabled(db, name, false);
}

/** Parses a comma-separated scope list, refusing unknown or no scopes. */
export function parseScopes(list: string): Scope[] {
  const items = [...new Set(list.split(',').map((item) => item.trim()).filter((item) => item !== ''))];
  if (items.length === 0) throw new AdminError(`Name at least one scope: ${SCOPES.join(', ')}.`);
  const unknown = items.filter((item) => !(SCOPES as readonly string[]).includes(item));
  if (unknown.length > 0) throw new AdminError(`Unknown scope ${unknown.map((s) => `"${s}"`).join(', ')}; the scopes are ${SCOPES.join(', ')}.`);
  return items as Scope[];
}

export async function createKey(db: Queryable, { tenant, scopes = SCOPES, name, expiresAt }: CreateKeyInput): Promise<CreatedKey> {
  const chosen = parseScopes(scopes.join(','));
  if (expiresAt && expiresAt.getTime() <= Date.now()) throw new AdminError('The expiry must be in the future.');
  if (name !== undefined && (name.length === 0 || name.length > 200)) throw new AdminError('A key name is 1–200 characters.');
  const owner = await tenantRow(db, tenant);
  if (owner.disabled_at) throw new AdminError(`Tenant "${tenant}" is disabled; enable it before creating keys.`);
  const generated = generateApiKey();
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO api_keys (tenant_id, name, display_prefix, key_hash, scopes, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
    [owner.id, name ?? null, generated.displayPrefix, generated.hash, chosen, expiresAt ?? null],
  );
  const key = await keyById(db, (rows[0] as { id: string }).id);
  return { apiKey: generated.key, key };
}

async function keyById(db: Queryable, id: string): Promise<KeyInfo> {
  const { rows } = await db.query<KeyRow>(`${KEY_SELECT} WHERE k.id = $1`, [id]);
  if (!rows[0]) throw new AdminError(`No API key with id ${id}.`);
  return toKey(rows[0]);
}

export async function listKeys(db: Queryable, { tenant }: { tenant?: string } = {}): Promise<KeyInfo[]> {
  if (tenant !== undefined) await tenantRow(db, tenant);
  const { rows } = await db.query<KeyRow>(
    `${KEY_SELECT} WHERE ($1::text IS NULL OR t.name = $1) ORDER BY t.name, k.created_at, k.id`,
    [tenant ?? null],
  );
  return rows.map(toKey);
}

/**
 * Revokes a key given its id, its display prefix (when that matches one key) or the key itself (for a leaked
 * key reported by someone who only has the key). Revoking a revoked key changes nothing and is not an error.
 */
export async function revokeKey(db: Queryable, reference: string): Promise<KeyInfo> {
  let id: string;
  if (UUID.test(reference)) {
    id = reference.toLowerCase();
  } else if (isWellFormedApiKey(reference)) {
    const { rows } = await db.query<{ id: string }>('SELECT id FROM api_keys WHERE key_hash = $1', [hashApiKey(reference)]);
    if (!rows[0]) throw new AdminError('That API key does not exist.');
    id = rows[0].id;
  } else if (reference.startsWith(API_KEY_PREFIX)) {
    const { rows } = await db.query<{ id: string }>('SELECT id FROM api_keys WHERE display_prefix = $1', [reference]);
    if (rows.length === 0) throw new AdminError(`No API key with the prefix ${reference}.`);
    if (rows.length > 1) throw new AdminError(`${rows.length} keys have the prefix ${reference}; revoke by id (see keys list).`);
    id = (rows[0] as { id: string }).id;
  } else {
    throw new AdminError(`"${reference}" is neither a key id (UUID) nor a key prefix (${API_KEY_PREFIX}…).`);
  }
  const { rowCount } = await db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL', [id]);
  if (rowCount === 0) await keyById(db, id); // throws when it does not exist; otherwise it was already revoked
  return keyById(db, id);
}

function checkLimit(product: string): asserts product is OverridableLimit {
  if (!(OVERRIDABLE_LIMITS as readonly string[]).includes(product)) {
    throw new AdminError(`Unknown product "${product}"; limits exist for ${OVERRIDABLE_LIMITS.join(', ')}.`);
  }
}

/**
 * Sets (or with null, removes) a tenant's limit for one product: requests per minute for the account (all of its
 * keys together), or for `chat` concurrent chat requests for the account. Gateways apply it within moments (the change evicts the tenant's cached keys).
 */
export async function setLimitOverride(
  db: Queryable,
  tenant: string,
  product: string,
  value: number | null,
): Promise<Record<string, number>> {
  checkLimit(product);
  const max = product === 'chat' ? MAX_CHAT_STREAMS : MAX_PER_MINUTE;
  if (value !== null && (!Number.isInteger(value) || value < 1 || value > max)) {
    throw new AdminError(`The limit must be a whole number from 1 to ${max.toLocaleString('en')}.`);
  }
  const { rows } = await db.query<{ rate_limit_overrides: unknown }>(
    value === null
      ? 'UPDATE tenants SET rate_limit_overrides = rate_limit_overrides - $2::text WHERE name = $1 RETURNING rate_limit_overrides'
      : 'UPDATE tenants SET rate_limit_overrides = rate_limit_overrides || jsonb_build_object($2::text, $3::int) WHERE name = $1 RETURNING rate_limit_overrides',
    value === null ? [tenant, product] : [tenant, product, value],
  );
  if (!rows[0]) throw new AdminError(`No tenant named "${tenant}".`);
  return parseLimitOverrides(rows[0].rate_limit_overrides);
}

/** Removes all of a tenant's overrides: the defaults apply again. */
export async function clearLimitOverrides(db: Queryable, tenant: string): Promise<void> {
  const { rowCount } = await db.query("UPDATE tenants SET rate_limit_overrides = '{}'::jsonb WHERE name = $1", [tenant]);
  if (rowCount === 0) throw new AdminError(`No tenant named "${tenant}".`);
}

export interface LimitsReport {
  /** Built-in defaults: requests per account per minute, and `chat` concurrent chat requests per account. */
  defaults: Record<OverridableLimit, number>;
  /** Tenants with at least one override (or the one asked for). */
  tenants: { name: string; overrides: Record<string, number> }[];
}

export async function showLimits(db: Queryable, tenant?: string): Promise<LimitsReport> {
  const defaults = { ...DEFAULT_LIMITS, chat: DEFAULT_CHAT_CONCURRENCY };
  if (tenant !== undefined) {
    const row = await tenantRow(db, tenant);
    return { defaults, tenants: [{ name: row.name, overrides: parseLimitOverrides(row.rate_limit_overrides) }] };
  }
  const { rows } = await db.query<{ name: string; rate_limit_overrides: unknown }>(
    "SELECT name, rate_limit_overrides FROM tenants WHERE rate_limit_overrides <> '{}'::jsonb ORDER BY name",
  );
  return { defaults, tenants: rows.map((row) => ({ name: row.name, overrides: parseLimitOverrides(row.rate_limit_overrides) })) };
}
