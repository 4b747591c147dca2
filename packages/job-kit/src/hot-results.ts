// Cache hits answered from memory. A tenant's answer to a request (its job id, and the result's response bytes) is
// kept after the database served it, and answered again without a round trip while three things hold:
//
// - the result cache entry has not expired: a copy lives at most the entry's remaining time, measured by the
//   database's clock from when the request was sent (so a process clock that runs slow cannot stretch it);
// - nothing the database would now answer differently has changed: a cache entry of the request's family written,
//   replaced or removed (a no-cache refresh, a run that completes), or the tenant's customer tools changed (the tool
//   set digest in the key). Triggers NOTIFY every replica of those on commit (migration 1765065600000), and a
//   change makes the copies it may affect unconfirmed: the next request asks the database again;
// - those notifications are flowing: while the LISTEN connection is down nothing is answered from memory, and
//   when it is back every copy is unconfirmed (what was notified meanwhile is lost).
//
// A completed job's result never changes, so a confirmed copy is what the database would answer: each replica's
// memory is its own, and any replica that answers from it answers what the shared cache holds. Copies are per
// request and tenant (the request's own key holds the tenant): a tenant is only ever answered from memory what the
// database answered that tenant. Key revocation is not this module's: the gateway refuses the key before the
// request reaches a service.
import { performance } from 'node:perf_hooks';
import { listen, type Listener, type Pool } from '@fin/db';
import type { Logger } from '@fin/log';

/** Channels of migration 1765065600000's triggers. */
const RESULT_CACHE_CHANGED = 'result_cache_changed';
const CUSTOMER_TOOLS_CHANGED = 'customer_tools_changed';

/** HOT_RESULTS_MAX_BYTES by default: 32 MiB, some thousands of news results or stock reports of a few KB each. */
export const DEFAULT_HOT_RESULTS_MAX_BYTES = 32 * 1024 * 1024;

/**
 * What a copy costs beyond its result's bytes (counted once per source job, however many tenants hold it): its
 * keys and ids as strings, two dates and the map entries that index it.
 */
const ENTRY_OVERHEAD_BYTES = 512;

/** A tenant's answer to one request, as the database gave it. */
export interface HotAnswer {
  /** The request's own cache key (cacheKeysFor's `own`): it holds the tenant, and the data's hash when sent. */
  requestKey: string;
  tenantId: string;
  /** The tenant's own job the hit is answered under. */
  jobId: string;
  /** The job that produced the result. */
  sourceJobId: string;
  producedAt: Date;
  expiresAt: Date;
  /** The response body after its `job_id`: `"status":"completed","from_cache":true,…}`, validated once. */
  rest: Buffer;
}

export interface HotResults {
  /** The answer to serve from memory for this request, when one may be (see above). */
  servable(requestKey: string): HotAnswer | undefined;
  /** The answer held for this request, confirmed or not: its source's bytes need not be sent again. */
  held(requestKey: string): HotAnswer | undefined;
  /** The response bytes of a source job's result, when any copy holds them. */
  bytesOf(sourceJobId: string): Buffer | undefined;
  /** The change counter: taken before the database is asked, handed to remember(). */
  mark(): number;
  /**
   * Keeps the database's answer, sent at `sentAt` (performance.now()) with `ttlMs` left on the entry. It is served
   * from memory only if no change was notified since `mark` (a read that started before a change may predate it).
   */
  remember(answer: HotAnswer, ttlMs: number, sentAt: number, mark: number): void;
  /** Whether change notifications are flowing (nothing is answered from memory while they are not). */
  readonly listening: boolean;
  close(): Promise<void>;
}

export interface HotResultsOptions {
  /** The LISTEN connection is opened with this pool's settings (a direct one behind a pooler). */
  pool: Pool;
  logger: Logger;
  /** The memory the copies may take, result bytes and overhead (HOT_RESULTS_MAX_BYTES); the least recently used go first. */
  maxBytes: number;
}

interface Entry {
  answer: HotAnswer;
  family: string;
  /** performance.now() past which the database's entry may have expired. */
  deadline: number;
  /** False once a change may have made the database answer otherwise (until it answers again). */
  confirmed: boolean;
}

interface Source {
  rest: Buffer;
  /** Copies holding it. */
  holders: number;
}

