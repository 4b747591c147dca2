// Secrets never reach a log line. The paths are pino's `redact` syntax (REDACTED_PATHS, the list operators and
// reviewers read); the redaction itself is compiled here instead of handed to pino, because pino's redactor
// re-parses every path for every top-level field of every line once a path starts with a wildcard, which costs
// more than writing the line (figures in docs/benchmarks.md, "Choices made by measurement").
// The output is the same as pino's (test/log.test.ts compares the two on the same objects).
import pino from 'pino';

const REDACTION_CENSOR = '[redacted]';

/** Keys whose value is a secret, at the top level of a logged object and one level down. */
const SECRET_KEYS = ['apiKey', 'api_key', 'password', 'secret', 'token', 'authorization'] as const;
/** Request headers that carry credentials, in a `headers` object at the top level or one level down. */
const SECRET_HEADERS = ['x-api-key', 'authorization', 'cookie', 'proxy-authorization', 'x-fin-signature'] as const;
/** Fields secret only under one top-level key: a customer tool's headers are all secrets; the model key. */
const NAMED_SECRETS: Readonly<Record<string, readonly string[]>> = { tool: ['headers'], config: ['ANTHROPIC_API_KEY'] };

/** The same rules as pino redact paths. */
export const REDACTED_PATHS: readonly string[] = [
  ...SECRET_KEYS.flatMap((key) => [key, `*.${key}`]),
  ...SECRET_HEADERS.flatMap((header) => [`headers["${header}"]`, `*.headers["${header}"]`]),
  ...Object.entries(NAMED_SECRETS).flatMap(([key, fields]) => fields.map((field) => `${key}.${field}`)),
];

const SECRET_KEY_SET: ReadonlySet<string> = new Set(SECRET_KEYS);

type Fields = Record<string, unknown>;

function isObject(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null;
}

/** An own enumerable property: what JSON shows and what pino's redaction replaces. */
function shown(object: object, key: string): boolean {
  return Object.prototype.propertyIsEnumerable.call(object, key);
}

/** A shallow copy with the same prototype (so a toJSON still applies) and the same own enumerable fields. */
function copyOf(object: Fields): Fields {
  return Object.assign(Object.create(Object.getPrototypeOf(object) as object | null) as Fields, object);
}

function secretHeadersIn(headers: unknown): boolean {
  return isObject(headers) && SECRET_HEADERS.some((header) => shown(headers, header));
}

function withoutSecretHeaders(headers: Fields): Fields {
  const copy = copyOf(headers);
  for (const header of SECRET_HEADERS) if (shown(headers, header)) copy[header] = REDACTION_CENSOR;
  return copy;
}

/**
 * The value of the top-level field `key` as it may be logged: the value itself when it holds no secret (the
 * common case, no copy), else a copy with the secrets replaced. The logged objects are never modified.
 */
function redactField(key: string, value: unknown): unknown {
  // pino leaves out a function-valued field (JSON has no functions), secret or not.
  if (SECRET_KEY_SET.has(key)) return typeof value === 'function' ? value : REDACTION_CENSOR;
  if (!isObject(value) || Array.isArray(value)) return value;
  const named = NAMED_SECRETS[key]?.filter((field) => shown(value, field)) ?? [];
  const secrets = SECRET_KEYS.filter((field) => shown(value, field));
  const headers = shown(value, 'headers') && secretHeadersIn(value.headers) && !named.includes('headers');
  const ownHeaders = key === 'headers' && secretHeadersIn(value);
  if (named.length === 0 && secrets.length === 0 && !headers && !ownHeaders) return value;
  const copy = ownHeaders ? withoutSecretHeaders(value) : copyOf(value);
  for (const field of [...secrets, ...named]) copy[field] = REDACTION_CENSOR;
  if (headers) copy.headers = withoutSecretHeaders(value.headers as Fields);
  return copy;
}

/** A logged object (or a child logger's bindings) with every secret replaced; the object itself when none. */
export function redactFields(fields: Fields): Fields {
  let copy: Fields | undefined;
  for (const key in fields) {
    // The error is redacted after pino's error serializer has made it a plain object (see errorSerializer).
    if (key === 'err' || !Object.prototype.hasOwnProperty.call(fields, key)) continue;
    const value = fields[key];
    if (value === undefined) continue;
    const redacted = redactField(key, value);
    if (redacted !== value) {
      copy ??= { ...fields };
      copy[key] = redacted;
    }
  }
  return copy ?? fields;
}

/** pino's error serializer, then the same redaction as any other field (an error may carry headers or a token). */
export function errorSerializer(error: unknown): unknown {
  return redactField('err', pino.stdSerializers.err(error as Error));
}
