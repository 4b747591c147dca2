// The look-ups that authenticate a key, and the change notifications the gateways' key caches rely on.
import { createPool, type Pool } from '@fin/db';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import {
  clearLimitOverrides,
  createKey,
  createTenant,
  disableTenant,
  enableTenant,
  findActiveKey,
  findActiveKeyById,
  hashApiKey,
  recordKeysUsed,
  revokeKey,
  setLimitOverride,
  stillActiveKeyIds,
} from '../src';

describe('key look-ups', () => {
  let db: TestDatabase;
  let pool: Pool;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'key-lookup-test', max: 3 });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('finds a working key by hash and by id, with its tenant and overrides; not once revoked, expired or disabled', async () => {
    const tenant = await createTenant(pool, 'lookups');
    await setLimitOverride(pool, 'lookups', 'news', 500);
    const expiresAt = new Date(Date.now() + 3_600_000);
    const { apiKey, key } = await createKey(pool, { tenant: 'lookups', scopes: ['news', 'chat'], expiresAt });
    const expected = {
      keyId: key.id,
      tenantId: tenant.id,
      tenantName: 'lookups',
      scopes: ['news', 'chat'],
      expiresAt,
      limitOverrides: { news: 500 },
    };
    expect(await findActiveKey(pool, hashApiKey(apiKey))).toEqual(expected);
    expect(await findActiveKeyById(pool, key.id)).toEqual(expected);
    // Another key: its last character changed (to one it is not: a key that already ended in x was its own lookalike).
    const lookalike = `${apiKey.slice(0, -1)}${apiKey.endsWith('x') ? 'y' : 'x'}`;
    expect(lookalike).not.toBe(apiKey);
    expect(await findActiveKey(pool, hashApiKey(lookalike))).toBeNull();

    const expiring = await createKey(pool, { tenant: 'lookups' });
    const revoked = await createKey(pool, { tenant: 'lookups' });
    await pool.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [expiring.key.id]);
    await revokeKey(pool, revoked.key.id);
    expect(await findActiveKey(pool, hashApiKey(expiring.apiKey))).toBeNull();
    expect(await findActiveKeyById(pool, revoked.key.id)).toBeNull();
    expect(await stillActiveKeyIds(pool, [key.id, expiring.key.id, revoked.key.id])).toEqual(new Set([key.id]));

    await disableTenant(pool, 'lookups');
    expect(await findActiveKey(pool, hashApiKey(apiKey))).toBeNull();
    expect(await stillActiveKeyIds(pool, [key.id])).toEqual(new Set());
  });

  it('records when keys were used', async () => {
    await createTenant(pool, 'usage');
    const used = await createKey(pool, { tenant: 'usage' });
    const unused = await createKey(pool, { tenant: 'usage' });
    await recordKeysUsed(pool, [used.key.id]);
    const { rows } = await pool.query<{ id: string; last_used_at: Date | null }>(
      'SELECT id, last_used_at FROM api_keys WHERE id = ANY($1::uuid[])',
      [[used.key.id, unused.key.id]],
    );
    expect(rows.find((row) => row.id === used.key.id)?.last_used_at).toBeInstanceOf(Date);
    expect(rows.find((row) => row.id === unused.key.id)?.last_used_at).toBeNull();
  });

  it('every change a gateway must see sends api_key_changed for the key or the tenant', async () => {
    const tenant = await createTenant(pool, 'notified');
    const { key } = await createKey(pool, { tenant: 'notified' });
    const listener = await pool.connect();
    const payloads: string[] = [];
    listener.on('notification', (message) => payloads.push(message.payload ?? ''));
    try {
      await listener.query('LISTEN api_key_changed');
      await revokeKey(pool, key.id);
      await waitFor(() => payloads.includes(`key:${key.id}`), { what: 'the revocation notice' });
      for (const change of [
        () => disableTenant(pool, 'notified'),
        () => enableTenant(pool, 'notified'),
        () => setLimitOverride(pool, 'notified', 'news', 50),
        () => setLimitOverride(pool, 'notified', 'news', null),
        () => clearLimitOverrides(pool, 'notified'),
      ]) {
        const before = payloads.length;
        await change();
        await waitFor(() => payloads.length > before, { what: 'a tenant change notice' });
        expect(payloads.at(-1)).toBe(`tenant:${tenant.id}`);
      }
    } finally {
      listener.release(true);
    }
  });
});