/** `<type>:<hash of the parameters>`: what every key of one request shares (shared, own, own with a tool set). */
function familyOf(cacheKey: string): string {
  const second = cacheKey.indexOf(':', cacheKey.indexOf(':') + 1);
  return second < 0 ? cacheKey : cacheKey.slice(0, second);
}

/** No copies: every request asks the database (HOT_RESULTS_MAX_BYTES=0, or an app built without them). */
export const noHotResults: HotResults = {
  servable: () => undefined,
  held: () => undefined,
  bytesOf: () => undefined,
  mark: () => 0,
  remember: () => undefined,
  listening: false,
  close: async () => {},
};

/** Copies of cache hits in memory, within `maxBytes`, kept true by the database's change notifications. */
export function createHotResults({ pool, logger, maxBytes }: HotResultsOptions): HotResults {
  if (maxBytes <= 0) return noHotResults;
  // Map order is recency: an entry is moved to the end when served.
  const entries = new Map<string, Entry>();
  const byFamily = new Map<string, Set<string>>();
  const sources = new Map<string, Source>();
  let bytes = 0;
  let changes = 0;

  const unconfirm = (requestKey: string) => {
    const entry = entries.get(requestKey);
    if (entry !== undefined) entry.confirmed = false;
  };
  const unconfirmAll = () => {
    changes++;
    for (const entry of entries.values()) entry.confirmed = false;
  };

  const drop = (requestKey: string) => {
    const entry = entries.get(requestKey);
    if (entry === undefined) return;
    entries.delete(requestKey);
    bytes -= ENTRY_OVERHEAD_BYTES;
    const family = byFamily.get(entry.family);
    family?.delete(requestKey);
    if (family?.size === 0) byFamily.delete(entry.family);
    const source = sources.get(entry.answer.sourceJobId);
    if (source !== undefined && --source.holders === 0) {
      sources.delete(entry.answer.sourceJobId);
      bytes -= source.rest.length;
    }
  };

  const listener: Listener = listen(
    [RESULT_CACHE_CHANGED, CUSTOMER_TOOLS_CHANGED],
    (payload, channel) => {
      changes++;
      if (channel === RESULT_CACHE_CHANGED) {
        for (const requestKey of byFamily.get(familyOf(payload)) ?? []) unconfirm(requestKey);
      } else {
        for (const [requestKey, entry] of entries) if (entry.answer.tenantId === payload) unconfirm(requestKey);
      }
    },
    { pool, logger: logger.child({ component: 'hot-results' }), onListening: unconfirmAll, onLost: unconfirmAll, pingIntervalMs: 10_000 },
  );

  return {
    servable(requestKey) {
      const entry = entries.get(requestKey);
      if (entry === undefined || !entry.confirmed || !listener.listening) return undefined;
      if (performance.now() >= entry.deadline) {
        drop(requestKey);
        return undefined;
      }
      entries.delete(requestKey);
      entries.set(requestKey, entry);
      return entry.answer;
    },
    held: (requestKey) => entries.get(requestKey)?.answer,
    bytesOf: (sourceJobId) => sources.get(sourceJobId)?.rest,
    mark: () => changes,
    remember(answer, ttlMs, sentAt, mark) {
      const { requestKey, sourceJobId } = answer;
      drop(requestKey);
      const held = sources.get(sourceJobId);
      const cost = ENTRY_OVERHEAD_BYTES + (held === undefined ? answer.rest.length : 0);
      if (cost > maxBytes) return;
      // Held by this copy from here, so that dropping the oldest copies cannot drop it.
      const source = held ?? { rest: answer.rest, holders: 0 };
      source.holders++;
      while (bytes + cost > maxBytes) {
        const oldest = entries.keys().next();
        if (oldest.done) break;
        drop(oldest.value);
      }
      if (held === undefined) sources.set(sourceJobId, source);
      bytes += cost;
      const family = familyOf(requestKey);
      entries.set(requestKey, { answer: { ...answer, rest: source.rest }, family, deadline: sentAt + ttlMs, confirmed: mark === changes });
      let members = byFamily.get(family);
      if (members === undefined) byFamily.set(family, (members = new Set()));
      members.add(requestKey);
    },
    get listening() {
      return listener.listening;
    },
    close: () => listener.close(),
  };
}
