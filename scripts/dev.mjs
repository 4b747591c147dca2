// `npm run dev -- <service>`: one service in watch mode (its `dev` script: tsx watch), under the Node 24 that
// scripts/bootstrap.sh provides, whatever Node the machine has. What the service needs and the README's steps do
// not set comes from here:
//   DATABASE_URL   postgresql://postgres@127.0.0.1:5432/fin_api, created when missing and migrated before start
//   KAFKA_BROKERS  127.0.0.1:19092, the broker of `npm run kafka:start`
//   secrets        INTERNAL_SIGNING_SECRET, CUSTOMER_TOOLS_ENCRYPTION_KEY, PORTAL_SESSION_SECRET: generated once into
//                  DATA_DIR/dev.env (default .data/dev.env, git-ignored, mode 600) and read by every later run, so
//                  services started in separate terminals agree on them.
// A variable set in the environment wins over all of these.
//
// The service runs in a process group of its own: a terminal's Ctrl-C (which npm also forwards) reaches only this
// script, which asks the service once to shut down in order and exits with its status. A second Ctrl-C, later,
// stops it at once. Exit status: 64 unknown service, 69 PostgreSQL or Kafka unreachable, else the service's.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const EX_USAGE = 64;
const EX_UNAVAILABLE = 69;

/** Every service that runs alone, and whether it needs Kafka (the others use only PostgreSQL). */
const SERVICES = {
  gateway: { kafka: false },
  news: { kafka: true },
  'stock-report': { kafka: true },
  analysis: { kafka: true },
  chat: { kafka: false },
  jobs: { kafka: true },
  portal: { kafka: false },
  // Calls the API through the gateway (MCP_API_URL, default http://127.0.0.1:8080).
  mcp: { kafka: false },
};
const DEFAULTS = {
  DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/fin_api',
  KAFKA_BROKERS: '127.0.0.1:19092',
};
const SECRETS = {
  INTERNAL_SIGNING_SECRET: () => randomBytes(32).toString('hex'),
  CUSTOMER_TOOLS_ENCRYPTION_KEY: () => `k1:${randomBytes(32).toString('base64')}`,
  PORTAL_SESSION_SECRET: () => randomBytes(32).toString('hex'),
};

const say = (message) => process.stderr.write(`[dev] ${message}\n`);
const fail = (code, message) => {
  say(message);
  process.exit(code);
};

