// Prints the summary of a CPU profile (bench/src/lib/profile.ts) as three tables: self time by origin, time in
// stacks through each package or source file, and the top functions by self time.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fixed, print, table, thousands } from './output';
import { REPO_ROOT } from './processes';
import { summariseProfile } from './profile';

export function printProfile(title: string, file: string, window: { fromUs: number; toUs: number } | undefined, top = 15): boolean {
  if (!existsSync(file)) {
    print();
    print(`### ${title}: no profile (${path.relative(REPO_ROOT, file)} was not written)`);
    return false;
  }
  const summary = summariseProfile(file, REPO_ROOT, window);
  const share = (value: number) => `${fixed(value * 100, 1)} %`;
  print();
  print(`### ${title} (${summary.windowed ? 'samples of the measurement named' : 'whole profile'})`);
  print();
  print(
    `profile: ${path.relative(REPO_ROOT, file)} (Chrome DevTools › Performance, or speedscope); busy ${thousands(summary.busyMs)} ms, idle ${thousands(summary.idleMs)} ms`,
  );
  print();
  print(
    table(
      ['self time by origin', 'ms', 'share'],
      summary.origins.slice(0, 10).map(({ origin, ms, share: part }) => [origin, thousands(ms), share(part)]),
    ),
  );
  print();
  print(
    table(
      ['time in stacks through (inclusive, overlapping)', 'ms', 'share'],
      summary.through.slice(0, 12).map(({ origin, ms, share: part }) => [origin, thousands(ms), share(part)]),
    ),
  );
  print();
  print(
    table(
      ['top functions by self time', 'origin', 'ms', 'share'],
      summary.functions.slice(0, top).map(({ name, origin, ms, share: part }) => [name, origin, thousands(ms), share(part)]),
      ['left', 'left', 'right', 'right'],
    ),
  );
  return true;
}
