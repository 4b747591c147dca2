// `npm start`: the whole service on this machine, under Node 24 (scripts/bootstrap.sh has already provided it).
//
// - PostgreSQL: DATABASE_URL, default a `fin_api` database on the local server (created and migrated here).
// - Kafka: KAFKA_BROKERS, or else a local broker started from infra/kafka (JDK + Maven); without one, only the
//   gateway runs and the products answer 503.
// - Claude: ANTHROPIC_API_KEY, or else the labelled offline mode.
// Runs the gateway, the job-status service and the news service (API and worker), prints a development API key
// and a curl line, and stops everything on Ctrl-C.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = path.join(root, '.data');
mkdirSync(dataDir, { recursive: true });
const port = process.env.PORT || '8080';
const env = {
  ...process.env,
  DATABASE_URL: process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/fin_api',
  // Signs the identity the gateway forwards to the services; a fresh one per run is enough locally.
  INTERNAL_SIGNING_SECRET: process.env.INTERNAL_SIGNING_SECRET || randomBytes(32).toString('hex'),
  LOG_LEVEL: process.env.LOG_LEVEL || 'info',
};
const tsx = ['--conditions=development', '--import', 'tsx'];
const say = (line) => process.stdout.write(`${line}\n`);
const children = [];

function service(name, dir, extraEnv) {
  // Own process group: a terminal's Ctrl-C reaches only this script, which passes it on exactly once.
  const child = spawn(process.execPath, [...tsx, 'src/main.ts'], {
    cwd: path.join(root, dir),
    env: { ...env, ...extraEnv },
    stdio: 'inherit',
    detached: true,
  });
  child.on('exit', (code, signal) => {
    if (!stopping) {
      say(`${name} stopped unexpectedly (${signal ?? `exit ${code}`}); stopping everything.`);
      stop(1);
    }
  });
  children.push(child);
  return child;
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function runOnce(args, cwd, extraEnv = {}) {
  return spawnSync(process.execPath, [...tsx, ...args], { cwd, env: { ...env, ...extraEnv }, encoding: 'utf8' });
}

let stopping = false;
function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  Promise.all(children.map((child) => (child.exitCode === null ? new Promise((resolve) => child.once('exit', resolve)) : undefined))).then(() => {
    if (startedKafka) spawnSync('bash', ['infra/kafka/stop.sh'], { cwd: root, stdio: 'inherit', env: kafkaEnv });
    process.exit(code);
  });
}
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

// 1. Database.
const migration = runOnce(['src/cli.ts', 'migrate', '--create-database'], path.join(root, 'packages/db'));
process.stderr.write(migration.stderr);
if (migration.status !== 0) {
  say(`The database migration failed (exit ${migration.status}); is PostgreSQL reachable at DATABASE_URL?`);
  process.exit(migration.status ?? 1);
}

// 2. Kafka.
let startedKafka = false;
const kafkaEnv = { ...process.env, KAFKA_PORT: process.env.KAFKA_PORT || '19092', KAFKA_CONTROLLER_PORT: process.env.KAFKA_CONTROLLER_PORT || '19093', KAFKA_DATA_DIR: path.join(dataDir, 'kafka') };
if (!env.KAFKA_BROKERS) {
  // A broker that infra/kafka/start.sh started earlier (e.g. for tests) is reused and left running.
  const pidFile = path.join(root, 'infra/kafka/.run', kafkaEnv.KAFKA_PORT, 'kafka.pid');
  const alreadyRunning = existsSync(pidFile) && isAlive(Number(readFileSync(pidFile, 'utf8')));
  const kafka = spawnSync('bash', ['infra/kafka/start.sh'], { cwd: root, stdio: 'inherit', env: kafkaEnv });
  if (kafka.status === 0) {
    startedKafka = !alreadyRunning;
    env.KAFKA_BROKERS = `127.0.0.1:${kafkaEnv.KAFKA_PORT}`;
  } else {
    say('No Kafka broker (set KAFKA_BROKERS, or install a JDK and Maven): running the gateway only.');
  }
}

// 3. Services.
const ports = { news: '18081', jobs: '18085' };
if (env.KAFKA_BROKERS) {
  service('jobs', 'services/jobs', { PORT: ports.jobs });
  service('news', 'services/news', { PORT: ports.news, NEWS_ROLE: 'all' });
}
service('gateway', 'services/gateway', {
  PORT: port,
  NEWS_URL: `http://127.0.0.1:${ports.news}`,
  JOBS_URL: `http://127.0.0.1:${ports.jobs}`,
});

// 4. A development API key, kept in .data/ (git-ignored) and reused while it is valid.
async function waitReady() {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok) return true;
    } catch {
      // not yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

async function devKey() {
  const file = path.join(dataDir, 'dev-api-key');
  if (existsSync(file)) {
    const key = readFileSync(file, 'utf8').trim();
    const probe = await fetch(`http://127.0.0.1:${port}/api/jobs/news/00000000-0000-4000-8000-000000000000/status`, { headers: { 'X-API-Key': key } });
    if (probe.status !== 401) return key;
  }
  const gateway = path.join(root, 'services/gateway');
  runOnce(['src/admin/cli.ts', 'tenants', 'create', 'local-dev'], gateway);
  const created = runOnce(['src/admin/cli.ts', 'keys', 'create', '--tenant', 'local-dev', '--name', 'npm start', '--json'], gateway);
  if (created.status !== 0) throw new Error(created.stderr);
  const key = JSON.parse(created.stdout).api_key;
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}

if (await waitReady()) {
  const key = await devKey();
  say('');
  say(`  Financial Intelligence API  http://127.0.0.1:${port}   (docs: http://127.0.0.1:${port}/docs)`);
  say(`  Development API key         ${key}   (kept in .data/dev-api-key)`);
  say(`  Try it:`);
  say(`    curl -s -X POST http://127.0.0.1:${port}/api/products/news -H 'X-API-Key: ${key}' -H 'Content-Type: application/json' -d '{"symbols":["AAPL"],"n":3}'`);
  say(`  Then poll the status_url it returns, e.g.`);
  say(`    curl -s http://127.0.0.1:${port}/api/jobs/news/<job_id>/status -H 'X-API-Key: ${key}'`);
  say(env.ANTHROPIC_API_KEY ? '' : '  No ANTHROPIC_API_KEY: results come from the offline mode (sample data, marked offline).');
  say('  Ctrl-C stops everything.');
  say('');
} else {
  say('The gateway did not become ready; see the logs above.');
  stop(1);
}
