import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { createPool, type Pool } from '@fin/db';
import type { AppError } from '@fin/http';
import { createLogger } from '@fin/log';
import { createTestDatabase, runCommand, waitFor, type Finished, type TestDatabase } from '@fin/testing';
import { createAuthenticator, type PostgresAuthenticator } from '../src/auth/authenticator';

const GATEWAY = path.join(__dirname, '..');
const ROOT = path.join(GATEWAY, '../..');

/**
 * The compiled CLI (dist/admin/cli.js, what the image ships) when every package's build and the gateway's are newer
 * than their sources, as after `npm test`'s build step; else the sources through tsx, which costs each of the
 * suite's forty runs about half a second more CPU.
 */
function cliCommand(): string[] {
  const projects = [GATEWAY, ...readdirSync(path.join(ROOT, 'packages')).map((name) => path.join(ROOT, 'packages', name))];
  const built = projects.every((project) => {
    const sources = path.join(project, 'src');
    if (!existsSync(sources)) return true;
    const buildInfo = path.join(project, 'dist/.tsbuildinfo');
    if (!existsSync(buildInfo)) return false;
    const builtAt = statSync(buildInfo).mtimeMs;
    return readdirSync(sources, { recursive: true, encoding: 'utf8' }).every(
      (file) => statSync(path.join(sources, file)).mtimeMs <= builtAt,
    );
  });
  return built
    ? [path.join(GATEWAY, 'dist/admin/cli.js')]
    : ['--conditions=development', '--import', 'tsx', path.join(GATEWAY, 'src/admin/cli.ts')];
}

