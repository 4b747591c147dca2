import { z } from 'zod';

/**
 * Field builders for environment schemas. Every variable arrives as a string (or is absent); these
 * parse it into the value the process uses, with messages that say what was expected.
 */

const secrets = new WeakSet<z.ZodType>();

/** Marks a field as secret: its value is replaced by "[redacted]" wherever the config is printed. */
export function secret<T extends z.ZodType>(schema: T): T {
  secrets.add(schema);
  return schema;
}

/** A rule between variables, run on the parsed config: the problems it finds, each naming its variable. */
export type CrossCheck = (config: Readonly<Record<string, unknown>>) => { variable: string; message: string }[];

const crossChecks = new WeakMap<z.ZodType, CrossCheck>();

/**
 * Attaches a rule between variables to a field (a user name that needs its password, a key that needs its
 * certificate). parseConfig runs it on the parsed config of any shape the field is part of, so every process that
 * spreads the field's shape into its own gets the rule.
 */
export function crossChecked<T extends z.ZodType>(schema: T, check: CrossCheck): T {
  crossChecks.set(schema, check);
  return schema;
}

export function crossCheckOf(schema: z.ZodType): CrossCheck | undefined {
  return crossChecks.get(schema);
}

type Wrapped = { _zod: { def: { innerType?: z.ZodType; in?: z.ZodType } } };

export function isSecret(schema: z.ZodType): boolean {
  let current: z.ZodType | undefined = schema;
  // Look through wrappers (optional, default, pipe) for the marked schema.
  for (let depth = 0; current && depth < 8; depth++) {
    if (secrets.has(current)) return true;
    const def: Wrapped['_zod']['def'] = (current as unknown as Wrapped)._zod.def;
    current = def.innerType ?? def.in;
  }
  return false;
}

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off', '']);

/** A boolean written as true/false, 1/0, yes/no or on/off (any case). Anything else is an error. */
export function bool() {
  return z.string().transform((raw, ctx) => {
    const value = raw.trim().toLowerCase();
    if (TRUE.has(value)) return true;
    if (FALSE.has(value)) return false;
    ctx.addIssue({ code: 'custom', message: `expected true or false, got "${raw}"` });
    return z.NEVER;
  });
}

/** An integer within [min, max]. */
export function int(min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER) {
  return z.string().transform((raw, ctx) => {
    const trimmed = raw.trim();
    const value = Number(trimmed);
    if (trimmed === '' || !Number.isInteger(value)) {
      ctx.addIssue({ code: 'custom', message: `expected an integer, got "${raw}"` });
      return z.NEVER;
    }
    if (value < min || value > max) {
      ctx.addIssue({ code: 'custom', message: `expected an integer from ${min} to ${max}, got ${value}` });
      return z.NEVER;
    }
    return value;
  });
}

/** A TCP port (0 asks the OS for a free one). */
export function port() {
  return int(0, 65_535);
}

/** An absolute URL whose scheme is one of `protocols` (without the colon). */
export function url(protocols: readonly string[]) {
  return z.string().transform((raw, ctx) => {
    let parsed: URL;
    try {
      parsed = new URL(raw.trim());
    } catch {
      ctx.addIssue({ code: 'custom', message: `expected a ${protocols.join(' or ')} URL` });
      return z.NEVER;
    }
    if (!protocols.includes(parsed.protocol.replace(/:$/, ''))) {
      ctx.addIssue({ code: 'custom', message: `expected a ${protocols.join(' or ')} URL, got a ${parsed.protocol} one` });
      return z.NEVER;
    }
    return raw.trim();
  });
}

/** A comma-separated list; blanks are dropped. */
export function csv() {
  return z.string().transform((raw) =>
    raw
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item.length > 0),
  );
}

function logLevel() {
  return z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
}

/** A number from 0 to 1 (a share, e.g. a sample rate): "0.05", "1". */
export function fraction() {
  return z.string().transform((raw, ctx) => {
    const trimmed = raw.trim();
    const value = Number(trimmed);
    if (trimmed === '' || !Number.isFinite(value) || value < 0 || value > 1) {
      ctx.addIssue({ code: 'custom', message: `expected a number from 0 to 1, got "${raw}"` });
      return z.NEVER;
    }
    return value;
  });
}

/**
 * The logging settings every service reads (docs/configuration.md): the level, and which requests get an
 * access-log line — every one that failed, was aborted or took ACCESS_LOG_SLOW_MS or longer, and this share of
 * the others.
 */
export function logConfigShape() {
  return {
    LOG_LEVEL: logLevel().default('info'),
    ACCESS_LOG_SAMPLE_RATE: fraction().default(1),
    ACCESS_LOG_SLOW_MS: int(0, 3_600_000).default(1_000),
  };
}
