// Child processes of a benchmark (the servers under load) and the clean-up that must run however the benchmark
// ends: every child is stopped by its pid, every database dropped, also on an error or Ctrl-C.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { note } from './output';

/** The repository root (from bench/src/lib, or bench/dist/lib where the servers of the benchmarks run). */
export const REPO_ROOT = path.resolve(__dirname, '../../..');

/**
 * Compiles what changed since the last build (`npm run build`: one `tsc -b` over every package and service, and the
 * benchmarks' own servers, bench/tsconfig.build.json), so that every server a benchmark starts runs the compiled
 * output, as the images do. Up to date, it takes a few seconds.
 */
export function buildCompiledOutput(): void {
  note('compiling what changed since the last build (scripts/build.mjs: tsc -b)');
  const built = spawnSync(process.execPath, [path.join(REPO_ROOT, 'scripts/build.mjs')], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (built.status !== 0) throw new Error(`the build failed (${built.status ?? built.signal}); the benchmarks measure the compiled output`);
}

/**
 * A module of a workspace package's compiled output, typed by its source, for a benchmark server that uses a part
 * of a package it does not export: `import type * as App from '…/services/gateway/src/app'`, then
 * `compiledModule('services/gateway', 'app') as typeof App` loads services/gateway/dist/app.js.
 */
export function compiledModule(packageDir: string, modulePath: string): unknown {
  return createRequire(path.join(REPO_ROOT, packageDir, 'package.json'))(path.join(REPO_ROOT, packageDir, 'dist', `${modulePath}.js`));
}

/** Clean-up steps, run last-registered first. */
export class Cleanup {
  private readonly steps: { name: string; run: () => Promise<void> }[] = [];

  add(name: string, run: () => Promise<void>): void {
    this.steps.push({ name, run });
  }

  private running: Promise<void> | undefined;

  /** Runs every step; a call while a run is under way (Ctrl-C during the final clean-up) joins that run. */
  runAll(): Promise<void> {
    this.running ??= this.drain().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async drain(): Promise<void> {
    while (this.steps.length > 0) {
      const step = this.steps.pop();
      if (step === undefined) break;
      try {
        await step.run();
      } catch (error) {
        note(`clean-up "${step.name}" failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }
}

/**
 * Runs `work` with a Cleanup that runs however it ends: on success, on an error, and on Ctrl-C or SIGTERM (then
 * the process exits with 130 once clean-up is done).
 */
export async function withCleanup<T>(work: (cleanup: Cleanup) => Promise<T>): Promise<T> {
  const cleanup = new Cleanup();
  const onSignal = (signal: NodeJS.Signals) => {
    note(`${signal}: stopping every process of the run, deleting its topics, dropping its database`);
    void cleanup.runAll().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await work(cleanup);
  } finally {
    await cleanup.runAll();
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

/** A port that was free a moment ago (the kernel picks it; the child binds it right after). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * The log level the services run at: the production one (k8s/base/kustomization.yaml and docker-compose.yml set
 * LOG_LEVEL=info), so that every request pays for its access log line as it does in production.
 */
export const BENCH_LOG_LEVEL = 'info';

/**
 * Where the run's processes write stdout and stderr: a file each, under bench/.logs/ (git-ignored), like a
 * container runtime writing a pod's log. A file rather than a pipe to the runner: the runner is also the load
 * generator, and reading tens of thousands of log lines a second would take CPU from it. The folder is removed
 * when the process that made it exits, unless BENCH_KEEP_LOGS is set.
 */
let logDir: string | undefined;

function logFile(name: string): string {
  if (logDir === undefined) {
    const dir = path.join(REPO_ROOT, 'bench/.logs', `${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    if (!process.env.BENCH_KEEP_LOGS) process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    logDir = dir;
  }
  return path.join(logDir, `${name.replace(/[^\w.-]+/g, '-')}-${Date.now()}.log`);
}

/** The last `bytes` of a file, for error messages. */
function tailOf(file: string, bytes: number): string {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const size = fstatSync(fd).size;
    const length = Math.min(size, bytes);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    return buffer.toString('utf8');
  } catch (error) {
    return `(could not read ${file}: ${error instanceof Error ? error.message : String(error)})`;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

export interface NodeProcessOptions {
  /** Shown in messages. */
  name: string;
  /** A compiled entry point (dist/…/*.js), relative to `cwd`; run with plain node, as the images run it. */
  entry: string;
  env: Record<string, string>;
  /** Extra node flags (e.g. --cpu-prof). NODE_OPTIONS in `env` are added after the production ones. */
  nodeFlags?: readonly string[];
  /** The working directory (default: the repository root). */
  cwd?: string;
  /** Whether the child gets the runner's environment besides `env` (default true). */
  inheritEnv?: boolean;
}

export interface NodeProcess {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** The last `bytes` the process wrote (a few KB by default), for the error message when it fails. */
  output(bytes?: number): string;
  /** Sends `signal` (SIGTERM), then SIGKILL if it has not exited after `graceMs`. Resolves once it has exited. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

const OUTPUT_TAIL = 8 * 1024;

/**
 * The NODE_OPTIONS of the production image (the Dockerfile's runtime ENV): every server the benchmarks start runs
 * with them, so that what is measured is what ships (V8's young-generation size decides the GC pauses, the tail).
 */
export const PRODUCTION_NODE_OPTIONS = ((): string => {
  const dockerfile = readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8');
  const match = /\bNODE_OPTIONS=(?:"([^"]*)"|(\S+))/.exec(dockerfile);
  if (match === null) throw new Error('the Dockerfile sets no NODE_OPTIONS');
  return match[1] ?? match[2] ?? '';
})();

/**
 * Starts `node <entry>` as a process of its own, with the production image's NODE_OPTIONS (and those of `env`
 * after them: a preloaded hook), its output to a file.
 */
export function startNodeProcess({
  name,
  entry,
  env,
  nodeFlags = [],
  cwd = REPO_ROOT,
  inheritEnv = true,
}: NodeProcessOptions): NodeProcess {
  const file = logFile(name);
  const fd = openSync(file, 'a');
  let child: ChildProcess;
  try {
    const nodeOptions = [PRODUCTION_NODE_OPTIONS, env.NODE_OPTIONS ?? ''].filter((options) => options !== '').join(' ');
    child = spawn(process.execPath, [...nodeFlags, path.resolve(cwd, entry)], {
      cwd,
      env: { ...(inheritEnv ? process.env : {}), ...env, NODE_OPTIONS: nodeOptions },
      stdio: ['ignore', fd, fd],
    });
  } finally {
    closeSync(fd);
  }
  if (child.pid === undefined) throw new Error(`could not start ${name}`);
  let spawnError = '';
  // A failure to spawn or signal the process is reported through its output (and waitUntilReady), not thrown.
  child.on('error', (error) => {
    spawnError += `\n[bench] ${name}: ${error.message}\n`;
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const pid = child.pid;
  return {
    name,
    pid,
    child,
    output: (bytes = OUTPUT_TAIL) => tailOf(file, bytes) + spawnError,
    async stop(signal = 'SIGTERM', graceMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Starts a service as its image does (`node dist/main.js` in the service's folder; buildCompiledOutput has run), with
 * PATH and the given environment only, at the production log level.
 */
export function startService(name: string, dir: string, env: Record<string, string>): NodeProcess {
  return startNodeProcess({
    name,
    entry: 'dist/main.js',
    cwd: path.join(REPO_ROOT, 'services', dir),
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: BENCH_LOG_LEVEL, ...env },
    // For diagnosis: BENCH_NODE_FLAGS="--trace-gc" (with BENCH_KEEP_LOGS=1 to keep what the services print).
    nodeFlags: (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter((flag) => flag !== ''),
    inheritEnv: false,
  });
}

/**
 * The base URL a process prints once it listens (`pattern`'s first group), for a process started on port 0: the
 * kernel picks a free port as it binds, so nothing else on the machine (a developer's `npm start` on 8080 and
 * 9090) can collide with it, nor take it between a probe and the bind.
 */
export async function listeningUrl(proc: NodeProcess, pattern: RegExp, timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const found = pattern.exec(proc.output(1024 * 1024))?.[1];
    if (found !== undefined) return found;
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
      throw new Error(`${proc.name} exited (${proc.child.exitCode ?? proc.child.signalCode}) before it listened:\n${proc.output()}`);
    }
    await delay(100);
  }
  throw new Error(`${proc.name} printed no address matching ${String(pattern)} within ${timeoutMs} ms:\n${proc.output()}`);
}

/** Waits until `url` answers 200, failing early when the process exits and after `timeoutMs`. */
export async function waitUntilReady(proc: NodeProcess, url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
      throw new Error(`${proc.name} exited (${proc.child.exitCode ?? proc.child.signalCode}) before it was ready:\n${proc.output()}`);
    }
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      if (response.status === 200) return;
      lastError = `status ${response.status}`;
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    }
    await delay(100);
  }
  throw new Error(`${proc.name} was not ready at ${url} within ${timeoutMs} ms (${lastError}):\n${proc.output()}`);
}
