// `npm start` as the tests run it: the launcher (scripts/start.mjs, what `npm start` runs under the bootstrap's
// Node) in a process of its own, with only PATH and the given environment, its output collected.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, runCommand, waitFor } from '@fin/testing';

export const REPOSITORY_ROOT = path.resolve(__dirname, '..', '..', '..');

export interface Launched {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  /** Asks the launcher to stop the system; after 10 s a second signal makes it kill the system at once. */
  forceStop: () => Promise<void>;
}

/**
 * Compiles the workspace (`npm run build`'s script) once before the launches, so that a launch's own build is the
 * up-to-date check and the banner comes within the tests' waits also on a fresh clone.
 */
export async function buildOnce(): Promise<void> {
  const built = await runCommand(process.execPath, [path.join(REPOSITORY_ROOT, 'scripts/build.mjs')], { cwd: REPOSITORY_ROOT });
  if (built.code !== 0) throw new Error(`the build failed:\n${built.output}`);
}

export function launchNpmStart(env: Record<string, string>): Launched {
  const child = spawn(process.execPath, [path.join(REPOSITORY_ROOT, 'scripts/start.mjs')], {
    cwd: REPOSITORY_ROOT,
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => output,
    exited,
    async forceStop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const again = setTimeout(() => child.kill('SIGTERM'), 10_000);
      await exited;
      clearTimeout(again);
    },
  };
}

/** A data folder of its own for one test's npm start, and its removal. */
export function dataFolder(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), `${prefix}-`));
  // As root, PostgreSQL runs as the postgres user, which must be able to enter the folder (mkdtemp makes it 700).
  chmodSync(dir, 0o755);
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface Started {
  running: Launched;
  /** The API's address: http://127.0.0.1:<port>. */
  baseUrl: string;
  /** The development API key the banner prints. */
  apiKey: string;
}

/** npm start on a free port with `dataDir` and `env`, once its banner is printed. */
export async function startNpmStart(dataDir: string, env: Record<string, string> = {}): Promise<Started> {
  const port = await freePort();
  const running = launchNpmStart({ DATA_DIR: dataDir, PORT: String(port), ...env });
  try {
    await waitFor(() => running.output().includes('Ctrl-C stops everything') || running.child.exitCode !== null, {
      timeoutMs: 45_000,
      what: 'the banner',
    });
    const apiKey = /X-API-Key: (fin_\w+)/.exec(running.output())?.[1];
    if (apiKey === undefined) throw new Error(`npm start printed no development key:\n${running.output()}`);
    return { running, baseUrl: `http://127.0.0.1:${port}`, apiKey };
  } catch (error) {
    await running.forceStop();
    throw error;
  }
}

/** The inodes of the sockets the process `pid` holds open (Linux). */
function socketInodes(pid: number): Set<string> {
  return new Set(
    readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
      try {
        const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
        return inode === undefined ? [] : [inode];
      } catch {
        return [];
      }
    }),
  );
}

interface TcpEntry {
  localPort: number;
  remotePort: number;
  /** The kernel's state code: 01 established, 0A listening, 06 time-wait, … */
  state: string;
  inode: string;
}

/** The machine's TCP sockets, from /proc/net/tcp and tcp6. */
function tcpEntries(): TcpEntry[] {
  const port = (address: string | undefined) => parseInt(address?.split(':')[1] ?? '', 16);
  return ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((table) =>
    readFileSync(table, 'utf8')
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .filter((fields) => fields.length > 9)
      .map((fields) => ({ localPort: port(fields[1]), remotePort: port(fields[2]), state: fields[3] ?? '', inode: fields[9] ?? '' })),
  );
}

/**
 * The TCP ports the process `pid` itself listens on (Linux): its sockets that are LISTEN entries of /proc/net/tcp and
 * tcp6 (state 0A). The processes it started (the embedded PostgreSQL) are not counted.
 */
function listeningPorts(pid: number): number[] {
  const inodes = socketInodes(pid);
  const ports = tcpEntries()
    .filter((entry) => entry.state === '0A' && inodes.has(entry.inode))
    .map((entry) => entry.localPort);
  return [...new Set(ports)].sort((a, b) => a - b);
}

/** The connections the process `pid` holds to `port` as a client (Linux): e.g. a process calling its own API. */
export function connectionsTo(pid: number, port: number): { localPort: number; state: string }[] {
  const inodes = socketInodes(pid);
  return tcpEntries()
    .filter((entry) => entry.remotePort === port && inodes.has(entry.inode))
    .map(({ localPort, state }) => ({ localPort, state }));
}

/** The process id of the system npm start runs, as it recorded it in DATA_DIR/database.json. */
export function systemPid(dataDir: string): number {
  return (JSON.parse(readFileSync(path.join(dataDir, 'database.json'), 'utf8')) as { pid: number }).pid;
}

/** The command line, environment and listening ports of the system process npm start recorded in DATA_DIR/database.json (Linux). */
export function recordedProcess(dataDir: string): { argv: string[]; cwd: string; env: Record<string, string>; ports: number[] } {
  const pid = systemPid(dataDir);
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    .split('\0')
    .filter((arg) => arg !== '');
  const env = Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter((entry) => entry.includes('='))
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
  return { argv, cwd: readlinkSync(`/proc/${pid}/cwd`), env, ports: listeningPorts(pid) };
}
