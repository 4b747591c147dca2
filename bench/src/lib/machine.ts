// The machine a run happened on: figures mean little without it.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { PRODUCTION_NODE_OPTIONS } from './processes';

export interface Machine {
  cpuModel: string;
  /** CPUs this process may run on (what `nproc` prints). */
  cpus: number;
  memoryGiB: number;
  node: string;
  platform: string;
  loadAverage: readonly number[];
}

function cpuModel(): string {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .find((entry) => entry.startsWith('model name'));
    if (line !== undefined) return line.slice(line.indexOf(':') + 1).trim();
  } catch {
    // not Linux: fall through
  }
  return os.cpus()[0]?.model ?? 'unknown';
}

export function describeMachine(): Machine {
  return {
    cpuModel: cpuModel(),
    cpus: os.availableParallelism(),
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    loadAverage: os.loadavg().map((value) => Math.round(value * 100) / 100),
  };
}

export function formatMachine(machine: Machine): string {
  return [
    `machine: ${machine.cpus} CPUs (nproc), ${machine.cpuModel}, ${machine.memoryGiB} GiB RAM`,
    `runtime: Node ${machine.node} on ${machine.platform}; the servers run the compiled output (node dist/…) with NODE_OPTIONS="${PRODUCTION_NODE_OPTIONS}", as the production image does`,
    `load average before the run: ${machine.loadAverage.map((value) => value.toFixed(2)).join(' ')} (other work on the machine shows here)`,
  ].join('\n');
}
