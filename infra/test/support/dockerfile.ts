// A reader for the Dockerfile's instructions, stage by stage: enough to check what the runtime stage ends up as
// without a Docker engine (none is available where the tests run).
import { readFileSync } from 'node:fs';

interface Instruction {
  keyword: string;
  /** Everything after the keyword, continuation lines joined. */
  args: string;
}

export interface Stage {
  name: string;
  from: string;
  instructions: Instruction[];
}

export interface Dockerfile {
  /** ARGs declared before the first FROM, with their defaults: they parameterise the FROM lines. */
  globalArgs: Record<string, string>;
  stages: Stage[];
}

export function parseDockerfile(file: string): Dockerfile {
  const lines = readFileSync(file, 'utf8').split('\n');
  const logical: string[] = [];
  let current = '';
  for (const raw of lines) {
    const line = raw.trim();
    if (current === '' && (line === '' || line.startsWith('#'))) continue;
    if (current !== '' && line.startsWith('#')) continue;
    if (line.endsWith('\\')) {
      current += `${line.slice(0, -1).trim()} `;
      continue;
    }
    logical.push(`${current}${line}`.trim());
    current = '';
  }
  const stages: Stage[] = [];
  const globalArgs: Record<string, string> = {};
  for (const line of logical) {
    const [keyword = '', ...rest] = line.split(/\s+/);
    const instruction = { keyword: keyword.toUpperCase(), args: rest.join(' ') };
    if (instruction.keyword === 'FROM') {
      const match = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(instruction.args);
      if (!match?.[1]) throw new Error(`cannot read ${line}`);
      stages.push({ from: match[1], name: match[2] ?? String(stages.length), instructions: [] });
    } else if (stages.length > 0) {
      stages[stages.length - 1]!.instructions.push(instruction);
    } else if (instruction.keyword === 'ARG') {
      const [name = '', value = ''] = instruction.args.split('=');
      globalArgs[name] = value;
    }
  }
  return { globalArgs, stages };
}

/** The JSON exec form of CMD / HEALTHCHECK … CMD, e.g. ["node", "dist/main.js"]. */
export function execForm(args: string): string[] {
  const start = args.indexOf('[');
  if (start < 0) throw new Error(`not in exec form: ${args}`);
  return JSON.parse(args.slice(start)) as string[];
}

/** ENV instructions of a stage as a map (the `KEY=value KEY2=value2` form). */
export function stageEnv(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { keyword, args } of stage.instructions) {
    if (keyword !== 'ENV') continue;
    // NAME=value pairs; a value with spaces is double-quoted.
    for (const [, name, quoted, bare] of args.matchAll(/(\w+)=(?:"((?:[^"\\]|\\.)*)"|(\S*))/g)) {
      if (name !== undefined) env[name] = quoted === undefined ? (bare ?? '') : quoted.replace(/\\(.)/g, '$1');
    }
  }
  return env;
}
