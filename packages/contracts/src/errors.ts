// The one error body of the API, its closed set of types, and the translation of a validation failure into a
// readable `detail`.
import { z } from 'zod';

/**
 * Every `type` an error body can carry, with the HTTP status it is sent with. The spec names only
 * `validation_error`; the rest follow the same snake_case style and cover every status the service returns.
 * The set is closed so clients can switch on it exhaustively; adding a value is a contract change.
 */
export const ERROR_STATUS = {
  validation_error: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable_entity: 422,
  rate_limit_exceeded: 429,
  model_refused: 422,
  internal_error: 500,
  bad_gateway: 502,
  model_request_rejected: 502,
  service_unavailable: 503,
  gateway_timeout: 504,
} as const;

export const ErrorType = z.enum(Object.keys(ERROR_STATUS) as [keyof typeof ERROR_STATUS, ...(keyof typeof ERROR_STATUS)[]]).meta({
  id: 'ErrorType',
  description:
    'Machine-readable error category. Default HTTP status: validation_error 400, unauthorized 401, forbidden 403, not_found 404, method_not_allowed 405, conflict 409, payload_too_large 413, unsupported_media_type 415, unprocessable_entity 422, rate_limit_exceeded 429, model_refused 422, internal_error 500, bad_gateway 502, model_request_rejected 502, service_unavailable 503, gateway_timeout 504.',
});
export type ErrorType = z.infer<typeof ErrorType>;

/** Longest `detail` produced by formatZodError; keeps error bodies and log lines bounded. */
export const ERROR_DETAIL_MAX = 500;

export const ErrorBody = z
  .object({
    detail: z.string().meta({
      description: 'Human-readable explanation; for validation errors it names each offending field and why.',
      examples: ['symbols: expected 1 to 10 distinct symbols, got 12; n: must be at most 20'],
    }),
    status_code: z
      .int()
      .min(400)
      .max(599)
      .meta({ description: 'Equal to the HTTP status of the response.', examples: [400] }),
    type: ErrorType,
  })
  .meta({
    id: 'ErrorBody',
    description: 'Body of every non-2xx response, and the data of the `error` SSE event that ends a stream on failure.',
    examples: [{ detail: 'n: must be at most 20', status_code: 400, type: 'validation_error' }],
  });
export type ErrorBody = z.infer<typeof ErrorBody>;

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** `portfolio_composition[1].symbol`, `headers["X-Api-Key"]`. */
function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'string' && IDENTIFIER.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

/** One line per problem. Record-key failures are unwrapped so the key's own message is shown. */
function describeIssues(issues: readonly z.core.$ZodIssue[], prefix: readonly PropertyKey[] = []): string[] {
  const lines: string[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'invalid_key') {
      // A record key failed its own schema (e.g. a header name): say so, with the key schema's reason.
      for (const inner of issue.issues) lines.push(`${formatPath(path)}: invalid name: ${inner.message}`);
      continue;
    }
    // zod's default text for a missing field is "Invalid input: expected string, received undefined".
    const message = issue.code === 'invalid_type' && issue.message.endsWith('received undefined') ? 'is required' : issue.message;
    const where = formatPath(path);
    lines.push(where === '' ? message : `${where}: ${message}`);
  }
  return lines;
}

/**
 * Turns a ZodError into the `detail` of a 400: every problem as `path: reason`, joined with "; ", e.g.
 * `symbols: expected 1 to 10 distinct symbols, got 12; n: must be at most 20`. Issues that do not fit in
 * `maxLength` characters are summarised as "(and N more)".
 */
export function formatZodError(error: z.core.$ZodError, maxLength = ERROR_DETAIL_MAX): string {
  const lines = [...new Set(describeIssues(error.issues))];
  if (lines.length === 0) return 'invalid request';
  let detail = '';
  for (const [index, line] of lines.entries()) {
    const rest = lines.length - index - 1;
    const candidate = detail === '' ? line : `${detail}; ${line}`;
    const suffix = rest > 0 ? `; (and ${rest} more)` : '';
    if (candidate.length + suffix.length <= maxLength) {
      detail = candidate;
      continue;
    }
    if (detail === '') return line.length <= maxLength ? line : `${line.slice(0, maxLength - 1)}…`;
    const more = `; (and ${lines.length - index} more)`;
    return `${detail}${more}`;
  }
  return detail;
}

/**
 * Keys that reach an object's prototype when a parsed body is copied by assignment (`copy[key] = value`, as zod's
 * records and loose objects, and many libraries, do): `__proto__` anywhere, and `constructor` holding a
 * `prototype` (the rule of secure-json-parse, which fastify applies to every JSON body). JSON.parse makes them
 * plain own keys, so they pass any schema, and a copy then silently drops them or replaces the copy's prototype:
 * `"__proto__": null` gave a value with no prototype, on which Prisma's JSON serialiser threw (a 500).
 */
export function prototypeKeyIssues(value: unknown, prefix: readonly PropertyKey[] = []): z.core.$ZodIssue[] {
  const issues: z.core.$ZodIssue[] = [];
  // Each pending node links to its parent, and a path is spelled out only for an issue: copying the path at every
  // level made a body nested 100,000 deep (256 KiB of brackets) cost 5·10⁹ copies.
  interface Pending {
    readonly node: unknown;
    readonly key: PropertyKey;
    readonly parent: Pending | undefined;
  }
  const pathOf = (at: Pending, ...more: PropertyKey[]): PropertyKey[] => {
    const path: PropertyKey[] = [];
    let step = at;
    while (step.parent !== undefined) {
      path.push(step.key);
      step = step.parent;
    }
    return [...prefix, ...path.reverse(), ...more];
  };
  const pending: Pending[] = [{ node: value, key: '', parent: undefined }];
  // Iterative, and bounded: a body nested 100,000 deep is walked without recursion; 10 issues are enough to say so.
  while (pending.length > 0 && issues.length < 10) {
    const entry = pending.pop() as Pending;
    const { node } = entry;
    if (typeof node !== 'object' || node === null) continue;
    if (Array.isArray(node)) {
      for (let index = node.length - 1; index >= 0; index--) pending.push({ node: node[index], key: index, parent: entry });
      continue;
    }
    const keys = Object.keys(node);
    for (let index = keys.length - 1; index >= 0; index--) {
      const key = keys[index] as string;
      const child: unknown = (node as Record<string, unknown>)[key];
      if (key === '__proto__') {
        issues.push({ code: 'custom', path: pathOf(entry, key), message: 'the key "__proto__" is not allowed', input: child });
        continue;
      }
      if (key === 'constructor' && typeof child === 'object' && child !== null && Object.hasOwn(child, 'prototype')) {
        issues.push({
          code: 'custom',
          path: pathOf(entry, key, 'prototype'),
          message: 'the key "prototype" inside "constructor" is not allowed',
          input: child,
        });
        continue;
      }
      pending.push({ node: child, key, parent: entry });
    }
  }
  return issues;
}
