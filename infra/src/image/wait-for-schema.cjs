#!/usr/bin/env node
// Init container of every Kubernetes Deployment (k8s/base): waits until the database holds every migration this
// image knows, so a new version never serves against an older schema. It only reads; the migration Job applies
// the migrations (docs/deployment.md, "Migrations"). Migrations this image does not know are accepted: they mean a
// newer version migrated the database (a rollback, or old pods during a rollout), and migrations are additive.
// Refusing a newer database is the migrator's rule, not the services'.
//
//   DATABASE_URL (required), SCHEMA_WAIT_TIMEOUT_S (default 600). Exit 0 ready, 1 timed out, 78 bad configuration.
'use strict';

const path = require('node:path');

const app = path.join(__dirname, '..');
const { int, loadConfig, url } = require(path.join(app, 'packages/config/dist/index.js'));
const { createPool, knownMigrations } = require(path.join(app, 'packages/db/dist/index.js'));

// node-pg-migrate's table, as packages/db/src/migrate.ts configures it.
const MIGRATIONS_TABLE = 'pgmigrations';
const POLL_MS = 2_000;

const config = loadConfig({
  DATABASE_URL: url(['postgres', 'postgresql']),
  SCHEMA_WAIT_TIMEOUT_S: int(1, 86_400).default(600),
});
const say = (message) => process.stderr.write(`[wait-for-schema] ${message}\n`);

async function missingMigrations(pool) {
  const known = knownMigrations();
  const { rows } = await pool.query('SELECT to_regclass($1) IS NOT NULL AS present', [`public.${MIGRATIONS_TABLE}`]);
  if (!rows[0].present) return known;
  const applied = new Set((await pool.query(`SELECT name FROM ${MIGRATIONS_TABLE}`)).rows.map((row) => row.name));
  return known.filter((name) => !applied.has(name));
}

async function main() {
  const pool = createPool({ connectionString: config.DATABASE_URL, applicationName: 'fin-wait-for-schema', max: 1 });
  const deadline = Date.now() + config.SCHEMA_WAIT_TIMEOUT_S * 1_000;
  let last = '';
  try {
    for (;;) {
      let status;
      try {
        const missing = await missingMigrations(pool);
        if (missing.length === 0) {
          say('the database has every migration this image knows');
          return 0;
        }
        status = `waiting for the migration Job to apply ${missing.join(', ')}`;
      } catch (error) {
        status = `database not reachable yet (${error instanceof Error ? error.message : String(error)})`;
      }
      if (status !== last) say(status);
      last = status;
      const left = deadline - Date.now();
      if (left <= 0) {
        say(`gave up after ${config.SCHEMA_WAIT_TIMEOUT_S} s`);
        return 1;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, left)));
    }
  } finally {
    await pool.end();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    say(`failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  },
);
