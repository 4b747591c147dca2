// The bake file (infra/docker-bake.json) as `docker buildx bake` reads it, for what runs without buildx or a Docker
// engine: the dry run's plan and the tests. Only what the file uses is resolved: `variable` defaults overridden by
// the environment, `${NAME}` in strings, `inherits` (maps merged key by key, other attributes replaced) and the
// `default` group. `docker buildx bake -f infra/docker-bake.json --print` is buildx's own view of the same plan.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
/** Relative to the repository root, where the release runs bake (the targets' `context` is relative to it). */
export const BAKE_FILE = 'infra/docker-bake.json';

export interface BakeTarget {
  inherits?: string[];
  context?: string;
  dockerfile?: string;
  target?: string;
  platforms?: string[];
  attest?: string[];
  args?: Record<string, string>;
  tags?: string[];
}

export interface BakeFile {
  variable?: Record<string, { default?: string }>;
  group?: Record<string, { targets: string[] }>;
  target: Record<string, BakeTarget>;
}

export function readBakeFile(file = path.join(REPO_ROOT, BAKE_FILE)): BakeFile {
  return JSON.parse(readFileSync(file, 'utf8')) as BakeFile;
}

/** Variable values as bake takes them: the environment's, else the file's default. */
function bakeVariables(bake: BakeFile, env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(bake.variable ?? {}).map(([name, { default: value = '' }]) => [name, env[name] ?? value]));
}

function interpolate(value: string, variables: Record<string, string>): string {
  return value.replace(/\$\{([A-Za-z_]\w*)\}/g, (_match, name: string) => {
    const found = variables[name];
    if (found === undefined) throw new Error(`${BAKE_FILE}: unknown variable \${${name}}`);
    return found;
  });
}

function resolveTarget(bake: BakeFile, name: string, seen: string[] = []): BakeTarget {
  const own = bake.target[name];
  if (!own) throw new Error(`${BAKE_FILE}: no target ${name}`);
  if (seen.includes(name)) throw new Error(`${BAKE_FILE}: ${[...seen, name].join(' → ')} inherits itself`);
  let merged: BakeTarget = {};
  for (const parent of own.inherits ?? []) {
    const resolved = resolveTarget(bake, parent, [...seen, name]);
    merged = { ...merged, ...resolved, args: { ...merged.args, ...resolved.args } };
  }
  const { inherits: _inherits, ...rest } = own;
  return { ...merged, ...rest, args: { ...merged.args, ...own.args } };
}

/** The targets the `default` group builds, each fully resolved: what `bake --print` would show. */
export function bakePlan(bake: BakeFile, env: Record<string, string | undefined>): Record<string, BakeTarget> {
  const variables = bakeVariables(bake, env);
  const names = bake.group?.default?.targets;
  if (!names) throw new Error(`${BAKE_FILE}: no default group`);
  const substitute = (node: unknown): unknown =>
    typeof node === 'string'
      ? interpolate(node, variables)
      : Array.isArray(node)
        ? node.map(substitute)
        : node !== null && typeof node === 'object'
          ? Object.fromEntries(Object.entries(node).map(([key, value]) => [key, substitute(value)]))
          : node;
  return Object.fromEntries(names.map((name) => [name, substitute(resolveTarget(bake, name)) as BakeTarget]));
}
