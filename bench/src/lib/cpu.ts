// CPU time spent by processes, read from /proc/<pid>/stat (utime, stime). Throughput on a shared 2-core
// machine depends on who else runs; CPU time per request does not, so it is reported beside the rates. The
// system share matters too: on this virtual machine a write to a loopback socket costs far more in the kernel
// than the JavaScript that prepared it.
import { readFileSync } from 'node:fs';

/** Linux reports utime and stime in clock ticks; USER_HZ is 100 on every mainstream distribution. */
const TICK_MS = 10;

export interface CpuTime {
  userMs: number;
  systemMs: number;
}

export function totalMs(time: CpuTime): number {
  return time.userMs + time.systemMs;
}

/** CPU time used so far by `pid`, or null when it cannot be read (it ended, or this is not Linux). */
function cpuTimeOf(pid: number): CpuTime | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may contain spaces: split after its closing one.
    // utime and stime are fields 14 and 15 of the file, the 12th and 13th after the name.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
    return { userMs: utime * TICK_MS, systemMs: stime * TICK_MS };
  } catch {
    return null;
  }
}

/** CPU time of this process (from the process itself: microsecond resolution). */
export function ownCpuTime(): CpuTime {
  const { user, system } = process.cpuUsage();
  return { userMs: user / 1000, systemMs: system / 1000 };
}

/** CPU time of each process that can be read now. */
export function cpuSnapshot(pids: readonly number[]): Map<number, CpuTime> {
  const snapshot = new Map<number, CpuTime>();
  for (const pid of pids) {
    const time = cpuTimeOf(pid);
    if (time !== null) snapshot.set(pid, time);
  }
  return snapshot;
}

/**
 * CPU time used between two snapshots by the processes of `pids` present in both (a process that started or
 * ended in between is left out rather than counted from zero).
 */
export function cpuDelta(before: ReadonlyMap<number, CpuTime>, after: ReadonlyMap<number, CpuTime>, pids: readonly number[]): CpuTime {
  const sum = { userMs: 0, systemMs: 0 };
  for (const pid of pids) {
    const start = before.get(pid);
    const end = after.get(pid);
    if (start === undefined || end === undefined) continue;
    sum.userMs += end.userMs - start.userMs;
    sum.systemMs += end.systemMs - start.systemMs;
  }
  return sum;
}

export function subtract(after: CpuTime, before: CpuTime): CpuTime {
  return { userMs: after.userMs - before.userMs, systemMs: after.systemMs - before.systemMs };
}

/** The whole machine's CPU time so far, in ms summed over CPUs (first line of /proc/stat). */
export interface MachineCpu {
  busyMs: number;
  idleMs: number;
  /** Time the hypervisor ran something else while this VM wanted to run. */
  stealMs: number;
}

export function machineCpu(): MachineCpu | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    // cpu  user nice system idle iowait irq softirq steal guest guest_nice
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    return { busyMs: (user + nice + system + irq + softirq) * TICK_MS, idleMs: (idle + iowait) * TICK_MS, stealMs: steal * TICK_MS };
  } catch {
    return null;
  }
}