describe('admin CLI (a real child process against a real database)', () => {
  let db: TestDatabase;
  let pool: Pool;
  let auth: PostgresAuthenticator;
  const cli = cliCommand();

  function admin(args: string[], env: Record<string, string> = {}): Promise<Finished> {
    return runCommand(process.execPath, [...cli, ...args], {
      cwd: GATEWAY,
      env: { ...process.env, DATABASE_URL: db.url, ...env },
    });
  }

  async function ok(args: string[]): Promise<string> {
    const run = await admin(args);
    if (run.code !== 0) throw new Error(`admin ${args.join(' ')} exited ${run.code}: ${run.stderr}`);
    return run.stdout;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'admin-cli-test', max: 4 });
    auth = createAuthenticator({ pool, logger: createLogger({ service: 'admin-cli-test', level: 'silent' }), cacheTtlMs: 60_000 });
    await waitFor(() => auth.listening, { what: 'the change listener' });
  });
  afterAll(async () => {
    await auth.close();
    await pool.end();
    await db.drop();
  });

  it('prints usage for --help (exit 0) and without a command (exit 64)', async () => {
    const [help, bare] = await Promise.all([admin(['--help']), admin([])]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('usage: admin <command>');
    expect(help.stdout).toContain('keys create --tenant NAME');
    expect(bare.code).toBe(64);
    expect(bare.stderr).toContain('usage: admin <command>');
  });

  it('creates a tenant and a key the gateway accepts; revoking it locks the key out within seconds', async () => {
    expect(await ok(['tenants', 'create', 'acme'])).toMatch(/^Created tenant acme \([0-9a-f-]{36}\)\.\n$/);
    const created = JSON.parse(await ok(['keys', 'create', '--tenant', 'acme', '--json'])) as {
      api_key: string;
      id: string;
      tenant: string;
      scopes: string[];
    };
    expect(created).toMatchObject({ tenant: 'acme', scopes: ['news', 'stock-report', 'analysis', 'chat', 'tools', 'webhooks', 'filings'] });

    const principal = await auth.authenticate(created.api_key);
    expect(principal).toMatchObject({ keyId: created.id, tenantName: 'acme', scopes: created.scopes });
    await auth.authenticate(created.api_key); // cached from here on

    const listed = await ok(['keys', 'list', '--tenant', 'acme', '--json']);
    expect(JSON.parse(listed)).toEqual([
      expect.objectContaining({ id: created.id, status: 'active', display_prefix: created.api_key.slice(0, 10) }),
    ]);
    expect(listed).not.toContain(created.api_key.slice(10));
    expect(listed).not.toMatch(/hash/i);

    expect(await ok(['keys', 'revoke', created.id])).toContain(`Revoked API key ${created.id}`);
    await waitFor(
      () =>
        auth.authenticate(created.api_key).then(
          () => false,
          (error: unknown) => (error as AppError).status === 401,
        ),
      { timeoutMs: 5_000, what: 'the revoked key to be refused' },
    );
  });

  it('restricts scopes and sets an expiry', async () => {
    await ok(['tenants', 'create', 'scoped']);
    const before = Date.now();
    const created = JSON.parse(
      await ok(['keys', 'create', '--tenant', 'scoped', '--scopes', 'news,chat', '--name', 'ci', '--expires-in', '2h', '--json']),
    ) as {
      api_key: string;
      scopes: string[];
      name: string;
      expires_at: string;
    };
    expect(created.scopes).toEqual(['news', 'chat']);
    expect(created.name).toBe('ci');
    expect(Math.abs(Date.parse(created.expires_at) - (before + 7_200_000))).toBeLessThan(10_000);
    expect((await auth.authenticate(created.api_key)).scopes).toEqual(['news', 'chat']);
  });

  it('shows a new key once in human output, warning that it will not be shown again', async () => {
    await ok(['tenants', 'create', 'humans']);
    const run = await admin(['keys', 'create', '--tenant', 'humans']);
    expect(run.code).toBe(0);
    const keys = run.stdout.match(/fin_[0-9A-Za-z]{42}/g) ?? [];
    expect(keys).toHaveLength(1);
    expect(run.stderr).toContain('This is the only time the key is shown');
    await expect(auth.authenticate(keys[0] as string)).resolves.toMatchObject({ tenantName: 'humans' });
    expect((await ok(['keys', 'list', '--tenant', 'humans'])).includes(keys[0] as string)).toBe(false);
  });

  it('exits 64 with a message for usage errors, without touching the database', async () => {
    const runs = await Promise.all(
      [
        ['keys', 'create'],
        ['keys', 'create', '--tenant', 'acme', '--expires-in', '3x'],
        ['keys', 'create', '--tenant', 'acme', '--bogus'],
        ['keys', 'create', '--tenant', 'acme', '--scopes', 'news,admin'],
        ['tenants', 'create'],
        ['tenants', 'create', 'a', 'b'],
        ['limits', 'set', '--tenant', 'acme', '--product', 'chat', '--per-minute', '5'],
        ['limits', 'set', '--tenant', 'acme', '--product', 'news', '--per-minute', 'lots'],
        ['frobnicate'],
        ['keys'],
        ['limits', 'set', '--tenant', 'acme', '--product', 'daily-tokens', '--per-minute', '5'],
      ].map((args) => admin(args, { DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/unreachable' })),
    );
    for (const run of runs) {
      expect(run).toMatchObject({ code: 64, stdout: '' });
      expect(run.stderr).toMatch(/^admin: /);
    }
    expect(runs[0]?.stderr).toContain('--tenant is required.');
    expect(runs[1]?.stderr).toContain('--expires-in takes a number and a unit');
    expect(runs[3]?.stderr).toContain('Unknown scope "admin"');
    expect(runs[6]?.stderr).toContain('use --concurrent N');
    expect(runs[10]?.stderr).toContain('daily-tokens is limited in model tokens per UTC day: use --per-day N.');
  });

  it('exits 1 with a clear message when the operation fails', async () => {
    await ok(['tenants', 'create', 'dupe']);
    const [duplicate, unknownKey, ghost, unreachable] = await Promise.all([
      admin(['tenants', 'create', 'dupe']),
      admin(['keys', 'revoke', 'fin_zzzzzz']),
      admin(['tenants', 'disable', 'ghost']),
      admin(['tenants', 'list'], { DATABASE_URL: 'postgresql://postgres:hunter2@127.0.0.1:1/unreachable' }),
    ]);
    expect(duplicate).toMatchObject({ code: 1, stderr: 'admin: A tenant named "dupe" already exists.\n' });
    expect(unknownKey).toMatchObject({ code: 1, stderr: 'admin: No API key with the prefix fin_zzzzzz.\n' });
    expect(ghost).toMatchObject({ code: 1, stderr: 'admin: No tenant named "ghost".\n' });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain('ECONNREFUSED');
    expect(unreachable.stderr).not.toContain('hunter2');
  });

  it('sets, shows and clears limit overrides, which reach a running gateway', async () => {
    await ok(['tenants', 'create', 'bigcorp']);
    const { api_key: apiKey } = JSON.parse(await ok(['keys', 'create', '--tenant', 'bigcorp', '--json'])) as { api_key: string };
    expect((await auth.authenticate(apiKey)).limitOverrides).toEqual({});
    await ok(['limits', 'set', '--tenant', 'bigcorp', '--product', 'news', '--per-minute', '500']);
    await ok(['limits', 'set', '--tenant', 'bigcorp', '--product', 'chat', '--concurrent', '25']);
    expect(await ok(['limits', 'set', '--tenant', 'bigcorp', '--product', 'chat-turns', '--per-minute', '120'])).toContain(
      'chat-turns limited to 120 requests per minute for the account',
    );
    expect(await ok(['limits', 'set', '--tenant', 'bigcorp', '--product', 'daily-tokens', '--per-day', '5000000000'])).toContain(
      'daily-tokens limited to 5000000000 model tokens per UTC day for the account',
    );
    const shown = JSON.parse(await ok(['limits', 'show', '--json'])) as { tenants: unknown[] };
    expect(shown.tenants).toEqual([
      { name: 'bigcorp', overrides: { news: 500, chat: 25, 'chat-turns': 120, 'daily-tokens': 5_000_000_000 } },
    ]);
    await waitFor(async () => (await auth.authenticate(apiKey)).limitOverrides.news === 500, {
      timeoutMs: 5_000,
      what: 'the override to arrive',
    });
    await ok(['limits', 'clear', '--tenant', 'bigcorp', '--product', 'news']);
    expect(JSON.parse(await ok(['limits', 'show', '--tenant', 'bigcorp', '--json']))).toMatchObject({
      tenants: [{ name: 'bigcorp', overrides: { chat: 25, 'chat-turns': 120, 'daily-tokens': 5_000_000_000 } }],
    });
    const tenants = JSON.parse(await ok(['tenants', 'list', '--json'])) as { name: string; active_keys: number }[];
    expect(tenants.find((tenant) => tenant.name === 'bigcorp')).toMatchObject({ active_keys: 1 });
  });
});
