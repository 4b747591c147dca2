import type { Pool } from '@fin/db';
import { AppError, tooManyRequests, unauthorized } from '@fin/http';
import type { Logger } from '@fin/log';
import { findActiveKey, hashApiKey, isWellFormedApiKey, recordKeysUsed, stillActiveKeyIds, type ActiveKey } from '@fin/api-keys';
import { listenForKeyChanges, type KeyChange } from './key-change-listener';
import { SCOPES, type Authenticator, type Principal, type Scope } from './types';

export interface AuthenticatorOptions {
  pool: Pool;
  /** The pool whose settings the LISTEN connection is opened with (a direct one behind a pooler); default `pool`. */
  listenPool?: Pool;
  logger: Logger;
  /** How long a verified key is served from memory while change notifications are flowing. Default 30 s. */
  cacheTtlMs?: number;
  /** Verified keys kept in memory at most (least recently used go first). Default 10,000. */
  maxCacheEntries?: number;
  /**
   * How long a verified key is trusted while the LISTEN connection is down, when a revocation could go
   * unnoticed. Default 1 s; 0 bypasses the cache entirely.
   */
  disconnectedCacheTtlMs?: number;
  /** api_keys.last_used_at is written at most this often per replica, for all keys used since. Default 60 s. */
  lastUsedFlushMs?: number;
  /** First delay before re-establishing the LISTEN connection. Default 500 ms (doubling, at most 10 s). */
  reconnectDelayMs?: number;
  /** Probe interval of the LISTEN connection. Default 10 s. */
  pingIntervalMs?: number;
  /**
   * Failed authentications (malformed, unknown, revoked keys; lookups in flight count until they succeed) one
   * client address may have per window before its keys are refused with 429 unless already verified. Default 30.
   */
  failuresPerClient?: number;
  /** The window of `failuresPerClient`. Default 60 s. */
  failureWindowMs?: number;
}

/** The Postgres-backed authenticator, with what operators and tests need to see of its state. */
export interface PostgresAuthenticator extends Authenticator {
  /** True while change notifications are being received (the cache is trusted for its full TTL). */
  readonly listening: boolean;
  readonly cacheSize: number;
  /** Writes pending last_used_at updates now (also done on an interval and at close). */
  flushLastUsed(): Promise<void>;
}

const MISSING_KEY = 'Missing API key: send it in the X-API-Key header.';
// One message for a malformed, unknown, revoked or expired key and a disabled tenant: which one it was is
// not the caller's business (it would help someone holding a stolen key).
const INVALID_KEY = 'Invalid API key.';

interface CacheEntry {
  principal: Principal;
  verifiedAt: number;
  /** The key's expires_at in epoch ms, or null. */
  expiresAt: number | null;
}

/** Client addresses whose failures are tracked at most; beyond, ended windows are pruned, then the oldest. */
const MAX_TRACKED_CLIENTS = 10_000;

interface Failures {
  count: number;
  resetAt: number;
}

interface Watched {
  tenantId: string;
  callbacks: Set<() => void>;
}

/**
 * How long a change notification is remembered: a stream that starts watching its key this soon after a change
 * of the key or its tenant has it checked once, since its authentication may have read the row before the change.
 */
const RECENT_CHANGE_MS = 10_000;
/**
 * A cached key in use is looked up again in the background once this share of its TTL has passed, so that a busy
 * key's entry is renewed before it runs out and no request waits for its lookup (without it, every TTL one
 * request of each busy key, and all those arriving during its round trip, waited). An entry is still never
 * trusted beyond its TTL: a refresh that has not answered by then is waited for, as a first lookup is.
 */
const REFRESH_AFTER_SHARE = 0.75;
/** Timers cannot wait longer (about 24.8 days); a stream's key expiring later than that is not timed. */
const MAX_TIMER_MS = 2 ** 31 - 1;

function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

function toPrincipal(key: ActiveKey): Principal {
  return Object.freeze({
    tenantId: key.tenantId,
    tenantName: key.tenantName,
    keyId: key.keyId,
    scopes: Object.freeze(key.scopes.filter(isScope)),
    limitOverrides: Object.freeze(key.limitOverrides),
  });
}

