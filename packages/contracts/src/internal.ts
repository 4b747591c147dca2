// Helpers shared by the contract modules. Not re-exported from index.ts: they shape the public schemas but
// are not part of the package's API.
import { z } from 'zod';

/** A value quoted for an error message, cut short so a hostile 1 MB string cannot bloat the detail. */
export function quote(value: unknown, max = 40): string {
  const text = typeof value === 'string' ? value : String(value);
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return JSON.stringify(cut);
}

/** Removes repeated values, keeping the first occurrence of each and the original order. */
export function dedupe<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}

/** Size in bytes of a value serialised as compact JSON (what a caller would send and we would store). */
export function jsonBytes(value: unknown): number {
  try {
    const json = JSON.stringify(value);
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

/**
 * Every request body (and nested request object) is strict: an unknown field is a 400 naming the field and
 * listing the allowed ones. Silently dropping `langauge` or `symbol` would hand the caller a result built from
 * defaults they did not ask for; rejecting it surfaces the typo at once. Response schemas are NOT strict, so
 * that clients parsing them keep working when a field is added.
 */
export function requestObject<T extends z.core.$ZodLooseShape>(shape: T) {
  const allowed = Object.keys(shape).join(', ');
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code === 'unrecognized_keys') {
        const noun = issue.keys.length === 1 ? 'field' : 'fields';
        return `unknown ${noun} ${issue.keys.map((key) => quote(key)).join(', ')} (allowed: ${allowed})`;
      }
      if (issue.code === 'invalid_type') return 'expected a JSON object';
      return undefined;
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
