import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { runCommand as run } from '@fin/testing';

/** run: a command to completion, its `output` being stdout and stderr together. */
export { freePort } from '@fin/testing';
export { run };

/** Like run, but a non-zero exit is an error that carries the output. */
export async function runOk(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  const { code, output } = await run(command, args, options);
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${code}:\n${output}`);
  return output;
}

/** A long-running process whose output is kept for failure messages. */
export interface Running {
  child: ChildProcess;
  output(): string;
  /** Sends SIGTERM and resolves with the exit code (SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<number | null>;
}

export function start(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Running {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return {
    child,
    output: () => output,
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** Polls `url` until it answers 200, or fails with the process's output once `timeoutMs` have passed. */
export async function waitForOk(url: string, running: Running, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (running.child.exitCode !== null)
      throw new Error(`the process exited (${running.child.exitCode}) before ${url} answered:\n${running.output()}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer 200 within ${timeoutMs} ms:\n${running.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
