import { hash } from 'node:crypto';

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
  return hash('sha256', text, 'hex');
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
 * The cache keys a request may use, before the tenant's customer tools are known (the database adds those):
 *
 * - `shared`, `<type>:<hash of the parameters>`: an entry any tenant may be served. Only a run with no tenant input
 *   at all (no custom data, no customer tool offered) writes it. Undefined when the request carries data.
 * - `own`, `<shared>:t:<tenant>[:d:<hash of data>]`: the tenant's own entry. A request with data uses it; so does a
 *   `no-cache` refresh, which renews the caller's entry and leaves the one other tenants see alone.
 *
 * A run that offered customer tools uses `<own>:x:<digest of the tool set>` (withToolSet), so a changed tool set
 * never serves a result made with the old one.
 */
export interface CacheKeys {
  shared?: string;
  own: string;
}

const TENANT_MARK = ':t:';
const TOOL_SET_MARK = ':x:';

export function cacheKeysFor({ jobType, parameters, tenantId, data }: CacheKeyParts): CacheKeys {
  const shared = `${jobType}:${sha256(canonicalJson(parameters)).slice(0, 32)}`;
  const own = `${shared}${TENANT_MARK}${tenantId}${data === undefined ? '' : `:d:${sha256(canonicalJson(data)).slice(0, 32)}`}`;
  return data === undefined ? { shared, own } : { own };
}

/** The key of a run that offered the tool set `toolSet` (a digest from the database), from the tenant's own key. */
export function withToolSet(own: string, toolSet: string): string {
  return `${own}${TOOL_SET_MARK}${toolSet}`;
}

/** What a cache key says about the run that may fill it: whose entry it is, and which tool set it was made with. */
export function describeCacheKey(key: string): { tenantScoped: boolean; toolSet: string | null } {
  const marked = key.indexOf(TOOL_SET_MARK);
  return { tenantScoped: key.includes(TENANT_MARK), toolSet: marked < 0 ? null : key.slice(marked + TOOL_SET_MARK.length) };
}
