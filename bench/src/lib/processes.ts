// Child processes of a benchmark (the servers under load) and the clean-up that must run however the benchmark
// ends: every child is stopped by its pid, every database dropped, also on an error or Ctrl-C.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { note } from './output';

export const REPO_ROOT = path.resolve(__dirname, '../../..');

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

export interface NodeProcessOptions {
  /** Shown in messages. */
  name: string;
  /** A TypeScript entry point, relative to the repository root; run with tsx like `npm start` does. */
  entry: string;
  env: Record<string, string>;
  /** Extra node flags (e.g. --cpu-prof). */
  nodeFlags?: readonly string[];
}

export interface NodeProcess {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** The last few KB the process wrote, for the error message when it fails. */
  output(): string;
  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`. Resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

const OUTPUT_TAIL = 8 * 1024;

/** Starts `node --conditions=development --import tsx <entry>` as a process of its own. */
export function startNodeProcess({ name, entry, env, nodeFlags = [] }: NodeProcessOptions): NodeProcess {
  const child = spawn(process.execPath, [...nodeFlags, '--conditions=development', '--import', 'tsx', path.join(REPO_ROOT, entry)], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`could not start ${name}`);
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  // A failure to spawn or signal the process is reported through its output (and waitUntilReady), not thrown.
  child.on('error', (error) => keep(Buffer.from(`\n[bench] ${name}: ${error.message}\n`)));
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const pid = child.pid;
  return {
    name,
    pid,
    child,
    output: () => tail,
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
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
