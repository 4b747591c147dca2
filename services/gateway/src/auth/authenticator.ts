import type { Pool } from '@fin/db';
import { AppError, unauthorized } from '@fin/http';
import type { Logger } from '@fin/log';
import { hashApiKey, isWellFormedApiKey } from '@fin/api-keys';
import { parseLimitOverrides } from '../rate-limit/defaults';
import { listenForKeyChanges, type KeyChange } from './key-change-listener';
import { SCOPES, type Authenticator, type Principal, type Scope } from './types';

export interface AuthenticatorOptions {
  pool: Pool;
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

interface KeyRow {
  key_id: string;
  tenant_id: string;
  tenant_name: string;
  scopes: string[];
  expires_at: Date | null;
  rate_limit_overrides: unknown;
}

const LOOKUP = `
  SELECT k.id AS key_id, k.tenant_id, t.name AS tenant_name, k.scopes, k.expires_at, t.rate_limit_overrides
    FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
   WHERE k.key_hash = $1
     AND k.revoked_at IS NULL
     AND (k.expires_at IS NULL OR k.expires_at > now())
     AND t.disabled_at IS NULL`;

function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

function toPrincipal(row: KeyRow): Principal {
  return Object.freeze({
    tenantId: row.tenant_id,
    tenantName: row.tenant_name,
    keyId: row.key_id,
    scopes: Object.freeze(row.scopes.filter(isScope)),
    limitOverrides: Object.freeze(parseLimitOverrides(row.rate_limit_overrides)),
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
  logger,
  cacheTtlMs = 30_000,
  maxCacheEntries = 10_000,
  disconnectedCacheTtlMs = 1_000,
  lastUsedFlushMs = 60_000,
  reconnectDelayMs = 500,
  pingIntervalMs = 10_000,
}: AuthenticatorOptions): PostgresAuthenticator {
  // Keyed by the base64 of the key's hash; Map order is recency (an entry is re-inserted on every hit).
  const cache = new Map<string, CacheEntry>();
  const inFlight = new Map<string, Promise<CacheEntry | null>>();
  // Bumped by every change notification and (re)connection: a lookup that started before the bump may have
  // read a row that has since changed, so its result is used for that request but not cached.
  let epoch = 0;
  const touched = new Set<string>();
  let flushing: Promise<void> = Promise.resolve();

  const evict = (change: KeyChange) => {
    epoch++;
    // A request arriving from now on must not join a lookup that may have read the row before the change.
    inFlight.clear();
    for (const [hash, entry] of cache) {
      const id = change.kind === 'key' ? entry.principal.keyId : entry.principal.tenantId;
      if (id === change.id) cache.delete(hash);
    }
  };

  const listener = listenForKeyChanges({
    pool,
    logger,
    reconnectDelayMs,
    pingIntervalMs,
    onChange: evict,
    onConnected: () => {
      epoch++;
      inFlight.clear();
      cache.clear();
    },
    onDisconnected: () => {
      epoch++;
    },
  });

  const isFresh = (entry: CacheEntry, now: number) => {
    const ttl = listener.connected ? cacheTtlMs : disconnectedCacheTtlMs;
    return now - entry.verifiedAt < ttl && (entry.expiresAt === null || entry.expiresAt > now);
  };

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
    const promise = pool
      .query<KeyRow>({ name: 'gateway-auth-lookup', text: LOOKUP, values: [hash] })
      .then(({ rows: [row] }) => {
        if (!row) return null;
        const entry: CacheEntry = { principal: toPrincipal(row), verifiedAt, expiresAt: row.expires_at?.getTime() ?? null };
        if (epoch === startedAt) remember(hashKey, entry);
        return entry;
      })
      .finally(() => {
        if (inFlight.get(hashKey) === promise) inFlight.delete(hashKey);
      });
    inFlight.set(hashKey, promise);
    return promise;
  };

  const flushLastUsed = (): Promise<void> => {
    if (touched.size === 0) return flushing;
    const ids = [...touched];
    touched.clear();
    flushing = flushing
      .then(() => pool.query('UPDATE api_keys SET last_used_at = now() WHERE id = ANY($1::uuid[])', [ids]))
      .then(
        () => undefined,
        (error: unknown) => logger.warn({ err: error, keys: ids.length }, 'could not record api_keys.last_used_at'),
      );
    return flushing;
  };
  const flushTimer = setInterval(() => void flushLastUsed(), lastUsedFlushMs);
  flushTimer.unref();

  return {
    async authenticate(apiKey) {
      if (apiKey === undefined || apiKey === '') throw unauthorized(MISSING_KEY);
      // Shape and checksum first: a malformed or mistyped key costs no cache or database work.
      if (!isWellFormedApiKey(apiKey)) throw unauthorized(INVALID_KEY);
      const hash = hashApiKey(apiKey);
      const hashKey = hash.toString('base64');
      const now = Date.now();
      const cached = cache.get(hashKey);
      let entry: CacheEntry | null;
      if (cached && isFresh(cached, now)) {
        remember(hashKey, cached);
        entry = cached;
      } else {
        if (cached) cache.delete(hashKey);
        try {
          entry = await lookup(hashKey, hash);
        } catch (error) {
          logger.error({ err: error }, 'API-key lookup failed');
          throw new AppError('service_unavailable', 'Authentication is temporarily unavailable; retry shortly.', { cause: error });
        }
      }
      if (!entry || (entry.expiresAt !== null && entry.expiresAt <= Date.now())) throw unauthorized(INVALID_KEY);
      touched.add(entry.principal.keyId);
      return entry.principal;
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
      cache.clear();
    },
  };
}
