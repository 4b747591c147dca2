// The README's "Operating it" commands against a running `npm start`, typed as a user types them at the
// repository root (`npm run admin -- …`, `npm run migrate`) with no DATABASE_URL: they reach the embedded
// database through DATA_DIR/database.json, say which database that is, and say how to start the system when it
// is stopped.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, runCommand, waitFor, type Finished } from '@fin/testing';
import { REPOSITORY_ROOT as ROOT, buildOnce, launchNpmStart, type Launched } from './npm-start';

/** `npm run <script> -- args` at the repository root, as a shell would run it (DATABASE_URL unset). */
function npmRun(script: string, args: string[], dataDir: string): Promise<Finished> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, npm_config_loglevel: 'error' };
  delete env.DATABASE_URL;
  return runCommand('npm', ['run', '--silent', script, '--', ...args], { cwd: ROOT, env });
}

describe('the admin CLI and migrate against npm start', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'fin-admin-start-'));
  chmodSync(dataDir, 0o755);
  let running: Launched | undefined;
  beforeAll(buildOnce, 300_000);
  afterAll(async () => {
    await running?.forceStop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('says npm start has not run yet, then reaches its database while it runs, then says it is stopped', async () => {
    const never = await npmRun('admin', ['keys', 'list'], dataDir);
    expect(never.code).toBe(1);
    expect(never.stderr).toContain('admin: no database: DATABASE_URL is not set and npm start has not run here.');
    expect(never.stderr).toContain('Start it with "npm start"');

    const port = await freePort();
    const started = launchNpmStart({ DATA_DIR: dataDir, PORT: String(port) });
    running = started;
    await waitFor(() => started.output().includes('Ctrl-C stops everything') || started.child.exitCode !== null, {
      timeoutMs: 45_000,
      what: 'the banner',
    });
    const output = started.output();
    const devKey = /Development API key\s+(\S+)/.exec(output)?.[1];
    expect(devKey).toMatch(/^fin_/);
    // The banner names the admin commands that work against this system.
    expect(output).toContain(`DATA_DIR=${dataDir} npm run admin -- keys list`);
    expect(output).toContain('npm run admin -- keys create --tenant local-dev');

    // `keys list` shows the development key of the banner, and names the database it read.
    const listed = await npmRun('admin', ['keys', 'list'], dataDir);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('local-dev');
    expect(listed.stdout).toContain(devKey!.slice(0, 10));
    expect(listed.stderr).toMatch(
      /admin: database postgresql:\/\/\S+:\*\*\*@127\.0\.0\.1:\d+\/\S+ \(the database of npm start, process \d+/,
    );

    // The README's two commands give a key that works against the running API.
    expect((await npmRun('admin', ['tenants', 'create', 'acme'], dataDir)).code).toBe(0);
    const created = await npmRun('admin', ['keys', 'create', '--tenant', 'acme', '--json'], dataDir);
    expect(created.code).toBe(0);
    const { api_key: apiKey } = JSON.parse(created.stdout) as { api_key: string };
    const base = `http://127.0.0.1:${port}`;
    const accepted = await fetch(`${base}/api/products/news`, {
      method: 'POST',
      headers: { 'X-API-Key': apiKey, 'Content-Type': 'application/json' },
      body: JSON.stringify({ symbols: ['AAPL'], n: 2 }),
    });
    expect(accepted.status).toBe(202);

    // `npm run migrate` finds the same database, already migrated by npm start.
    const migrated = await npmRun('migrate', [], dataDir);
    expect(migrated.code).toBe(0);
    expect(migrated.stderr).toContain('(the database of npm start');
    expect(migrated.stderr).toContain('already up to date');

    started.child.kill('SIGTERM');
    expect(await started.exited).toBe(0);
    const stopped = await npmRun('admin', ['keys', 'list'], dataDir);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toMatch(
      /admin: npm start is not running \(process \d+ has ended; its embedded database is stopped with it\)\. Start it with "npm start"/,
    );
  }, 180_000);
});
