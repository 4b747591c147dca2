// What the benchmarks print. They are command-line programs: their output is the product, on stdout; progress
// notes go to stderr so that `npm run bench > results.md` keeps only the tables.

export function print(text = ''): void {
  process.stdout.write(`${text}\n`);
}

export function note(text: string): void {
  process.stderr.write(`[bench] ${text}\n`);
}

export type Align = 'left' | 'right';

/** A Markdown table (readable as plain text too): columns padded to their widest cell. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[], align: readonly Align[] = []): string {
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)));
  const pad = (cell: string, column: number) =>
    (align[column] ?? (column === 0 ? 'left' : 'right')) === 'left' ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0);
  const line = (cells: readonly string[]) => `| ${cells.map((cell, column) => pad(cell, column)).join(' | ')} |`;
  const rule = `|${widths.map((width, column) => ((align[column] ?? (column === 0 ? 'left' : 'right')) === 'left' ? `:${'-'.repeat(width + 1)}` : `${'-'.repeat(width + 1)}:`)).join('|')}|`;
  return [line(headers), rule, ...rows.map(line)].join('\n');
}

export function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

export function thousands(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : 'n/a';
}

/** The latency columns every load table prints, in ms with two decimals: p50, p90, p99, max. */
export function latencyCells(latencyMs: { p50: number; p90: number; p99: number; max: number }): string[] {
  return [latencyMs.p50, latencyMs.p90, latencyMs.p99, latencyMs.max].map((value) => fixed(value, 2));
}