/**
 * API-key authentication: format and checksum (no I/O) → in-memory cache → one indexed lookup by SHA-256.
 *
 * Revocation, expiry, tenant disabling and scope or limit changes reach every replica within moments: the
 * database triggers NOTIFY api_key_changed on commit, and each authenticator LISTENs and evicts the affected
 * entries. If the LISTEN connection drops, cached entries are trusted for only `disconnectedCacheTtlMs` until it
 * is back, and everything cached is dropped on reconnect (notifications may have been missed meanwhile).
 */
export function createAuthenticator({
  pool,
  listenPool = pool,
  logger,
  cacheTtlMs = 30_000,
  maxCacheEntries = 10_000,
  disconnectedCacheTtlMs = 1_000,
  lastUsedFlushMs = 60_000,
  reconnectDelayMs = 500,
  pingIntervalMs = 10_000,
  failuresPerClient = 30,
  failureWindowMs = 60_000,
}: AuthenticatorOptions): PostgresAuthenticator {
  // Keyed by the base64 of the key's hash; Map order is recency (an entry is re-inserted on every hit).
  const cache = new Map<string, CacheEntry>();
  const inFlight = new Map<string, Promise<CacheEntry | null>>();
  // Bumped by every change notification and (re)connection: a lookup that started before the bump may have
  // read a row that has since changed, so its result is used for that request but not cached.
  let epoch = 0;
  const touched = new Set<string>();
  let flushing: Promise<void> = Promise.resolve();

  // Failed authentications per client address, in fixed windows. Counted in this process only: a shared counter
  // would itself cost the database round trip it is there to save. With n replicas a client gets at most n times
  // the allowance of lookups that fail.
  const failures = new Map<string, Failures>();
  const failuresOf = (client: string, now: number): Failures => {
    let entry = failures.get(client);
    if (entry === undefined || entry.resetAt <= now) {
      if (failures.size >= MAX_TRACKED_CLIENTS) {
        for (const [address, old] of failures) if (old.resetAt <= now) failures.delete(address);
        if (failures.size >= MAX_TRACKED_CLIENTS) failures.delete(failures.keys().next().value as string);
      }
      entry = { count: 0, resetAt: now + failureWindowMs };
      failures.delete(client);
      failures.set(client, entry);
    }
    return entry;
  };
  const refuseIfThrottled = (client: string | undefined, now: number) => {
    if (client === undefined) return;
    const entry = failures.get(client);
    if (entry === undefined || entry.resetAt <= now || entry.count < failuresPerClient) return;
    const retryAfter = Math.max(1, Math.ceil((entry.resetAt - now) / 1000));
    throw tooManyRequests(`Too many failed authentication attempts from this address. Retry in ${retryAfter} s.`, retryAfter);
  };

  // Open event streams by key: their callbacks run when a change notification shows the key is no longer valid.
  const watched = new Map<string, Watched>();
  // Key and tenant ids of recent change notifications → when they arrived.
  const recentChanges = new Map<string, number>();
  // Expiry (epoch ms) of looked-up keys that have one, so that a watched key's streams end when it expires.
  const expiries = new Map<string, number>();
  const toCheck = new Set<string>();
  let checking: Promise<void> | undefined;
  const checkWatched = async () => {
    while (toCheck.size > 0) {
      const ids = [...toCheck].filter((id) => watched.has(id));
      toCheck.clear();
      if (ids.length === 0) continue;
      try {
        const valid = await stillActiveKeyIds(pool, ids);
        for (const id of ids) {
          const entry = watched.get(id);
          if (valid.has(id) || entry === undefined) continue;
          watched.delete(id);
          for (const callback of entry.callbacks) callback();
        }
      } catch (error) {
        // The listener reconnects when the database is back, and then checks every watched key again.
        logger.warn({ err: error, keys: ids.length }, 'could not check whether the keys of open streams are still valid');
      }
    }
  };
  const recheck = (ids: Iterable<string>) => {
    for (const id of ids) if (watched.has(id)) toCheck.add(id);
    if (toCheck.size === 0 || checking !== undefined) return;
    checking = checkWatched().finally(() => {
      checking = undefined;
    });
  };

  const evict = (change: KeyChange) => {
    epoch++;
    const now = Date.now();
    if (recentChanges.size >= MAX_TRACKED_CLIENTS) {
      for (const [id, at] of recentChanges) if (now - at >= RECENT_CHANGE_MS) recentChanges.delete(id);
      // A storm of changes: forgetting them only costs the late-watch check of streams starting meanwhile.
      if (recentChanges.size >= MAX_TRACKED_CLIENTS) recentChanges.clear();
    }
    recentChanges.set(change.id, now);
    // A request arriving from now on must not join a lookup that may have read the row before the change.
    inFlight.clear();
    for (const [hash, entry] of cache) {
      const id = change.kind === 'key' ? entry.principal.keyId : entry.principal.tenantId;
      if (id === change.id) cache.delete(hash);
    }
    if (change.kind === 'key') recheck([change.id]);
    else recheck([...watched].filter(([, entry]) => entry.tenantId === change.id).map(([keyId]) => keyId));
  };

  const listener = listenForKeyChanges({
    pool: listenPool,
    logger,
    reconnectDelayMs,
    pingIntervalMs,
    onChange: evict,
    onConnected: () => {
      epoch++;
      inFlight.clear();
      cache.clear();
      // Notifications sent while the connection was down are lost: every open stream's key is checked again.
      recheck(watched.keys());
    },
    onDisconnected: () => {
      epoch++;
    },
  });

  const ttlNow = () => (listener.connected ? cacheTtlMs : disconnectedCacheTtlMs);
  const isFresh = (entry: CacheEntry, now: number) =>
    now - entry.verifiedAt < ttlNow() && (entry.expiresAt === null || entry.expiresAt > now);

  const remember = (hash: string, entry: CacheEntry) => {
    cache.delete(hash);
    while (cache.size >= maxCacheEntries) {
      const oldest = cache.keys().next();
      if (oldest.done) break;
      cache.delete(oldest.value);
    }
    cache.set(hash, entry);
  };

  const lookup = (hashKey: string, hash: Buffer): Promise<CacheEntry | null> => {
    const pending = inFlight.get(hashKey);
    if (pending) return pending;
    const startedAt = epoch;
    const verifiedAt = Date.now();
    const promise = findActiveKey(pool, hash)
      .then((key) => {
        if (!key) return null;
        const entry: CacheEntry = { principal: toPrincipal(key), verifiedAt, expiresAt: key.expiresAt?.getTime() ?? null };
        if (entry.expiresAt !== null) {
          if (expiries.size >= maxCacheEntries && !expiries.has(key.keyId)) expiries.clear();
          expiries.set(key.keyId, entry.expiresAt);
        }
        if (epoch === startedAt) remember(hashKey, entry);
        return entry;
      })
      .finally(() => {
        if (inFlight.get(hashKey) === promise) inFlight.delete(hashKey);
      });
    inFlight.set(hashKey, promise);
    return promise;
  };

  /** Renews a cached entry off the request path (lookup() caches what it finds); one no longer found goes. */
  const refresh = (hashKey: string, hash: Buffer, cached: CacheEntry) => {
    lookup(hashKey, hash).then(
      (found) => {
        if (found === null && cache.get(hashKey) === cached) cache.delete(hashKey);
      },
      (error: unknown) => logger.warn({ err: error }, 'API-key refresh failed; the cached entry stands until its TTL'),
    );
  };

  const flushLastUsed = (): Promise<void> => {
    if (touched.size === 0) return flushing;
    const ids = [...touched];
    touched.clear();
    flushing = flushing
      .then(() => recordKeysUsed(pool, ids))
      .then(
        () => undefined,
        (error: unknown) => logger.warn({ err: error, keys: ids.length }, 'could not record api_keys.last_used_at'),
      );
    return flushing;
  };
  const flushTimer = setInterval(() => void flushLastUsed(), lastUsedFlushMs);
  flushTimer.unref();

  return {
    async authenticate(apiKey, client) {
      if (apiKey === undefined || apiKey === '') throw unauthorized(MISSING_KEY);
      const now = Date.now();
      // Shape and checksum first: a malformed or mistyped key costs no cache or database work.
      if (!isWellFormedApiKey(apiKey)) {
        refuseIfThrottled(client, now);
        if (client !== undefined) failuresOf(client, now).count++;
        throw unauthorized(INVALID_KEY);
      }
      const hash = hashApiKey(apiKey);
      const hashKey = hash.toString('base64');
      const cached = cache.get(hashKey);
      let entry: CacheEntry | null;
      if (cached && isFresh(cached, now)) {
        // A verified key costs nothing to accept: it passes even from an address that is being throttled.
        remember(hashKey, cached);
        entry = cached;
        if (now - cached.verifiedAt >= ttlNow() * REFRESH_AFTER_SHARE && !inFlight.has(hashKey)) refresh(hashKey, hash, cached);
      } else {
        if (cached) cache.delete(hashKey);
        // Before any lookup: an address that keeps failing gets no more round trips this window. A lookup this
        // request starts counts as a failure until it succeeds, so a burst of unknown keys sent at once is bounded
        // too; joining a lookup of the same key already in flight costs nothing and is counted only if it fails.
        refuseIfThrottled(client, now);
        const joining = inFlight.has(hashKey);
        const charged = client === undefined || joining ? undefined : failuresOf(client, now);
        if (charged !== undefined) charged.count++;
        try {
          entry = await lookup(hashKey, hash);
        } catch (error) {
          if (charged !== undefined) charged.count--;
          logger.error({ err: error }, 'API-key lookup failed');
          throw new AppError('service_unavailable', 'Authentication is temporarily unavailable; retry shortly.', { cause: error });
        }
        if (entry !== null && charged !== undefined) charged.count--;
        if (entry === null && joining && client !== undefined) failuresOf(client, Date.now()).count++;
      }
      if (!entry || (entry.expiresAt !== null && entry.expiresAt <= Date.now())) throw unauthorized(INVALID_KEY);
      touched.add(entry.principal.keyId);
      return entry.principal;
    },
    watch(principal, onInvalid) {
      let entry = watched.get(principal.keyId);
      if (entry === undefined) {
        entry = { tenantId: principal.tenantId, callbacks: new Set() };
        watched.set(principal.keyId, entry);
      }
      // Its own function, so that one stream's unwatch never removes another's identical callback.
      let expiryTimer: NodeJS.Timeout | undefined;
      const callback = () => {
        clearTimeout(expiryTimer);
        onInvalid();
      };
      const callbacks = entry.callbacks;
      callbacks.add(callback);
      // Expiry sends no notification: the key's streams end when it comes.
      const expiresAt = expiries.get(principal.keyId);
      if (expiresAt !== undefined && expiresAt - Date.now() < MAX_TIMER_MS) {
        expiryTimer = setTimeout(
          () => {
            callbacks.delete(callback);
            onInvalid();
          },
          Math.max(0, expiresAt - Date.now()),
        );
        expiryTimer.unref();
      }
      // Authenticated just before a change of its key or tenant arrived: the principal may predate it.
      const now = Date.now();
      const changedAt = Math.max(recentChanges.get(principal.keyId) ?? 0, recentChanges.get(principal.tenantId) ?? 0);
      if (now - changedAt < RECENT_CHANGE_MS) recheck([principal.keyId]);
      return () => {
        clearTimeout(expiryTimer);
        callbacks.delete(callback);
        if (callbacks.size === 0 && watched.get(principal.keyId)?.callbacks === callbacks) watched.delete(principal.keyId);
      };
    },
    get listening() {
      return listener.connected;
    },
    get cacheSize() {
      return cache.size;
    },
    flushLastUsed,
    async close() {
      clearInterval(flushTimer);
      await flushLastUsed();
      await listener.close();
      await checking;
      cache.clear();
      watched.clear();
    },
  };
}
