// Counts of the abuse suites: printed as one line per suite (the figures docs/reliability.md quotes), and
// written as JSON to ABUSE_REPORT_DIR when it is set.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** CI size by default; ABUSE_SIZE=full for the larger run. */
export const ABUSE_SIZE: 'ci' | 'full' = process.env.ABUSE_SIZE === 'full' ? 'full' : 'ci';

export class Tally {
  private readonly counts = new Map<string, number>();

  add(key: string | number, by = 1): void {
    const name = String(key);
    this.counts.set(name, (this.counts.get(name) ?? 0) + by);
  }

  get(key: string | number): number {
    return this.counts.get(String(key)) ?? 0;
  }

  total(): number {
    let sum = 0;
    for (const count of this.counts.values()) sum += count;
    return sum;
  }

  /** Keys matching `predicate`, summed. */
  sum(predicate: (key: string) => boolean): number {
    let sum = 0;
    for (const [key, count] of this.counts) if (predicate(key)) sum += count;
    return sum;
  }

  toJSON(): Record<string, number> {
    return Object.fromEntries([...this.counts].sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true })));
  }

  /** "400 × 12,345, 401 × 2,001" */
  toString(): string {
    return Object.entries(this.toJSON())
      .map(([key, count]) => `${key} × ${count.toLocaleString('en')}`)
      .join(', ');
  }
}

/** Prints the suite's count line and keeps its figures for the docs. */
export function report(suite: string, line: string, figures: Record<string, unknown>): void {
  process.stdout.write(`\n[abuse:${suite}] ${line}\n`);
  const dir = process.env.ABUSE_REPORT_DIR;
  if (dir) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, `${suite}.json`), `${JSON.stringify({ suite, size: ABUSE_SIZE, line, ...figures }, null, 2)}\n`);
  }
}
