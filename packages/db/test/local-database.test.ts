import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LOCAL_DATABASE_FILE, NoDatabaseError, readLocalDatabase, recordLocalDatabase, repositoryRoot, resolveToolDatabase } from '../src';

/** A process id that no longer exists: a child that has already exited. */
function endedPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

describe('the local database record (how tools find the database of npm start)', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'fin-local-db-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  const url = 'postgresql://fin:s3cret-pw@127.0.0.1:54321/fin_api';

  it('is written readable by the user alone and read back', () => {
    recordLocalDatabase(dataDir, { url, pid: process.pid, embedded: true, startedAt: '2026-11-24T00:00:00.000Z' });
    const file = path.join(dataDir, LOCAL_DATABASE_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readLocalDatabase(dataDir)).toEqual({ url, pid: process.pid, embedded: true, startedAt: '2026-11-24T00:00:00.000Z' });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ url });
  });

  it('prefers DATABASE_URL, naming it without its password', () => {
    recordLocalDatabase(dataDir, { url, pid: process.pid, embedded: true, startedAt: '' });
    const resolved = resolveToolDatabase({ DATABASE_URL: 'postgresql://ops:pw@db.internal:5432/fin' }, dataDir);
    expect(resolved).toEqual({
      url: 'postgresql://ops:pw@db.internal:5432/fin',
      source: 'DATABASE_URL',
      description: 'postgresql://ops:***@db.internal:5432/fin (DATABASE_URL)',
    });
  });

  it('uses the database of a running npm start when DATABASE_URL is not set, and says which it is', () => {
    recordLocalDatabase(dataDir, { url, pid: process.pid, embedded: true, startedAt: '' });
    const resolved = resolveToolDatabase({}, dataDir);
    expect(resolved.url).toBe(url);
    expect(resolved.source).toBe('npm start');
    expect(resolved.description).toContain('postgresql://fin:***@127.0.0.1:54321/fin_api');
    expect(resolved.description).toContain(`process ${process.pid}`);
    expect(resolved.description).not.toContain('s3cret-pw');
  });

  it('says npm start is stopped when the recorded process has ended, and how to start it', () => {
    const pid = endedPid();
    recordLocalDatabase(dataDir, { url, pid, embedded: true, startedAt: '' });
    expect(() => resolveToolDatabase({}, dataDir)).toThrow(NoDatabaseError);
    expect(() => resolveToolDatabase({}, dataDir)).toThrow(
      `npm start is not running (process ${pid} has ended; its embedded database is stopped with it)`,
    );
    expect(() => resolveToolDatabase({}, dataDir)).toThrow('Start it with "npm start"');
  });

  it('says npm start has not run when there is no record (or an unreadable one)', () => {
    expect(() => resolveToolDatabase({}, dataDir)).toThrow('DATABASE_URL is not set and npm start has not run here');
    expect(() => resolveToolDatabase({}, undefined)).toThrow(NoDatabaseError);
  });

  it('finds the checkout from inside it', () => {
    expect(repositoryRoot(__dirname)).toBe(path.resolve(__dirname, '..', '..', '..'));
    expect(repositoryRoot(tmpdir())).toBeUndefined();
  });
});
