import { createHash } from 'node:crypto';
import { createPool, type Pool } from '@fin/db';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import {
  KeyStoreError,
  clearLimitOverrides,
  createKey,
  createTenant,
  disableTenant,
  enableTenant,
  isWellFormedApiKey,
  listKeys,
  listTenants,
  revokeKey,
  setLimitOverride,
  showLimits,
} from '../src';

describe('tenants, keys and limit overrides (operators)', () => {
  let db: TestDatabase;
  let pool: Pool;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'key-store-test', max: 2 });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('creates and lists tenants, refusing duplicates and unusable names', async () => {
    const created = await createTenant(pool, 'acme');
    expect(created).toMatchObject({ name: 'acme', disabledAt: null, limitOverrides: {}, activeKeys: 0 });
    await expect(createTenant(pool, 'acme')).rejects.toThrow(new KeyStoreError('conflict', 'A tenant named "acme" already exists.'));
    for (const bad of ['', ' acme', 'a b', '-x', 'x'.repeat(101), 'acme;drop']) {
      await expect(createTenant(pool, bad)).rejects.toBeInstanceOf(KeyStoreError);
    }
    await createTenant(pool, 'beta.co');
    expect((await listTenants(pool)).map((tenant) => tenant.name)).toEqual(['acme', 'beta.co']);
  });

  it('creates a key with all five scopes by default, storing only its SHA-256', async () => {
    await createTenant(pool, 'hashes');
    const { apiKey, key } = await createKey(pool, { tenant: 'hashes', name: 'ci' });
    expect(isWellFormedApiKey(apiKey)).toBe(true);
    expect(key).toMatchObject({
      tenant: 'hashes',
      name: 'ci',
      status: 'active',
      scopes: ['news', 'stock-report', 'analysis', 'chat', 'tools', 'webhooks', 'filings'],
    });
    expect(key.displayPrefix).toBe(apiKey.slice(0, 10));
    const { rows } = await pool.query<Record<string, unknown>>('SELECT * FROM api_keys WHERE id = $1', [key.id]);
    const row = rows[0] as Record<string, unknown>;
    expect(row.key_hash).toEqual(createHash('sha256').update(apiKey).digest());
    // No column holds the key itself.
    expect(JSON.stringify(row)).not.toContain(apiKey.slice(10));
  });

  it('lists keys without their hash or the key', async () => {
    await createTenant(pool, 'listing');
    const { apiKey, key } = await createKey(pool, { tenant: 'listing', scopes: ['news'] });
    const listed = await listKeys(pool, { tenant: 'listing' });
    expect(listed).toEqual([key]);
    expect(Object.keys(listed[0] as object).sort()).toEqual(
      ['createdAt', 'displayPrefix', 'expiresAt', 'id', 'lastUsedAt', 'name', 'revokedAt', 'scopes', 'status', 'tenant'].sort(),
    );
    expect(JSON.stringify(await listKeys(pool))).not.toContain(apiKey.slice(10));
    await expect(listKeys(pool, { tenant: 'nobody' })).rejects.toThrow('No tenant named "nobody".');
  });

  it('validates scopes and expiry, and refuses keys for a disabled tenant', async () => {
    await createTenant(pool, 'strict');
    await expect(createKey(pool, { tenant: 'strict', scopes: [] })).rejects.toThrow('Name at least one scope');
    await expect(createKey(pool, { tenant: 'strict', scopes: ['news', 'admin' as never] })).rejects.toThrow('Unknown scope "admin"');
    await expect(createKey(pool, { tenant: 'strict', expiresAt: new Date(Date.now() - 1000) })).rejects.toThrow(
      'The expiry must be in the future.',
    );
    await expect(createKey(pool, { tenant: 'ghost' })).rejects.toThrow('No tenant named "ghost".');
    await disableTenant(pool, 'strict');
    await expect(createKey(pool, { tenant: 'strict' })).rejects.toThrow('Tenant "strict" is disabled');
    const enabled = await enableTenant(pool, 'strict');
    expect(enabled.disabledAt).toBeNull();
    await expect(createKey(pool, { tenant: 'strict' })).resolves.toMatchObject({ key: { status: 'active' } });
  });

  it('revokes by id, display prefix or the key itself; refuses unknown and ambiguous references', async () => {
    await createTenant(pool, 'revoking');
    const byId = await createKey(pool, { tenant: 'revoking' });
    const byPrefix = await createKey(pool, { tenant: 'revoking' });
    const byKey = await createKey(pool, { tenant: 'revoking' });
    expect((await revokeKey(pool, byId.key.id)).status).toBe('revoked');
    expect((await revokeKey(pool, byPrefix.key.displayPrefix)).status).toBe('revoked');
    const revoked = await revokeKey(pool, byKey.apiKey);
    expect(revoked).toMatchObject({ id: byKey.key.id, status: 'revoked' });
    // Revoking again keeps the original time.
    expect((await revokeKey(pool, byKey.key.id)).revokedAt).toEqual(revoked.revokedAt);

    await expect(revokeKey(pool, '00000000-0000-4000-8000-000000000000')).rejects.toThrow('No API key with id');
    await expect(revokeKey(pool, 'fin_zzzzzz')).rejects.toThrow('No API key with the prefix fin_zzzzzz.');
    await expect(revokeKey(pool, 'drop table')).rejects.toThrow('is neither a key id');
    const twin = await createKey(pool, { tenant: 'revoking' });
    const clash = await createKey(pool, { tenant: 'revoking' });
    await pool.query('UPDATE api_keys SET display_prefix = $1 WHERE id = $2', [twin.key.displayPrefix, clash.key.id]);
    await expect(revokeKey(pool, twin.key.displayPrefix)).rejects.toThrow('2 keys have the prefix');
    expect((await listKeys(pool, { tenant: 'revoking' })).filter((key) => key.status === 'active')).toHaveLength(2);
  });

  it('reports expired keys and keys of disabled tenants as such', async () => {
    await createTenant(pool, 'statuses');
    const expiring = await createKey(pool, { tenant: 'statuses' });
    await pool.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [expiring.key.id]);
    const other = await createKey(pool, { tenant: 'statuses' });
    expect((await listKeys(pool, { tenant: 'statuses' })).map((key) => [key.id, key.status])).toEqual([
      [expiring.key.id, 'expired'],
      [other.key.id, 'active'],
    ]);
    await disableTenant(pool, 'statuses');
    expect((await listKeys(pool, { tenant: 'statuses' })).find((key) => key.id === other.key.id)?.status).toBe('tenant_disabled');
  });

  it('sets, clears and shows limit overrides, validating product and value', async () => {
    await createTenant(pool, 'limited');
    expect(await setLimitOverride(pool, 'limited', 'news', 500)).toEqual({ news: 500 });
    expect(await setLimitOverride(pool, 'limited', 'chat', 25)).toEqual({ news: 500, chat: 25 });
    expect(await setLimitOverride(pool, 'limited', 'news', 400)).toEqual({ news: 400, chat: 25 });
    await expect(setLimitOverride(pool, 'limited', 'weather', 5)).rejects.toThrow('Unknown product "weather"');
    await expect(setLimitOverride(pool, 'limited', 'news', 0)).rejects.toThrow('whole number from 1');
    await expect(setLimitOverride(pool, 'limited', 'news', 2.5)).rejects.toThrow('whole number from 1');
    await expect(setLimitOverride(pool, 'limited', 'chat', 50_000)).rejects.toThrow('from 1 to 10,000');
    await expect(setLimitOverride(pool, 'ghost', 'news', 5)).rejects.toThrow('No tenant named "ghost".');

    const report = await showLimits(pool);
    expect(report.defaults).toEqual({
      news: 100,
      'stock-report': 20,
      analysis: 20,
      jobs: 600,
      tools: 60,
      webhooks: 60,
      'chat-turns': 60,
      filings: 60,
      chat: 10,
    });
    expect(report.tenants).toEqual([{ name: 'limited', overrides: { news: 400, chat: 25 } }]);

    expect(await setLimitOverride(pool, 'limited', 'news', null)).toEqual({ chat: 25 });
    await clearLimitOverrides(pool, 'limited');
    expect((await showLimits(pool, 'limited')).tenants).toEqual([{ name: 'limited', overrides: {} }]);
  });
});
