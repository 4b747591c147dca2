import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every level, so equal values always serialise the same way. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) => {
    if (inner && typeof inner === 'object' && !Array.isArray(inner)) {
      return Object.fromEntries(Object.entries(inner as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    return inner;
  });
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export interface CacheKeyParts {
  jobType: string;
  /** Everything that changes the result besides custom data: e.g. sorted symbols, n, language, prompt version. */
  parameters: Record<string, unknown>;
  tenantId: string;
  /** Custom data: when present the entry belongs to the tenant (its data is never served to another). */
  data?: Record<string, unknown>;
}

/**
 * The result-cache key of a request: `<type>:<hash of the parameters>` for shared entries, and
 * `<type>:<hash>:t:<tenant>:<hash of data>` when the request carried custom data.
 */
export function cacheKeyFor({ jobType, parameters, tenantId, data }: CacheKeyParts): string {
  const base = `${jobType}:${sha256(canonicalJson(parameters)).slice(0, 32)}`;
  return data === undefined ? base : `${base}:t:${tenantId}:${sha256(canonicalJson(data)).slice(0, 32)}`;
}
