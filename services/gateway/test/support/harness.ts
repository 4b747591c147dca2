// What the gateway's HTTP tests share: in-test implementations of the authentication and rate-limit
// interfaces (the real ones have their own suites), and real services behind the gateway — express apps on
// ports of their own that verify the gateway's signed identity exactly as the product services do.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  checkBodyDigest,
  createServiceApp,
  identityKey,
  identityOf,
  tooManyRequests,
  unauthorized,
  verifyIdentity,
  type InternalIdentity,
} from '@fin/http';
import { createLogger, type Logger } from '@fin/log';
import express, { type Request, type Response } from 'express';
import { createApp } from '../../src/app';
import type { Authenticator, Principal, Scope } from '../../src/auth/types';
import { createServicePools, destroyServicePools, type ServicePools } from '../../src/proxy/service-pools';
import type { LimitedProduct, RateLimits, ReleaseChatSlot } from '../../src/rate-limit/types';
import { UPSTREAM_NAMES, type UpstreamName } from '../../src/routes';
import { httpUpstream, type UpstreamLimits } from '../../src/upstream';

export const SECRET = 'gateway-test-secret-0123456789abcdef';
export const UUID = '3fa85f64-5717-4562-b3fc-2c963f66afa6';
export const ALL_SCOPES: readonly Scope[] = ['news', 'stock-report', 'analysis', 'chat', 'tools', 'webhooks', 'filings'];

export const logger: Logger = createLogger({ service: 'gateway-test', level: 'silent' });

function principal(keyId: string, scopes: readonly Scope[]): Principal {
  return { tenantId: '6f1c2b8e-0d3a-4e5f-9a7b-1c2d3e4f5a6b', tenantName: 'acme', keyId, scopes, limitOverrides: {} };
}

/** API key values the test authenticator knows: one with every scope, and one lacking each scope. */
export const KEYS = {
  all: 'fin_test_all_scopes',
  without: (scope: Scope) => `fin_test_without_${scope}`,
};

/** Knows the keys in KEYS; any other value (or none) is a 401, as the real authenticator answers. */
class TestAuthenticator implements Authenticator {
  readonly seen: (string | undefined)[] = [];
  private readonly principals = new Map<string, Principal>([
    [KEYS.all, principal('key-all', ALL_SCOPES)],
    ...ALL_SCOPES.map((scope): [string, Principal] => [
      KEYS.without(scope),
      principal(
        `key-without-${scope}`,
        ALL_SCOPES.filter((s) => s !== scope),
      ),
    ]),
  ]);
  /** Makes authenticate() fail as a broken dependency would (not with an AppError). */
  failWith: Error | undefined;

  /** Callbacks of watch(), by key id: revoke() runs them, as a key-change notification would. */
  private readonly watchers = new Map<string, Set<() => void>>();

  watch(principal: Principal, onInvalid: () => void): () => void {
    const callbacks = this.watchers.get(principal.keyId) ?? new Set<() => void>();
    this.watchers.set(principal.keyId, callbacks);
    const callback = () => onInvalid();
    callbacks.add(callback);
    return () => callbacks.delete(callback);
  }

  /** How many open requests of `keyId` are watched. */
  watching(keyId = 'key-all'): number {
    return this.watchers.get(keyId)?.size ?? 0;
  }

  /** The key stops being valid for the requests already authenticated with it (as after a revocation). */
  revoke(keyId = 'key-all'): void {
    const callbacks = [...(this.watchers.get(keyId) ?? [])];
    this.watchers.delete(keyId);
    for (const callback of callbacks) callback();
  }

  async authenticate(apiKey: string | undefined): Promise<Principal> {
    this.seen.push(apiKey);
    if (this.failWith !== undefined) throw this.failWith;
    if (apiKey === undefined) throw unauthorized('Missing API key: send it in the X-API-Key header.');
    const found = this.principals.get(apiKey);
    if (found === undefined) throw unauthorized();
    return found;
  }

  async close(): Promise<void> {}
}

/** Counts hits in memory; a product in `exhausted` answers 429 the way the real limiter does. */
class TestRateLimits implements RateLimits {
  readonly hits: { product: LimitedProduct; keyId: string }[] = [];
  readonly exhausted = new Set<LimitedProduct>();
  /** Chat slots each key may hold at once. */
  chatSlotsPerKey = 10;
  readonly held = new Map<string, number>();
  readonly slotEvents: string[] = [];

  async admit(product: LimitedProduct, caller: Principal, _req: Request, res: Response): Promise<undefined> {
    this.hits.push({ product, keyId: caller.keyId });
    const headers = {
      'X-RateLimit-Limit': '100',
      'X-RateLimit-Remaining': this.exhausted.has(product) ? '0' : '99',
      'X-RateLimit-Reset': '1767225660',
    };
    res.set(headers);
    if (this.exhausted.has(product)) throw tooManyRequests(`Rate limit exceeded: 100 ${product} requests per minute.`, 42, headers);
    return undefined;
  }

  async acquireChatSlot(caller: Principal): Promise<ReleaseChatSlot> {
    const count = this.held.get(caller.keyId) ?? 0;
    if (count >= this.chatSlotsPerKey)
      throw tooManyRequests(`Already ${this.chatSlotsPerKey} chat requests in flight for this API key.`, 1);
    this.held.set(caller.keyId, count + 1);
    this.slotEvents.push('acquire');
    return async (how) => {
      this.held.set(caller.keyId, (this.held.get(caller.keyId) ?? 1) - 1);
      this.slotEvents.push(how === 'ended' ? 'release' : 'release detached');
    };
  }

