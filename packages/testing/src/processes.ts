// Child processes and ports for tests that run the project's commands as a user would.
import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

export interface Finished {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout and stderr together, in the order they arrived. */
  output: string;
}

/** Runs a command to completion, collecting what it prints. */
export function runCommand(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const printed = { stdout: '', stderr: '', output: '' };
    for (const stream of ['stdout', 'stderr'] as const) {
      child[stream].on('data', (chunk: Buffer) => {
        printed[stream] += chunk.toString();
        printed.output += chunk.toString();
      });
    }
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, ...printed }));
  });
}

/**
 * Where test services' ports are picked: from 20000 up to the kernel's ephemeral range (Linux:
 * /proc/sys/net/ipv4/ip_local_port_range, 32768–60999 by default). A port the kernel handed out for listening on 0
 * lies in that range, where any process's next outgoing connection (to Kafka, to Postgres) may take it before the
 * service it was meant for listens; one below the range can only be taken by another listener.
 */
const PICKED_PORTS = (() => {
  const first = 20_000;
  let ephemeralLow = 32_768;
  try {
    ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || ephemeralLow;
  } catch {
    // Not Linux: the usual low end.
  }
  return { first, last: Math.max(first + 1_000, ephemeralLow - 1) };
})();

async function canListen(port: number): Promise<boolean> {
  const server = createServer();
  const listening = once(server, 'listening').then(
    () => true,
    () => false,
  );
  server.once('error', () => undefined);
  server.listen(port, '127.0.0.1');
  const free = await listening;
  if (free) {
    server.close();
    await once(server, 'close');
  }
  return free;
}

/** A TCP port on 127.0.0.1 that was free a moment ago, below the ephemeral range (see PICKED_PORTS). */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 100; tries++) {
    const port = randomInt(PICKED_PORTS.first, PICKED_PORTS.last + 1);
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port between ${PICKED_PORTS.first} and ${PICKED_PORTS.last} after 100 tries`);
}
