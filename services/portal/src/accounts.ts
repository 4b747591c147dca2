// Who is signed in to the portal, and the tenant's API keys. Every key operation is the key store's
// (@fin/api-keys): the same look-up the gateway authenticates with, and the one create and revoke path the admin
// CLI uses. What is the portal's own: a key signs in only with the `tools` scope, a new key may only have scopes
// the signed-in key has (so a key limited to `tools` cannot mint a key for more), keys minted here expire
// (PORTAL_KEY_TTL_DAYS), and a tenant holds at most MAX_ACTIVE_KEYS_PER_TENANT usable ones.
import {
  createKey,
  findActiveKey,
  findActiveKeyById,
  hashApiKey,
  isWellFormedApiKey,
  KeyStoreError,
  listKeys as listStoredKeys,
  revokeKey,
  type ActiveKey,
  type KeyInfo,
} from '@fin/api-keys';
import { API_SCOPES, type ApiScope } from '@fin/contracts';
import type { Pool, Queryable } from '@fin/db';

export { MAX_ACTIVE_KEYS_PER_TENANT } from '@fin/api-keys';

/** The scope a key needs to sign in to the portal: it manages customer tools (and keys) of its tenant. */
const PORTAL_SCOPE: ApiScope = 'tools';
/** How long a key minted in the portal lives, unless PORTAL_KEY_TTL_DAYS says otherwise. */
export const DEFAULT_KEY_TTL_DAYS = 90;
const DAY_MS = 86_400_000;

export interface Account {
  keyId: string;
  tenantId: string;
  tenantName: string;
  scopes: ApiScope[];
  /** The tenant's rate-limit overrides (tenants.rate_limit_overrides): the portal counts webhook queuing against them. */
  limitOverrides: Record<string, number>;
}

const isApiScope = (scope: string): scope is ApiScope => (API_SCOPES as readonly string[]).includes(scope);

const toAccount = (key: ActiveKey): Account => ({
  keyId: key.keyId,
  tenantId: key.tenantId,
  tenantName: key.tenantName,
  scopes: key.scopes.filter(isApiScope),
  limitOverrides: key.limitOverrides,
});

export type SignInResult = { ok: true; account: Account } | { ok: false; reason: 'invalid' | 'scope' };

/** Checks an API key typed into the sign-in form; malformed keys are refused before any lookup. */
export async function signIn(db: Queryable, apiKey: string): Promise<SignInResult> {
  const key = apiKey.trim();
  if (!isWellFormedApiKey(key)) return { ok: false, reason: 'invalid' };
  const found = await findActiveKey(db, hashApiKey(key));
  if (found === null) return { ok: false, reason: 'invalid' };
  if (!found.scopes.includes(PORTAL_SCOPE)) return { ok: false, reason: 'scope' };
  return { ok: true, account: toAccount(found) };
}

/** The account of a session, while its key is still active and has the portal scope; null ends the session. */
export async function accountOf(db: Queryable, keyId: string, tenantId: string): Promise<Account | null> {
  const found = await findActiveKeyById(db, keyId);
  if (found === null || found.tenantId !== tenantId || !found.scopes.includes(PORTAL_SCOPE)) return null;
  return toAccount(found);
}

/** The tenant's keys as the portal lists them: newest first, revoked ones last. */
export async function listKeys(pool: Pool, tenantId: string): Promise<KeyInfo[]> {
  // The store lists them oldest first, in the database's order of creation.
  const newestFirst = (await listStoredKeys(pool, { tenant: { id: tenantId } })).reverse();
  return [...newestFirst.filter((key) => key.revokedAt === null), ...newestFirst.filter((key) => key.revokedAt !== null)];
}

export type CreateKeyResult =
  { ok: true; apiKey: string; id: string; expiresAt: Date } | { ok: false; field: 'name' | 'scopes'; message: string };

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
  const unknown = scopes.filter((scope) => !isApiScope(scope));
  if (unknown.length > 0)
    return {
      ok: false,
      field: 'scopes',
      message: `unknown scope ${unknown.map((scope) => JSON.stringify(scope.slice(0, 20))).join(', ')}`,
    };
  const beyond = scopes.filter((scope) => !(account.scopes as readonly string[]).includes(scope));
  if (beyond.length > 0)
    return { ok: false, field: 'scopes', message: `your key does not have ${beyond.join(', ')}, so it cannot give it to a new key` };
  const expiresAt = new Date(Date.now() + ttlDays * DAY_MS);
  try {
    const { apiKey, key } = await createKey(pool, {
      tenant: { id: account.tenantId },
      name: name === '' ? undefined : name,
      scopes: scopes.filter(isApiScope),
      expiresAt,
      capped: true,
    });
    return { ok: true, apiKey, id: key.id, expiresAt };
  } catch (error) {
    if (error instanceof KeyStoreError && error.reason === 'key_limit') return { ok: false, field: 'name', message: error.message };
    throw error;
  }
}

/** Revokes one of the tenant's keys; false when it is not theirs. The gateway drops it within about a second. */
export async function revokeTenantKey(pool: Pool, tenantId: string, keyId: string): Promise<boolean> {
  try {
    await revokeKey(pool, keyId, { tenant: { id: tenantId } });
    return true;
  } catch (error) {
    if (error instanceof KeyStoreError && error.reason === 'not_found') return false;
    throw error;
  }
}
