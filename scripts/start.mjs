// `npm start`: runs the service locally under Node 24 (scripts/bootstrap.sh has already provided it).
// Today that is the database migration and the gateway; later issues add every service and worker here.
// DATABASE_URL defaults to a `fin_api` database on the local PostgreSQL server (created when missing).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const env = {
  ...process.env,
  DATABASE_URL: process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/fin_api',
  PORT: process.env.PORT || '8080',
  // Signs the identity the gateway forwards to the services it starts; a fresh one per run is enough locally.
  INTERNAL_SIGNING_SECRET: process.env.INTERNAL_SIGNING_SECRET || randomBytes(32).toString('hex'),
};
const tsx = ['--conditions=development', '--import', 'tsx'];

function run(args, cwd) {
  // Own process group: a terminal's Ctrl-C reaches only this script, which passes it on exactly once.
  return spawn(process.execPath, [...tsx, ...args], { cwd, env, stdio: 'inherit', detached: true });
}

const migration = run(['src/cli.ts', 'migrate', '--create-database'], path.join(root, 'packages/db'));
migration.on('exit', (code) => {
  if (code !== 0) {
    console.error(`The database migration failed (exit ${code}); is PostgreSQL reachable at DATABASE_URL?`);
    process.exit(code ?? 1);
  }
  const gateway = run(['src/main.ts'], path.join(root, 'services/gateway'));
  console.log(`\n  Financial Intelligence API: http://127.0.0.1:${env.PORT}  (health: /healthz, readiness: /readyz)\n`);
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => gateway.kill(signal));
  gateway.on('exit', (exitCode, signal) => process.exit(exitCode ?? (signal ? 0 : 1)));
});
