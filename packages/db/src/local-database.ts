// How the repository's own tools (the admin CLI, `npm run migrate`) find the database when DATABASE_URL is not
// set: `npm start` records the URL of the database it runs on in DATA_DIR/database.json (mode 600, git-ignored,
// with the process id that owns it), and a tool reads it back. The record outlives the process, so a tool can
// tell "npm start is stopped" from "npm start never ran" and say which, and how to go on.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { hideUrlPassword } from '@fin/config';

export const LOCAL_DATABASE_FILE = 'database.json';

export interface LocalDatabaseRecord {
  /** The connection URL, password included (hence the file's mode). */
  url: string;
  /** The `npm start` process that runs (or ran) the system. */
  pid: number;
  /** True when the database is the embedded one, which stops with the process. */
  embedded: boolean;
  startedAt: string;
}

/** Where a tool should connect, and how to tell the user which database that is. */
export interface ResolvedDatabase {
  url: string;
  source: 'DATABASE_URL' | 'npm start';
  /** One line for the user: the URL without its password and where it came from. */
  description: string;
}

/** Raised when no database can be found; its message says what to do. */
export class NoDatabaseError extends Error {
  override readonly name = 'NoDatabaseError';
}

/** The checkout's root (the folder holding pnpm-workspace.yaml above this file), or undefined in an image. */
export function repositoryRoot(from: string = __dirname): string | undefined {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'pnpm-workspace.yaml'))) return dir;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/** DATA_DIR, else <checkout>/.data; undefined outside a checkout. */
function localDataDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.DATA_DIR) return path.resolve(env.DATA_DIR);
  const root = repositoryRoot();
  return root === undefined ? undefined : path.join(root, '.data');
}

/** Written by `npm start` once its database is up; replaced atomically, readable by the user alone. */
export function recordLocalDatabase(dataDir: string, record: LocalDatabaseRecord): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, LOCAL_DATABASE_FILE);
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporary, file);
}

export function readLocalDatabase(dataDir: string): LocalDatabaseRecord | undefined {
  let raw: string;
  try {
    raw = readFileSync(path.join(dataDir, LOCAL_DATABASE_FILE), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const parsed = JSON.parse(raw) as Partial<LocalDatabaseRecord>;
    if (typeof parsed.url !== 'string' || typeof parsed.pid !== 'number') return undefined;
    return { url: parsed.url, pid: parsed.pid, embedded: parsed.embedded === true, startedAt: parsed.startedAt ?? '' };
  } catch {
    return undefined;
  }
}

/** Whether a process with this id exists (EPERM: it does, owned by someone else). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * DATABASE_URL when set; otherwise the database of the `npm start` that is running from this checkout (or
 * DATA_DIR). Throws NoDatabaseError, with what to do, when neither is available.
 */
export function resolveToolDatabase(env: NodeJS.ProcessEnv = process.env, dataDir = localDataDir(env)): ResolvedDatabase {
  const configured = env.DATABASE_URL?.trim();
  if (configured) return { url: configured, source: 'DATABASE_URL', description: `${hideUrlPassword(configured)} (DATABASE_URL)` };
  const record = dataDir === undefined ? undefined : readLocalDatabase(dataDir);
  const howToStart = 'Start it with "npm start" in another terminal (this command then uses its database), or set DATABASE_URL.';
  if (!record) throw new NoDatabaseError(`no database: DATABASE_URL is not set and npm start has not run here. ${howToStart}`);
  if (!isRunning(record.pid)) {
    const which = record.embedded ? 'its embedded database is stopped with it' : `its database was ${hideUrlPassword(record.url)}`;
    throw new NoDatabaseError(`npm start is not running (process ${record.pid} has ended; ${which}). ${howToStart}`);
  }
  return {
    url: record.url,
    source: 'npm start',
    description: `${hideUrlPassword(record.url)} (the database of npm start, process ${record.pid}, from ${path.join(dataDir as string, LOCAL_DATABASE_FILE)})`,
  };
}
