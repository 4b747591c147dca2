import { z } from 'zod';
import { isSecret } from './fields';

export interface ConfigIssue {
  variable: string;
  message: string;
}

/** The environment does not satisfy the process's schema. The message names every bad variable. */
export class ConfigError extends Error {
  constructor(readonly issues: ConfigIssue[]) {
    super(
      `Invalid configuration:\n${issues.map((issue) => `  ${issue.variable}: ${issue.message}`).join('\n')}`,
    );
    this.name = 'ConfigError';
  }
}

type Shape = Record<string, z.ZodType>;

/**
 * Parses `env` against an object schema whose keys are environment variable names. Blank values count as
 * absent, so `FOO=` falls back to the default like an unset variable. Throws ConfigError listing every
 * problem; the message never contains the value of a secret field.
 */
export function parseConfig<S extends Shape>(
  shape: S,
  env: NodeJS.ProcessEnv = process.env,
): z.output<z.ZodObject<S>> {
  const input: Record<string, string> = {};
  for (const key of Object.keys(shape)) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') input[key] = value;
  }
  const result = z.object(shape).safeParse(input);
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => {
    const variable = String(issue.path[0] ?? '(environment)');
    const absent = input[variable] === undefined;
    const message = absent && issue.code === 'invalid_type' ? 'is required but not set' : issue.message;
    const field = shape[variable];
    // Values are echoed to help fix a typo, except a secret's.
    return { variable, message: field && isSecret(field) ? scrub(message, input[variable]) : message };
  });
  throw new ConfigError(issues);
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
  exit: (code: number) => never = process.exit,
): z.output<z.ZodObject<S>> {
  try {
    return parseConfig(shape, env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\nThe process did not start. See docs/configuration.md.\n`);
      return exit(78);
    }
    throw error;
  }
}

/** The parsed config with every secret field replaced, safe to log. */
export function redactConfig<S extends Shape>(shape: S, config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    const field = shape[key];
    if (field && isSecret(field) && value !== undefined) out[key] = '[redacted]';
    else out[key] = typeof value === 'string' ? hideUrlPassword(value) : value;
  }
  return out;
}

/** postgres://user:pw@host → postgres://user:***@host; anything that is not such a URL is returned as is. */
function hideUrlPassword(value: string): string {
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
