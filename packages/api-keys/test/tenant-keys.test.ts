// The paths a customer's own keys take (the portal): the per-tenant cap, keys by tenant id, revocation limited to
// the tenant's own keys.
import { createPool, type Pool } from '@fin/db';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { KeyStoreError, MAX_ACTIVE_KEYS_PER_TENANT, createKey, createTenant, listKeys, revokeKey, type TenantInfo } from '../src';

describe('keys a tenant makes itself', () => {
  let db: TestDatabase;
  let pool: Pool;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'tenant-keys-test', max: 4 });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  const usable = async (tenant: TenantInfo) =>
    (
      (
        await pool.query(
          'SELECT count(*)::int AS n FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())',
          [tenant.id],
        )
      ).rows[0] as { n: number }
    ).n;

  it('holds a capped tenant to 25 usable keys, even when requests race; expired and revoked keys leave room', async () => {
    const tenant = await createTenant(pool, 'capped');
    const ref = { id: tenant.id };
    const results = await Promise.allSettled(
      Array.from({ length: MAX_ACTIVE_KEYS_PER_TENANT + 5 }, () => createKey(pool, { tenant: ref, scopes: ['tools'], capped: true })),
    );
    const refused = results.filter((result) => result.status === 'rejected').map((result) => result.reason as KeyStoreError);
    expect(refused).toHaveLength(5);
    for (const error of refused) {
      expect(error).toBeInstanceOf(KeyStoreError);
      expect(error.reason).toBe('key_limit');
      expect(error.message).toBe('this account already has 25 active keys; revoke one first');
    }
    expect(await usable(tenant)).toBe(MAX_ACTIVE_KEYS_PER_TENANT);

    const keys = await listKeys(pool, { tenant: ref });
    await pool.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [keys[0]?.id]);
    await revokeKey(pool, (keys[1] as { id: string }).id, { tenant: ref });
    await createKey(pool, { tenant: ref, capped: true });
    await createKey(pool, { tenant: ref, capped: true });
    await expect(createKey(pool, { tenant: ref, capped: true })).rejects.toMatchObject({ reason: 'key_limit' });
    // An operator is not held to the cap.
    await expect(createKey(pool, { tenant: 'capped' })).resolves.toMatchObject({ key: { status: 'active' } });
  });

  it('makes a key by tenant id, with an expiry, and refuses an unknown tenant id', async () => {
    const tenant = await createTenant(pool, 'by-id');
    const expiresAt = new Date(Date.now() + 90 * 86_400_000);
    const { key } = await createKey(pool, { tenant: { id: tenant.id }, name: 'nightly', scopes: ['news', 'tools'], expiresAt });
    expect(key).toMatchObject({ tenant: 'by-id', name: 'nightly', scopes: ['news', 'tools'], status: 'active', expiresAt });
    await expect(createKey(pool, { tenant: { id: '00000000-0000-4000-8000-000000000000' } })).rejects.toThrow(
      new KeyStoreError('not_found', 'No tenant with id 00000000-0000-4000-8000-000000000000.'),
    );
  });

  it("revokes only the tenant's own keys when given a tenant: another tenant's key is not found, and stays active", async () => {
    const mine = await createTenant(pool, 'mine');
    const theirs = await createTenant(pool, 'theirs');
    const own = await createKey(pool, { tenant: 'mine' });
    const other = await createKey(pool, { tenant: 'theirs' });
    await expect(revokeKey(pool, other.key.id, { tenant: { id: mine.id } })).rejects.toMatchObject({ reason: 'not_found' });
    await expect(revokeKey(pool, other.apiKey, { tenant: { id: mine.id } })).rejects.toMatchObject({ reason: 'not_found' });
    expect((await listKeys(pool, { tenant: { id: theirs.id } })).map((key) => key.status)).toEqual(['active']);
    const revoked = await revokeKey(pool, own.key.id, { tenant: { id: mine.id } });
    expect(revoked).toMatchObject({ id: own.key.id, tenant: 'mine', status: 'revoked' });
  });
});
