import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { CustomerToolCreateRequest, WebhookCreateRequest } from '@fin/contracts';
import { createKeyring, createToolStore } from '@fin/customer-tools';
import { createPool, type Pool } from '@fin/db';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { createWebhookStore } from '@fin/webhooks';

/** The operator's rotation step, as the image runs it: `node dist/cli.js reencrypt` (here from the sources). */
function reencrypt(env: Record<string, string>) {
  return spawnSync(process.execPath, ['--conditions=development', '--import', 'tsx', 'src/cli.ts', 'reencrypt'], {
    cwd: path.join(__dirname, '..'),
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
  });
}

describe('portal CLI: reencrypt', () => {
  let db: TestDatabase;
  let pool: Pool;
  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'portal-cli-test', max: 2 });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('re-seals what the old key sealed with the current one, says how many, and then nothing is left', async () => {
    const old = { id: 'k1', key: randomBytes(32) };
    const fresh = { id: 'k2', key: randomBytes(32) };
    const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('acme') RETURNING id");
    const tenantId = rows[0]!.id;
    const tool = await createToolStore({ pool, keyring: createKeyring(old) }).create(
      tenantId,
      CustomerToolCreateRequest.parse({
        name: 'get_positions',
        description: 'Positions.',
        endpoint: 'https://api.example.com/positions',
        input_schema: { type: 'object' },
        headers: { Authorization: 'Bearer rotate-me' },
      }),
    );
    // A webhook endpoint with a rotated secret (two sealed values) and the account's callback secret.
    const hooks = createWebhookStore({ pool, keyring: createKeyring(old) });
    const hook = await hooks.create(tenantId, WebhookCreateRequest.parse({ url: 'https://hooks.example.com/' }), ['news']);
    const rotated = await hooks.rotateSecret(tenantId, hook.id, ['news']);
    await hooks.rotateCallbackSecret(tenantId);
    const env = {
      DATABASE_URL: db.url,
      CUSTOMER_TOOLS_ENCRYPTION_KEY: `k2:${fresh.key.toString('base64')}`,
      CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS: `k1:${old.key.toString('base64')}`,
    };
    const first = reencrypt(env);
    expect(first.stderr).toBe('');
    expect(first.stdout).toBe('re-encrypted 1 tool with key k2\nre-encrypted 3 webhook secrets with key k2\n');
    expect(reencrypt(env).stdout).toBe('re-encrypted 0 tools with key k2\nre-encrypted 0 webhook secrets with key k2\n');
    // The old key can go: the secret opens with the new key alone.
    expect(await createToolStore({ pool, keyring: createKeyring(fresh) }).headersOf(tenantId, tool.id)).toEqual({
      Authorization: 'Bearer rotate-me',
    });
    // The webhook secrets open with the new key alone, and sign as they did.
    const { rows: sealed } = await pool.query<{ secret: Buffer }>('SELECT secret_ciphertext AS secret FROM webhook_endpoints');
    const opened = createKeyring(fresh).open(sealed[0]!.secret, { tenantId, toolId: `webhook:${hook.id}` });
    expect(opened.toString('utf8')).toBe(rotated?.secret);
    // The secret values never reach the output.
    expect(first.stdout + first.stderr).not.toContain(old.key.toString('base64'));
  });

  it('refuses unknown commands with its usage', () => {
    const run = spawnSync(process.execPath, ['--conditions=development', '--import', 'tsx', 'src/cli.ts', 'rotate'], {
      cwd: path.join(__dirname, '..'),
      encoding: 'utf8',
    });
    expect(run.status).toBe(64);
    expect(run.stderr).toContain('Usage: cli reencrypt');
  });
});
