// docker-compose.yml as Compose reads it: YAML with anchors and merge keys, then variable interpolation from an
// env file (the Compose Specification's rules), without a Docker engine.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

export type EnvFile = Record<string, string>;

/** KEY=value lines; blank lines and # comments are skipped (the subset of the .env format .env.example uses). */
export function readEnvFile(file: string): EnvFile {
  const env: EnvFile = {};
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const separator = line.indexOf('=');
    if (separator <= 0) throw new Error(`${file}: not KEY=value: ${line}`);
    env[line.slice(0, separator).trim()] = line.slice(separator + 1).trim();
  }
  return env;
}

const VARIABLE = /\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g;

/**
 * Compose interpolation of one string: `$$` is a literal `$`; `${VAR}` and `$VAR`; `${VAR:-default}` (unset or
 * empty) and `${VAR-default}` (unset); `${VAR:?message}` / `${VAR?message}` fail; `${VAR:+alt}` / `${VAR+alt}`.
 */
export function interpolate(value: string, env: EnvFile): string {
  return value.replace(
    VARIABLE,
    (match, braced: string | undefined, operator: string | undefined, operand: string | undefined, bare: string | undefined) => {
      if (match === '$$') return '$';
      const name = (braced ?? bare)!;
      const current = env[name];
      const unset = current === undefined;
      const empty = unset || current === '';
      if (operand?.includes('$')) throw new Error(`nested interpolation is not supported here: ${match}`);
      switch (operator) {
        case undefined:
          return current ?? '';
        case ':-':
          return empty ? (operand ?? '') : current;
        case '-':
          return unset ? (operand ?? '') : current;
        case ':?':
        case '?':
          if (operator === ':?' ? empty : unset) throw new Error(`${name}: ${operand || 'required'}`);
          return current!;
        case ':+':
          return empty ? '' : (operand ?? '');
        case '+':
          return unset ? '' : (operand ?? '');
        default:
          throw new Error(`unknown interpolation ${match}`);
      }
    },
  );
}

function interpolateAll(node: unknown, env: EnvFile): unknown {
  if (typeof node === 'string') return interpolate(node, env);
  if (Array.isArray(node)) return node.map((item) => interpolateAll(item, env));
  if (node !== null && typeof node === 'object') {
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, interpolateAll(value, env)]));
  }
  return node;
}

export interface ComposeService {
  image?: string;
  build?: { context: string; args?: Record<string, string> };
  command?: string[] | string;
  entrypoint?: string[] | string;
  environment?: Record<string, string | number | boolean | null> | string[];
  ports?: (string | { target: number; published?: string | number; host_ip?: string })[];
  depends_on?: Record<string, { condition: string }> | string[];
  healthcheck?: { test?: string[] | string; disable?: boolean };
  profiles?: string[];
  restart?: string;
}

export interface ComposeFile {
  name?: string;
  services: Record<string, ComposeService>;
  [extension: string]: unknown;
}

/** The file after YAML parsing (anchors and merge keys resolved) and interpolation with `env`. */
export function readCompose(file: string, env: EnvFile): ComposeFile {
  const document: unknown = parse(readFileSync(file, 'utf8'), { merge: true });
  return interpolateAll(document, env) as ComposeFile;
}

/** The variables the file interpolates (`${NAME…}` and `$NAME`, not `$$NAME`). */
export function referencedVariables(file: string): string[] {
  const names = new Set<string>();
  for (const match of readFileSync(file, 'utf8').matchAll(VARIABLE)) {
    const name = match[1] ?? match[4];
    if (name) names.add(name);
  }
  return [...names].sort();
}

/** A service's environment as the container sees it: every value a string. */
export function environmentOf(service: ComposeService): Record<string, string> {
  const env: Record<string, string> = {};
  if (Array.isArray(service.environment)) {
    for (const entry of service.environment) {
      const separator = entry.indexOf('=');
      if (separator > 0) env[entry.slice(0, separator)] = entry.slice(separator + 1);
    }
  } else {
    for (const [key, value] of Object.entries(service.environment ?? {})) env[key] = value === null ? '' : String(value);
  }
  return env;
}

export function dependenciesOf(service: ComposeService): Record<string, string> {
  const dependsOn = service.depends_on ?? {};
  if (Array.isArray(dependsOn)) return Object.fromEntries(dependsOn.map((name) => [name, 'service_started']));
  return Object.fromEntries(Object.entries(dependsOn).map(([name, { condition }]) => [name, condition]));
}
