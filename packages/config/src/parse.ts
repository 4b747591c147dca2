import { z } from 'zod';
import { crossCheckOf, isSecret } from './fields';

export interface ConfigIssue {
  variable: string;
  message: string;
}

/** The environment does not satisfy the process's schema. The message names every bad variable. */
export class ConfigError extends Error {
  constructor(readonly issues: ConfigIssue[]) {
    super(`Invalid configuration:\n${issues.map((issue) => `  ${issue.variable}: ${issue.message}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type Shape = Record<string, z.ZodType>;

/**
 * What stands in for a secret without being one: the placeholders of .env.example and the docs (they say
 * "replace"), and keys of zero bytes (hex zeros, or base64 "AAAA…", optionally after a `<key id>:`), which parse
 * as valid keys and protect nothing. A process refuses them at start, whichever secret variable holds them.
 */
const PLACEHOLDER = /replace[-_ ]?(?:me|with)|local-compose-only/i;
const ZERO_KEY = /^(?:[\w.-]{1,64}:)?(?:0{16,}|A{16,}={0,2})$/;

/** Why `value` cannot be a secret, or undefined when it may be one. Never echoes the value. */
export function placeholderSecretProblem(value: string): string | undefined {
  if (PLACEHOLDER.test(value))
    return 'is a placeholder (from .env.example or the docs), not a secret: generate a value of your own (docs/configuration.md says how)';
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  if (items.some((item) => ZERO_KEY.test(item)))
    return 'is a key of zero bytes, which protects nothing: generate a random one (docs/configuration.md says how)';
  return undefined;
}

/**
 * Parses `env` against an object schema whose keys are environment variable names. Blank values count as
 * absent, so `FOO=` falls back to the default like an unset variable. A secret field holding a placeholder or
 * an all-zero key (placeholderSecretProblem), or the value of another secret field, is refused; then the rules
 * between variables (crossChecked) run. Throws ConfigError listing every problem; the message
 * never contains the value of a secret field.
 */
export function parseConfig<S extends Shape>(shape: S, env: NodeJS.ProcessEnv = process.env): z.output<z.ZodObject<S>> {
  const input: Record<string, string> = {};
  const placeholders: ConfigIssue[] = [];
  // One secret, one purpose: a value given to two secret variables (a session secret copied from the signing secret) is refused.
  const secretOwners = new Map<string, string>();
  for (const [key, field] of Object.entries(shape)) {
    const value = env[key];
    if (value === undefined || value.trim() === '') continue;
    input[key] = value;
    if (!isSecret(field)) continue;
    const owner = secretOwners.get(value.trim());
    const problem =
      placeholderSecretProblem(value.trim()) ??
      (owner === undefined ? undefined : `must differ from ${owner}: each secret has one purpose`);
    if (problem !== undefined) placeholders.push({ variable: key, message: problem });
    secretOwners.set(value.trim(), owner ?? key);
  }
  const result = z.object(shape).safeParse(input);
  if (result.success && placeholders.length === 0) {
    // Rules between variables, once every variable parsed on its own (crossChecked).
    const crossed = Object.values(shape).flatMap((field) => crossCheckOf(field)?.(result.data) ?? []);
    if (crossed.length > 0) throw new ConfigError(crossed);
    return result.data;
  }
  const refused = new Set(placeholders.map((issue) => issue.variable));
  const issues = (result.success ? [] : result.error.issues).map((issue) => {
    const variable = String(issue.path[0] ?? '(environment)');
    const absent = input[variable] === undefined;
    const message = absent && issue.code === 'invalid_type' ? 'is required but not set' : issue.message;
    const field = shape[variable];
    // Values are echoed to help fix a typo, except a secret's.
    return { variable, message: field && isSecret(field) ? scrub(message, input[variable]) : message };
  });
  throw new ConfigError([...placeholders, ...issues.filter((issue) => !refused.has(issue.variable))]);
}

/** A secret value echoed back by a message (ours or zod's) is removed before the message can be printed. */
function scrub(message: string, value: string | undefined): string {
  if (value === undefined || value === '') return message;
  return message.split(value).join('[value hidden]');
}

/**
 * For a process's entry point: parses the environment, and on failure prints the problems to stderr and
 * exits with status 78 (EX_CONFIG) before anything else starts.
 */
export function loadConfig<S extends Shape>(
  shape: S,
  env: NodeJS.ProcessEnv = process.env,
  exit: (code: number) => never = (code) => process.exit(code),
): z.output<z.ZodObject<S>> {
  try {
    return parseConfig(shape, env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(configRefusal(error));
      return exit(78);
    }
    throw error;
  }
}

/** What a process that refuses its config prints (to stderr) before it exits 78. */
export function configRefusal(error: ConfigError): string {
  return `${error.message}\nThe process did not start. See docs/configuration.md.\n`;
}

/** The parsed config with every secret field replaced, safe to log. */
export function redactConfig(shape: Shape, config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    const field = shape[key];
    if (field && isSecret(field) && value !== undefined) out[key] = '[redacted]';
    else out[key] = typeof value === 'string' ? hideUrlPassword(value) : value;
  }
  return out;
}

/** postgres://user:pw@host → postgres://user:***@host; anything that is not such a URL is returned as is. */
export function hideUrlPassword(value: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return value;
  try {
    const parsed = new URL(value);
    if (!parsed.password) return value;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    return value;
  }
}
