#!/usr/bin/env node
/**
 * Database command line for operators and for the Kubernetes migration Job:
 *   fin-db migrate [--create-database]
 * Reads DATABASE_URL; in a checkout without it, the database of the running `npm start` (local-database.ts).
 * Says which database it works on. Exits non-zero on any failure.
 */
import { loadConfig, url } from '@fin/config';
import { NoDatabaseError, resolveToolDatabase } from './local-database';
import { ensureDatabase, migrate } from './migrate';

const USAGE = 'usage: fin-db migrate [--create-database]';

async function main(argv: string[]): Promise<number> {
  const [command, ...flags] = argv;
  if (command !== 'migrate') {
    process.stderr.write(`${USAGE}\n`);
    return 64;
  }
  const say = (message: string) => process.stderr.write(`[migrate] ${message}\n`);
  let database;
  try {
    database = resolveToolDatabase();
  } catch (error) {
    if (!(error instanceof NoDatabaseError)) throw error;
    say(error.message);
    return 1;
  }
  const config = loadConfig({ DATABASE_URL: url(['postgres', 'postgresql']) }, { DATABASE_URL: database.url });
  say(`database: ${database.description}`);
  if (flags.includes('--create-database') && (await ensureDatabase(config.DATABASE_URL))) say('created the database');
  const ran = await migrate({ databaseUrl: config.DATABASE_URL });
  say(ran.length === 0 ? 'already up to date' : `applied ${ran.join(', ')}`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`[migrate] failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
