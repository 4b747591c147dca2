// PostgreSQL from any checkout location. Run as root (CI machines, containers), PostgreSQL runs as the `postgres`
// user, which cannot enter a checkout under /root or in a `mktemp -d` folder (mode 0700): the binaries and the data
// must then be somewhere that user can reach. Run as another user, the same tests hold trivially.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPool } from '@fin/db';
import { createLogger } from '@fin/log';
import { startEmbeddedPostgres } from '../src/embedded-postgres';
import { packagedNative, postgresTools } from '../src/postgres-server';

const logger = createLogger({ service: 'postgres-server-test', level: 'silent' });

describe('PostgreSQL from a checkout other users cannot enter', () => {
  let closed: string;

  beforeAll(() => {
    // mkdtemp makes the folder 0700, as `mktemp -d` does.
    closed = mkdtempSync(path.join(tmpdir(), 'fin-closed-checkout-'));
  });
  afterAll(() => rmSync(closed, { recursive: true, force: true }));

  it('runs the binaries of a closed checkout (before: spawn … initdb EACCES as root)', async () => {
    // The platform package as a checkout holds it (package.json, native/), inside the closed folder.
    const native = path.join(closed, 'linux-package', 'native');
    cpSync(path.dirname(packagedNative()), path.dirname(native), { recursive: true, verbatimSymlinks: true });
    const tools = await postgresTools({ native });
    expect(await tools.run('initdb', ['--version'])).toMatch(/^initdb \(PostgreSQL\) \d+/);
    expect(await tools.run('postgres', ['--version'])).toMatch(/^postgres \(PostgreSQL\) \d+/);
    if (process.getuid?.() === 0) expect(tools.native).not.toContain(closed);
  });

  it('keeps the embedded cluster of a closed data folder where the postgres user can reach it, the same one at every start', async () => {
    const dataDir = path.join(closed, '.data');
    const first = await startEmbeddedPostgres({ dataDir, logger });
    try {
      const pool = createPool({ connectionString: first.url, applicationName: 'postgres-server-test', max: 1 });
      await pool.query('CREATE TABLE kept (n int)');
      await pool.query('INSERT INTO kept VALUES (42)');
      await pool.end();
    } finally {
      await first.stop();
    }
    if (process.getuid?.() === 0) expect(first.dataDir.startsWith(closed)).toBe(false);
    const second = await startEmbeddedPostgres({ dataDir, logger });
    try {
      expect(second.dataDir).toBe(first.dataDir);
      const pool = createPool({ connectionString: second.url, applicationName: 'postgres-server-test', max: 1 });
      expect((await pool.query<{ n: number }>('SELECT n FROM kept')).rows).toEqual([{ n: 42 }]);
      await pool.end();
    } finally {
      await second.stop();
      if (!second.dataDir.startsWith(closed)) rmSync(path.dirname(second.dataDir), { recursive: true, force: true });
    }
  }, 120_000);

  it('turns a failing binary into one line that says why', async () => {
    const tools = await postgresTools();
    const failure = await tools.run('pg_ctl', ['status', '-D', path.join(closed, 'no-such-cluster')]).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(failure?.message).toMatch(/^PostgreSQL's pg_ctl failed: .*no-such-cluster/);
    expect(failure?.message).not.toContain('\n');
  });
});