  heldBy(keyId = 'key-all'): number {
    return this.held.get(keyId) ?? 0;
  }

  async close(): Promise<void> {}
}

export interface Listening {
  server: http.Server;
  url: string;
  close(): Promise<void>;
}

export async function listen(app: http.RequestListener): Promise<Listening> {
  const server = http.createServer(app);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * A URL where nothing listens (a service that is down). Port 1 (tcpmux) is privileged and served by nothing here:
 * an ephemeral port freed for the purpose could be taken by another suite's server before the request is sent.
 */
export function deadUrl(): string {
  return 'http://127.0.0.1:1';
}

interface RecordedRequest {
  method: string;
  path: string;
  identity: InternalIdentity;
  headers: http.IncomingHttpHeaders;
  /** The body exactly as it arrived. */
  body: string;
}

interface FakeService extends Listening {
  name: UpstreamName;
  received: RecordedRequest[];
}

/**
 * A service behind the gateway: verifies the signed identity (the portal also accepts anonymous requests, for
 * its pages), runs `mount` for routes of the test's own, and otherwise echoes what it received as JSON.
 */
async function startFakeService(name: UpstreamName, mount?: (app: express.Express) => void): Promise<FakeService> {
  const received: RecordedRequest[] = [];
  const app = createServiceApp({
    name,
    logger,
    readiness: async () => {},
    jsonBodyLimit: false,
    routes: (a) => {
      a.use(verifyIdentity(identityKey(SECRET, name), { allowAnonymous: name === 'portal', logger }));
      a.use(express.raw({ type: () => true, verify: checkBodyDigest }));
      a.use((req, res, next) => {
        const body: unknown = req.body;
        received.push({
          method: req.method,
          path: req.originalUrl,
          identity: identityOf(res),
          headers: req.headers,
          body: Buffer.isBuffer(body) ? body.toString('utf8') : '',
        });
        next();
      });
      mount?.(a);
      a.all('/{*path}', (req, res) => {
        const last = received[received.length - 1];
        res.json({ service: name, method: req.method, path: req.originalUrl, identity: last?.identity, body: last?.body });
      });
    },
  });
  const listening = await listen(app);
  return { ...listening, name, received };
}

export interface Harness {
  app: express.Express;
  auth: TestAuthenticator;
  rateLimits: TestRateLimits;
  services: Record<UpstreamName, FakeService>;
  upstreams: ServicePools;
  close(): Promise<void>;
}

export interface HarnessOptions {
  /** Routes of a service's own, mounted before its echo. */
  mount?: Partial<Record<UpstreamName, (app: express.Express) => void>>;
  /** Where an upstream points instead of its fake service (e.g. a dead URL). */
  urls?: Partial<Record<UpstreamName, string>>;
  limits?: Partial<UpstreamLimits & { bodyTimeoutMs: number }>;
  /** CLIENT_ADDRESS_HOPS: proxies trusted in front of the gateway. */
  trustedProxyHops?: number;
}

/** The gateway app with every service behind it running. close() stops them all. */
export async function startHarness({ mount = {}, urls = {}, limits, trustedProxyHops }: HarnessOptions = {}): Promise<Harness> {
  const started = await Promise.all(UPSTREAM_NAMES.map((name) => startFakeService(name, mount[name])));
  const services = Object.fromEntries(started.map((service) => [service.name, service])) as Record<UpstreamName, FakeService>;
  const upstreams = createServicePools(
    Object.fromEntries(UPSTREAM_NAMES.map((name) => [name, urls[name] ?? services[name].url])) as Record<UpstreamName, string>,
    { connectTimeoutMs: 2_000 },
  );
  const auth = new TestAuthenticator();
  const rateLimits = new TestRateLimits();
  const app = createApp({
    logger,
    authenticator: auth,
    rateLimits,
    upstream: httpUpstream({ pools: upstreams, signingSecret: SECRET, logger, ...(limits === undefined ? {} : { limits }) }),
    readiness: async () => {},
    ...(limits?.bodyTimeoutMs === undefined ? {} : { bodyTimeoutMs: limits.bodyTimeoutMs }),
    ...(trustedProxyHops === undefined ? {} : { trustedProxyHops }),
  });
  return {
    app,
    auth,
    rateLimits,
    services,
    upstreams,
    close: async () => {
      await destroyServicePools(upstreams);
      await Promise.all(started.map((service) => service.close()));
    },
  };
}

export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A concrete request for a route of the table: path parameters filled in, a JSON body where it takes one. */
export function sampleRequest(
  route: { method: string; path: string; request?: { body?: unknown; query?: unknown } },
  jobType = 'news',
): { path: string; body: object | undefined } {
  const path = route.path
    .replace('{job_type}', jobType)
    .replace('{job_id}', UUID)
    .replace('{id}', UUID)
    .replace('{delivery_id}', UUID)
    .replace('{accession}', '0000320193-25-000079')
    .replace('{item}', '1A');
  const query = route.request?.query !== undefined ? `?conversation_id=${UUID}` : '';
  return { path: `${path}${query}`, body: route.request?.body !== undefined ? { sample: true } : undefined };
}
