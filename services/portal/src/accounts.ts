// Who is signed in to the portal, and the tenant's API keys. Keys are made with @fin/api-keys (the same format,
// checksum and SHA-256 hashing the gateway verifies); only the hash is stored and the key is shown once. A portal
// user may only give a new key scopes their own key has, so a key limited to `tools` cannot mint a key for more.
// Keys minted here expire (PORTAL_KEY_TTL_DAYS), and a tenant holds at most 25 usable ones.
import { API_SCOPES, type ApiScope } from '@fin/contracts';
import { generateApiKey, hashApiKey, isWellFormedApiKey } from '@fin/api-keys';
import { withTransaction, type Pool, type Queryable } from '@fin/db';

/** The scope a key needs to sign in to the portal: it manages customer tools (and keys) of its tenant. */
export const PORTAL_SCOPE: ApiScope = 'tools';
/** Keys a tenant may hold that can still be used (neither revoked nor expired). */
export const MAX_ACTIVE_KEYS_PER_TENANT = 25;
/** How long a key minted in the portal lives, unless PORTAL_KEY_TTL_DAYS says otherwise. */
export const DEFAULT_KEY_TTL_DAYS = 90;

export interface Account {
  keyId: string;
  tenantId: string;
  tenantName: string;
  scopes: ApiScope[];
}

export interface KeyListing {
  id: string;
  name: string | null;
  displayPrefix: string;
  scopes: ApiScope[];
  status: 'active' | 'revoked' | 'expired';
  createdAt: Date;
  /** null: the key never expires (keys made by an operator may not). */
  expiresAt: Date | null;
  lastUsedAt: Date | null;
}

const ACTIVE = `k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now()) AND t.disabled_at IS NULL`;

interface AccountRow {
  key_id: string;
  tenant_id: string;
  tenant_name: string;
  scopes: ApiScope[];
}

const toAccount = (row: AccountRow): Account => ({ keyId: row.key_id, tenantId: row.tenant_id, tenantName: row.tenant_name, scopes: row.scopes });

export type SignInResult = { ok: true; account: Account } | { ok: false; reason: 'invalid' | 'scope' };

/** Checks an API key typed into the sign-in form; malformed keys are refused before any lookup. */
export async function signIn(db: Queryable, apiKey: string): Promise<SignInResult> {
  const key = apiKey.trim();
  if (!isWellFormedApiKey(key)) return { ok: false, reason: 'invalid' };
  const { rows } = await db.query<AccountRow>(
    `SELECT k.id AS key_id, k.tenant_id, t.name AS tenant_name, k.scopes FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
      WHERE k.key_hash = $1 AND ${ACTIVE}`,
    [hashApiKey(key)],
  );
  const row = rows[0];
  if (row === undefined) return { ok: false, reason: 'invalid' };
  if (!row.scopes.includes(PORTAL_SCOPE)) return { ok: false, reason: 'scope' };
  return { ok: true, account: toAccount(row) };
}

/** The account of a session, while its key is still active and has the portal scope; null ends the session. */
export async function accountOf(db: Queryable, keyId: string, tenantId: string): Promise<Account | null> {
  const { rows } = await db.query<AccountRow>(
    `SELECT k.id AS key_id, k.tenant_id, t.name AS tenant_name, k.scopes FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
      WHERE k.id = $1 AND k.tenant_id = $2 AND ${ACTIVE} AND $3 = ANY (k.scopes)`,
    [keyId, tenantId, PORTAL_SCOPE],
  );
  return rows[0] ? toAccount(rows[0]) : null;
}

export async function listKeys(db: Queryable, tenantId: string): Promise<KeyListing[]> {
  const { rows } = await db.query<{
    id: string;
    name: string | null;
    display_prefix: string;
    scopes: ApiScope[];
    status: KeyListing['status'];
    created_at: Date;
    expires_at: Date | null;
    last_used_at: Date | null;
  }>(
    `SELECT id, name, display_prefix, scopes, created_at, expires_at, last_used_at,
            CASE WHEN revoked_at IS NOT NULL THEN 'revoked' WHEN expires_at IS NOT NULL AND expires_at <= now() THEN 'expired' ELSE 'active' END AS status
       FROM api_keys WHERE tenant_id = $1 ORDER BY revoked_at IS NOT NULL, created_at DESC, id`,
    [tenantId],
  );
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    displayPrefix: row.display_prefix,
    scopes: row.scopes,
    status: row.status,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    lastUsedAt: row.last_used_at,
  }));
}

export type CreateKeyResult = { ok: true; apiKey: string; id: string; expiresAt: Date } | { ok: false; field: 'name' | 'scopes'; message: string };

/**
 * A new key for the signed-in tenant, expiring after `ttlDays`. The plaintext is in the result only: shown once,
 * never stored or logged.
 */
export async function createTenantKey(
  pool: Pool,
  account: Account,
  input: { name: string; scopes: readonly string[] },
  { ttlDays = DEFAULT_KEY_TTL_DAYS }: { ttlDays?: number } = {},
): Promise<CreateKeyResult> {
  const name = input.name.trim();
  if (name.length > 200) return { ok: false, field: 'name', message: 'must be at most 200 characters' };
  const scopes = [...new Set(input.scopes)];
  if (scopes.length === 0) return { ok: false, field: 'scopes', message: 'choose at least one scope' };
  const unknown = scopes.filter((scope) => !(API_SCOPES as readonly string[]).includes(scope));
  if (unknown.length > 0) return { ok: false, field: 'scopes', message: `unknown scope ${unknown.map((scope) => JSON.stringify(scope.slice(0, 20))).join(', ')}` };
  const beyond = scopes.filter((scope) => !(account.scopes as readonly string[]).includes(scope));
  if (beyond.length > 0) return { ok: false, field: 'scopes', message: `your key does not have ${beyond.join(', ')}, so it cannot give it to a new key` };
  return withTransaction(pool, async (client): Promise<CreateKeyResult> => {
    // Count and insert under one per-tenant lock: without it, concurrent requests all see room and all insert.
    await client.query("SELECT pg_advisory_xact_lock(hashtext('api_keys:' || $1::text))", [account.tenantId]);
    const { rows: active } = await client.query<{ n: string }>(
      'SELECT count(*) AS n FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())',
      [account.tenantId],
    );
    if (Number(active[0]?.n ?? 0) >= MAX_ACTIVE_KEYS_PER_TENANT) {
      return { ok: false, field: 'name', message: `this account already has ${MAX_ACTIVE_KEYS_PER_TENANT} active keys; revoke one first` };
    }
    const generated = generateApiKey();
    const { rows } = await client.query<{ id: string; expires_at: Date }>(
      `INSERT INTO api_keys (tenant_id, name, display_prefix, key_hash, scopes, expires_at)
       VALUES ($1, $2, $3, $4, $5, now() + $6::int * interval '1 day') RETURNING id, expires_at`,
      [account.tenantId, name === '' ? null : name, generated.displayPrefix, generated.hash, scopes, ttlDays],
    );
    const row = rows[0] as { id: string; expires_at: Date };
    return { ok: true, apiKey: generated.key, id: row.id, expiresAt: row.expires_at };
  });
}

/** Revokes one of the tenant's keys; false when it is not theirs. The gateway drops it within about a second. */
export async function revokeTenantKey(db: Queryable, tenantId: string, keyId: string): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE tenant_id = $1 AND id = $2', [tenantId, keyId]);
  return (rowCount ?? 0) > 0;
}