/** `KEY=value` lines; blank lines and `#` comments are skipped. */
function parseEnvFile(text) {
  const values = {};
  for (const line of text.split('\n')) {
    const match = /^\s*([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (match) values[match[1]] = match[2].trim();
  }
  return values;
}

/**
 * The development secrets of this checkout, generated on first use. The file appears complete or not at all:
 * it is written under a temporary name and linked into place, and link() fails when another launcher got there
 * first, in which case that launcher's secrets are used.
 */
function devSecrets(file) {
  let text;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if (error.code !== 'ENOENT') throw error;
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const lines = Object.entries(SECRETS).map(([name, generate]) => `${name}=${generate()}`);
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(
      temporary,
      [
        '# Secrets of `npm run dev` (scripts/dev.mjs), shared by every service it starts from this checkout. For local',
        '# development only. Delete this file to have new ones generated; a variable set in the environment wins.',
        ...lines,
        '',
      ].join('\n'),
      { mode: 0o600, flag: 'wx' },
    );
    try {
      linkSync(temporary, file);
    } catch (linkError) {
      if (linkError.code !== 'EEXIST') throw linkError;
    } finally {
      rmSync(temporary, { force: true });
    }
    text = readFileSync(file, 'utf8');
  }
  const values = parseEnvFile(text);
  const missing = Object.keys(SECRETS).filter((name) => !values[name]);
  if (missing.length > 0) fail(1, `${file} lacks ${missing.join(', ')}: delete it to have every secret generated again.`);
  return values;
}

/** The URL with its password replaced, for printing. */
function redacted(databaseUrl) {
  try {
    const url = new URL(databaseUrl);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return '(DATABASE_URL is not a URL)';
  }
}

/** Whether something accepts TCP connections at host:port within `timeoutMs`. */
function accepts(address, timeoutMs = 3_000) {
  const separator = address.lastIndexOf(':');
  const host = address.slice(0, separator).replace(/^\[(.*)\]$/, '$1');
  const port = Number(address.slice(separator + 1));
  if (separator <= 0 || !Number.isInteger(port)) return Promise.resolve(false);
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (result) => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET']);

/** Creates the database when it is missing and applies pending migrations (the @fin/db migrator). */
async function prepareDatabase(databaseUrl) {
  const { tsImport } = await import('tsx/esm/api');
  const { ensureDatabase, migrate } = await tsImport('../packages/db/src/migrate.ts', import.meta.url);
  try {
    const created = await ensureDatabase(databaseUrl);
    const applied = await migrate({ databaseUrl });
    if (created || applied.length > 0) {
      say(`${created ? 'created the database; ' : ''}applied ${applied.length} migration${applied.length === 1 ? '' : 's'}`);
    }
  } catch (error) {
    const code = error?.code ?? error?.errors?.[0]?.code;
    if (UNREACHABLE.has(code)) {
      fail(
        EX_UNAVAILABLE,
        `PostgreSQL is not reachable at ${redacted(databaseUrl)} (${code}): start it, or set DATABASE_URL to a server you can reach.`,
      );
    }
    fail(EX_UNAVAILABLE, `the database at ${redacted(databaseUrl)} is not usable: ${String(error?.message ?? error).split('\n')[0]}`);
  }
}

async function main() {
  const name = process.argv[2];
  if (process.argv.length !== 3 || !Object.hasOwn(SERVICES, name)) {
    say(
      `${name === undefined ? 'which service?' : `unknown service "${process.argv.slice(2).join(' ')}".`} usage: npm run dev -- <service>`,
    );
    say(`services: ${Object.keys(SERVICES).join(', ')}`);
    process.exit(EX_USAGE);
  }
  if (Number(process.versions.node.split('.')[0]) < 22) {
    fail(
      1,
      `Node ${process.version} is too old for the services; run this as "npm run dev -- ${name}" (scripts/bootstrap.sh provides Node 24).`,
    );
  }

  const dataDir = process.env.DATA_DIR ? path.resolve(process.env.DATA_DIR) : path.join(root, '.data');
  const secretsFile = path.join(dataDir, 'dev.env');
  const set = Object.fromEntries(Object.entries(process.env).filter(([, value]) => value !== undefined && value.trim() !== ''));
  const env = { ...DEFAULTS, ...devSecrets(secretsFile), ...set };
  // The dev script's tsx starts with the `node` on PATH: it must be this Node, not the machine's.
  const pathEntries = [path.dirname(process.execPath), ...(process.env.PATH ?? '').split(path.delimiter)];
  env.PATH = [...new Set(pathEntries.filter((entry) => entry !== ''))].join(path.delimiter);

  const { kafka } = SERVICES[name];
  const brokers = env.KAFKA_BROKERS.split(',')
    .map((broker) => broker.trim())
    .filter((broker) => broker !== '');
  say(
    `${name} on Node ${process.version}: database ${redacted(env.DATABASE_URL)}, ` +
      `${kafka ? `Kafka ${brokers.join(',')}` : 'no Kafka'}, secrets ${secretsFile.startsWith(`${root}${path.sep}`) ? path.relative(root, secretsFile) : secretsFile}`,
  );
  if (kafka && !(await Promise.all(brokers.map((broker) => accepts(broker)))).some(Boolean)) {
    fail(
      EX_UNAVAILABLE,
      `Kafka is not reachable at ${brokers.join(',')}: start a broker with "npm run kafka:start", or set KAFKA_BROKERS.`,
    );
  }
  await prepareDatabase(env.DATABASE_URL);

  // The service's own `dev` script (one command: tsx watch), run as `pnpm run dev` would run it but without pnpm in
  // between, which exits on SIGTERM without passing it on. `exec` leaves tsx as the child: it relays the signal to
  // the service, waits for its orderly shutdown and exits with its status.
  const serviceDir = path.join(root, 'services', name);
  const script = JSON.parse(readFileSync(path.join(serviceDir, 'package.json'), 'utf8')).scripts?.dev;
  if (typeof script !== 'string') fail(1, `services/${name}/package.json has no "dev" script`);
  const bins = [path.join(serviceDir, 'node_modules/.bin'), path.join(root, 'node_modules/.bin')];
  const child = spawn('sh', ['-c', `exec ${script}`], {
    cwd: serviceDir,
    env: { ...env, PATH: [...bins, env.PATH].join(path.delimiter) },
    stdio: ['pipe', 'inherit', 'inherit'],
    detached: true,
  });
  child.on('error', (error) => fail(1, `could not start the service: ${error.message}`));
  // A process outside the terminal's foreground group may not read it (SIGTTIN): tsx watch's "Return reruns" gets
  // the terminal's input through this process.
  child.stdin.on('error', () => undefined);
  process.stdin.pipe(child.stdin);
  // npm forwards the terminal's Ctrl-C, which this process also receives itself: signals that close together are
  // one request. A later one, while the service is still shutting down, stops it at once.
  let firstSignalAt;
  const forward = () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const now = Date.now();
    if (firstSignalAt === undefined) {
      firstSignalAt = now;
      child.kill('SIGTERM');
    } else if (now - firstSignalAt > 1_000) {
      process.kill(-child.pid, 'SIGKILL');
    }
  };
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

await main();
