// Helpers shared by the contract modules. Not re-exported from index.ts: they shape the public schemas but
// are not part of the package's API.
import { z } from 'zod';

/**
 * A value quoted for an error message, cut short so a hostile 1 MB string cannot bloat the detail. Arrays and
 * objects are named, not printed: String() of a deeply nested array recurses until the stack runs out.
 */
export function quote(value: unknown, max = 40): string {
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object' && value !== null) return 'an object';
  const text = typeof value === 'string' ? value : String(value);
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return JSON.stringify(cut);
}

/**
 * What Postgres cannot store, so a request carrying it could only fail later, with a 500: the NUL character
 * (neither text columns nor jsonb hold it) and UTF-16 surrogates without their pair (jsonb refuses their escapes).
 */
// eslint-disable-next-line no-control-regex -- NUL is exactly what this pattern is for
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
export const UNSTORABLE_TEXT_MESSAGE = 'must not contain the NUL character or unpaired surrogates';

/** True when `text` can be stored (see UNSTORABLE). */
export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

/** Deepest nesting accepted in free-form JSON (custom data, tool input schemas). */
export const MAX_JSON_DEPTH = 64;

/**
 * A check of free-form JSON (custom data, tool input schemas) that every later step can handle: nested at most
 * `maxDepth` levels (recursive serialisers, prompt rendering and Postgres all have stack limits), and no string or
 * key Postgres cannot store. Iterative, so a value nested 100,000 deep is refused rather than overflowing here.
 */
export function storableJson(maxDepth = MAX_JSON_DEPTH) {
  return (value: unknown, ctx: z.RefinementCtx): void => {
    const pending: { node: unknown; depth: number; path: PropertyKey[] }[] = [{ node: value, depth: 1, path: [] }];
    let unstorable: PropertyKey[] | undefined;
    while (pending.length > 0) {
      const { node, depth, path } = pending.pop() as { node: unknown; depth: number; path: PropertyKey[] };
      if (typeof node === 'string') {
        if (unstorable === undefined && !isStorableText(node)) unstorable = path;
        continue;
      }
      if (typeof node !== 'object' || node === null) continue;
      if (depth > maxDepth) {
        // continue: false skips the checks after this one (the size check would fail to serialise it).
        ctx.addIssue({ code: 'custom', message: `must be nested at most ${maxDepth} levels deep`, continue: false });
        return;
      }
      for (const [key, child] of Object.entries(node)) {
        if (unstorable === undefined && !isStorableText(key)) unstorable = path;
        pending.push({ node: child, depth: depth + 1, path: [...path, Array.isArray(node) ? Number(key) : key] });
      }
    }
    if (unstorable !== undefined) ctx.addIssue({ code: 'custom', path: unstorable, message: UNSTORABLE_TEXT_MESSAGE });
  };
}

/** Removes repeated values, keeping the first occurrence of each and the original order. */
export function dedupe<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}

/** Size in bytes of a value serialised as compact JSON (what a caller would send and we would store). */
function jsonBytes(value: unknown): number {
  try {
    // undefined for undefined, a function or a symbol, whatever JSON.stringify's declared type says.
    const json = JSON.stringify(value) as string | undefined;
    return json === undefined ? 0 : Buffer.byteLength(json, 'utf8');
  } catch {
    // Only reachable for values JSON cannot hold (BigInt, cycles); a parsed request body never has them.
    return Number.POSITIVE_INFINITY;
  }
}

/**
 * A check that the value, serialised as JSON, fits in `maxBytes`. Used on free-form objects (custom data,
 * tool input schemas) whose shape we do not constrain, so that their size at least is bounded. Refinements
 * are not expressible in JSON Schema; the limit is stated in each schema's description instead.
 */
export function maxJsonBytes(maxBytes: number) {
  return (value: unknown, ctx: z.RefinementCtx): void => {
    const bytes = jsonBytes(value);
    if (bytes > maxBytes) {
      ctx.addIssue({
        code: 'custom',
        message: Number.isFinite(bytes)
          ? `must be at most ${maxBytes} bytes (${maxBytes / 1024} KiB) when serialised as JSON, got ${bytes} bytes`
          : 'must be serialisable as JSON',
      });
    }
  };
}

/** The shape of the object schema that raised an issue, if it is one. */
function shapeOf(schema: unknown): z.core.$ZodShape | undefined {
  return schema instanceof z.ZodObject ? schema.shape : undefined;
}

/**
 * Every request body (and nested request object) is strict: an unknown field is a 400 naming the field and
 * listing the allowed ones. Silently dropping `langauge` or `symbol` would hand the caller a result built from
 * defaults they did not ask for; rejecting it surfaces the typo at once. Response schemas are NOT strict, so
 * that clients parsing them keep working when a field is added.
 */
export function requestObject<T extends z.core.$ZodLooseShape>(shape: T) {
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code === 'unrecognized_keys') {
        const noun = issue.keys.length === 1 ? 'field' : 'fields';
        // The fields of the schema that refused them, not of `shape`: a derived schema (`.omit({ callback_url:
        // true })`, as the MCP tools' inputs are) keeps this error function but not every field.
        const allowed = Object.keys(shapeOf(issue.inst) ?? shape).join(', ');
        return `unknown ${noun} ${issue.keys.map((key) => quote(key)).join(', ')} (allowed: ${allowed})`;
      }
      return 'expected a JSON object';
    },
  });
}

/**
 * An error function for a field's own type/format issue: "is required" when the field is missing, `message`
 * otherwise. (A schema-level `error` replaces zod's message for every issue the schema itself raises,
 * including the one for a missing field.)
 */
export function fieldError(message: string | ((input: unknown) => string)) {
  return (issue: { input?: unknown }): string => {
    if (issue.input === undefined) return 'is required';
    return typeof message === 'string' ? message : message(issue.input);
  };
}

/** A UUID field with a message that shows what a UUID looks like. */
export function uuid() {
  return z.uuid({ error: fieldError((input) => `must be a UUID such as 3fa85f64-5717-4562-b3fc-2c963f66afa6, got ${quote(input)}`) });
}
