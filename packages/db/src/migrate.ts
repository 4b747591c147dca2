import { readdirSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';

/** SQL migrations, numbered by their timestamp prefix; the same folder in the source tree and in images. */
export const MIGRATIONS_DIR = path.join(__dirname, '..', 'migrations');
const MIGRATIONS_TABLE = 'pgmigrations';

export interface MigrateOptions {
  databaseUrl: string;
  log?: (message: string) => void;
}

/** The migration names this build knows, in order (file names without extension, as node-pg-migrate records them). */
export function knownMigrations(): string[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((file) => file.endsWith('.sql'))
    .map((file) => file.replace(/\.sql$/, ''))
    .sort();
}

class DatabaseNewerError extends Error {
  constructor(readonly unknown: string[]) {
    super(
      `The database has migrations this build does not know (${unknown.join(', ')}): it was migrated by a newer version. Refusing to run.`,
    );
    this.name = 'DatabaseNewerError';
  }
}

/**
 * Brings the database up to date. All pending migrations run in one transaction (all or nothing) under
 * node-pg-migrate's advisory lock: a concurrent run (several pods, or `npm run dev` in several terminals, starting
 * at once) waits for it and then finds nothing to do, as a later run does. A database that has migrations this
 * build does not know is refused.
 */
export async function migrate({ databaseUrl, log = () => undefined }: MigrateOptions): Promise<string[]> {
  const known = new Set(knownMigrations());
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'fin-migrate' });
  await client.connect();
  try {
    const { rows } = await client.query<{ exists: boolean }>('SELECT to_regclass($1) IS NOT NULL AS exists', [
      `public.${MIGRATIONS_TABLE}`,
    ]);
    if (rows[0]?.exists) {
      const applied = await client.query<{ name: string }>(`SELECT name FROM ${MIGRATIONS_TABLE}`);
      const unknown = applied.rows.map((row) => row.name).filter((name) => !known.has(name));
      if (unknown.length > 0) throw new DatabaseNewerError(unknown);
    }
    // node-pg-migrate is an ES module; this file is CommonJS, so it is loaded with a dynamic import.
    const { runner } = await import('node-pg-migrate');
    const ran = await runner({
      dbClient: client,
      dir: MIGRATIONS_DIR,
      direction: 'up',
      migrationsTable: MIGRATIONS_TABLE,
      checkOrder: true,
      singleTransaction: true,
      advisoryLockMode: 'wait',
      verbose: false,
      log,
      logger: { debug: () => undefined, info: log, warn: log, error: log },
    });
    return ran.map((migration) => migration.name);
  } finally {
    await client.end();
  }
}

/** Creates the database named in `databaseUrl` when it does not exist (connecting to its server's `postgres` database). */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const target = new URL(databaseUrl);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!/^[a-zA-Z0-9_-]{1,63}$/.test(name)) throw new Error(`Unusable database name "${name}"`);
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString(), application_name: 'fin-migrate' });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return false;
    await client.query(`CREATE DATABASE "${name}"`);
    return true;
  } catch (error) {
    // Another process created it between the check and the CREATE: 42P04 when it had committed, 23505 (the
    // catalog's unique index) when both CREATEs ran at once.
    const code = (error as { code?: string }).code;
    if (code === '42P04' || code === '23505') return false;
    throw error;
  } finally {
    await client.end();
  }
}
