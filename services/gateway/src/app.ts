import { createOpenApiDocument, type HttpMethod } from '@fin/contracts';
import { badRequest, createServiceApp, type Lifecycle } from '@fin/http';
import type { Logger } from '@fin/log';
import type express from 'express';
import type { RequestHandler } from 'express';
import { authenticate, callerFrom, checkScope, endStreamOnRevocation, holdChatSlot, principalOf } from './access';
import type { Authenticator } from './auth/types';
import { bodyDeadline, untrustedForwardingHeaders } from './connection-guards';
import { DOCS_ASSETS_PATH, docsHandlers } from './openapi/docs';
import { readBody } from './proxy/body';
import { forwardTo, signingKeysFor, type ProxyOptions } from './proxy/forward';
import type { Upstreams } from './proxy/upstreams';
import type { RateLimits } from './rate-limit/types';
import { GATEWAY_ROUTES, PASS_THROUGH_PREFIXES, type GatewayRoute } from './routes';

export interface ProxyLimits {
  /** Largest request body (400 naming `body` beyond). */
  maxBodyBytes: number;
  /** Until a service's response headers arrive (504 beyond). */
  responseTimeoutMs: number;
  /** Longest silence inside a JSON response body. */
  idleTimeoutMs: number;
  /** From a request's head to the end of its body (400 naming `body` beyond, and the connection closed). */
  bodyTimeoutMs: number;
}

export const DEFAULT_PROXY_LIMITS: ProxyLimits = {
  maxBodyBytes: 256 * 1024,
  responseTimeoutMs: 120_000,
  idleTimeoutMs: 30_000,
  bodyTimeoutMs: 30_000,
};

export interface GatewayDeps {
  logger: Logger;
  authenticator: Authenticator;
  rateLimits: RateLimits;
  /** Connection pools to the services, one per service. */
  upstreams: Upstreams;
  /** INTERNAL_SIGNING_SECRET: each service's key is derived from it, once, to sign the identity headers it verifies. */
  signingSecret: string;
  /** Whether the gateway's own dependencies (its database) are reachable. */
  readiness: () => Promise<void>;
  lifecycle?: Lifecycle;
  limits?: Partial<ProxyLimits>;
  /** Proxies in front of the gateway that append to X-Forwarded-For (CLIENT_ADDRESS_HOPS). Default 0. */
  trustedProxyHops?: number;
}

/**
 * A path segment "." or ".." (also percent-encoded) could make a service's router resolve a pass-through path
 * outside its prefix; refused.
 */
const refuseDotSegments: RequestHandler = (req, _res, next) => {
  const segments = req.path.split('/');
  const unsafe = segments.some((segment) => {
    try {
      const decoded = decodeURIComponent(segment);
      return decoded === '.' || decoded === '..' || decoded.includes('/') || decoded.includes('\\');
    } catch {
      return true;
    }
  });
  next(unsafe ? badRequest('The request path is not valid.') : undefined);
};

/**
 * The gateway's HTTP application. Pure: it never listens, so tests hand it to supertest. Every API route goes
 * through: request id → API key → scope → rate limit (or chat slot) → body checks → the service.
 */
export function createApp(deps: GatewayDeps): express.Express {
  const { logger, authenticator, rateLimits, upstreams, signingSecret, readiness, lifecycle } = deps;
  const limits: ProxyLimits = { ...DEFAULT_PROXY_LIMITS, ...deps.limits };
  const proxy: ProxyOptions = {
    logger,
    signingKeys: signingKeysFor(signingSecret),
    responseTimeoutMs: limits.responseTimeoutMs,
    idleTimeoutMs: limits.idleTimeoutMs,
  };

  const document = createOpenApiDocument();
  const documentJson = JSON.stringify(document);
  const docs = docsHandlers(document.info.title);
  const localHandlers: Record<string, RequestHandler> = {
    getOpenApiDocument: (_req, res) => {
      res.type('application/json').send(documentJson);
    },
    getApiDocs: docs.page,
  };

  const handlersFor = (route: GatewayRoute): RequestHandler[] => {
    const { target } = route;
    if (target.kind === 'local') {
      const handler = localHandlers[route.id];
      if (handler === undefined) throw new Error(`no local handler for route ${route.id}`);
      return [handler];
    }
    const handlers: RequestHandler[] = [authenticate(authenticator, deps.trustedProxyHops), checkScope(route)];
    if (target.limit !== null) handlers.push(rateLimits.forProduct(target.limit));
    if (route.limit === 'concurrent_streams') handlers.push(holdChatSlot(rateLimits, logger));
    if (Object.values(route.responses).some((response) => response.events !== undefined))
      handlers.push(endStreamOnRevocation(authenticator));
    handlers.push(...readBody({ limit: limits.maxBodyBytes, json: true }));
    handlers.push(forwardTo(upstreams[target.upstream], proxy, (res) => callerFrom(principalOf(res))));
    return handlers;
  };

  return createServiceApp({
    name: 'gateway',
    logger,
    readiness,
    ...(lifecycle === undefined ? {} : { lifecycle }),
    // Bodies are read raw and forwarded as they came (see proxy/body.ts).
    jsonBodyLimit: false,
    routes: (app) => {
      app.use(untrustedForwardingHeaders(deps.trustedProxyHops ?? 0), bodyDeadline({ timeoutMs: limits.bodyTimeoutMs, logger }));
      const register: Record<HttpMethod, (path: string, handlers: RequestHandler[]) => void> = {
        get: (path, handlers) => app.get(path, ...handlers),
        post: (path, handlers) => app.post(path, ...handlers),
        put: (path, handlers) => app.put(path, ...handlers),
        delete: (path, handlers) => app.delete(path, ...handlers),
      };
      for (const route of GATEWAY_ROUTES) register[route.method](route.expressPath, handlersFor(route));
      // The docs page's scripts: not part of the API, so not in the document.
      app.get(DOCS_ASSETS_PATH, docs.assets);
      for (const { prefix, upstream } of PASS_THROUGH_PREFIXES) {
        app.use(
          prefix,
          refuseDotSegments,
          ...readBody({ limit: limits.maxBodyBytes, json: false }),
          forwardTo(upstreams[upstream], proxy, () => null),
        );
      }
    },
  });
}
