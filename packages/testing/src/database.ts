import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { runCommand } from './processes';

/**
 * A database per test file, cloned from a migrated template.
 *
 * The template is named after a hash of the migration files, so it is built once per change of the
 * schema (under an advisory lock, so parallel Jest workers wait for one build) and reused by later runs.
 * Each clone is named fin_t_<pid>_<random>; clones whose process is gone (a crashed run) are dropped.
 *
 * The server is TEST_DATABASE_URL (default: the local server on 127.0.0.1:5432 as postgres).
 */
const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const TEMPLATE_LOCK = 0x66696e74; // "fint"
// The db package's migrations, found by path: @fin/db depends on this package for its own tests.
const MIGRATIONS_DIR = path.join(__dirname, '../../db/migrations');

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

function urlFor(database: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

function migrationsHash(): string {
  const hash = createHash('sha256');
  for (const file of readdirSync(MIGRATIONS_DIR).sort()) {
    hash.update(file).update(readFileSync(path.join(MIGRATIONS_DIR, file)));
  }
  return hash.digest('hex').slice(0, 12);
}

async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL, application_name: 'fin-tests' });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Runs the real migration command (as deployments do) against `url`. */
export function runMigrationCommand(url: string, extraArgs: string[] = []): Promise<{ code: number; output: string }> {
  const dbPackage = path.dirname(MIGRATIONS_DIR);
  return runCommand(
    process.execPath,
    ['--conditions=development', '--import', 'tsx', path.join(dbPackage, 'src/cli.ts'), 'migrate', ...extraArgs],
    {
      cwd: dbPackage,
      env: { ...process.env, DATABASE_URL: url },
    },
  );
}

async function ensureTemplate(admin: pg.Client): Promise<string> {
  const template = `fin_tpl_${migrationsHash()}`;
  await admin.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [template]);
    if (rowCount) return template;
    const building = `${template}_building`;
    await admin.query(`DROP DATABASE IF EXISTS "${building}"`);
    await admin.query(`CREATE DATABASE "${building}"`);
    const { code, output } = await runMigrationCommand(urlFor(building));
    if (code !== 0) throw new Error(`Migrating the test template failed:\n${output}`);
    await admin.query(`ALTER DATABASE "${building}" RENAME TO "${template}"`);
    // Templates of older schemas are no longer used.
    const old = await admin.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname LIKE 'fin\\_tpl\\_%' AND datname <> $1",
      [template],
    );
    for (const row of old.rows) await admin.query(`DROP DATABASE IF EXISTS "${row.datname}" WITH (FORCE)`);
    return template;
  } finally {
    await admin.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK]);
  }
}

async function dropAbandoned(admin: pg.Client): Promise<void> {
  const { rows } = await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'fin\\_t\\_%'");
  for (const { datname } of rows) {
    const pid = Number(datname.split('_')[2]);
    if (!Number.isInteger(pid) || isAlive(pid)) continue;
    await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A fresh, fully migrated database of its own. Call `drop()` in afterAll. */
export async function createTestDatabase(): Promise<TestDatabase> {
  return withAdmin(async (admin) => {
    await dropAbandoned(admin);
    const template = await ensureTemplate(admin);
    const name = `fin_t_${process.pid}_${randomBytes(4).toString('hex')}`;
    await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
    return {
      name,
      url: urlFor(name),
      drop: () =>
        withAdmin(async (client) => {
          await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        }),
    };
  });
}

/** An empty database (not migrated), for tests of the migration runner itself. */
export async function createEmptyDatabase(): Promise<TestDatabase> {
  return withAdmin(async (admin) => {
    const name = `fin_t_${process.pid}_${randomBytes(4).toString('hex')}`;
    await admin.query(`CREATE DATABASE "${name}"`);
    return {
      name,
      url: urlFor(name),
      drop: () =>
        withAdmin(async (client) => {
          await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        }),
    };
  });
}
