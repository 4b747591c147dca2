import { createOpenApiDocument, type HttpMethod } from '@fin/contracts';
import { createServiceApp, type Lifecycle } from '@fin/http';
import type { Logger } from '@fin/log';
import type express from 'express';
import type { RequestHandler } from 'express';
import { admission } from './access';
import type { Authenticator } from './auth/types';
import { bodyDeadline, untrustedForwardingHeaders } from './connection-guards';
import { DOCS_ASSETS_PATH, docsHandlers } from './openapi/docs';
import type { RateLimits } from './rate-limit/types';
import { GATEWAY_ROUTES, PASS_THROUGH_PREFIXES, type GatewayRoute } from './routes';
import type { Upstream } from './upstream';

/** From a request's head to the end of its body, by default (400 naming `body` beyond, and the connection closed). */
export const DEFAULT_BODY_TIMEOUT_MS = 30_000;

export interface GatewayDeps {
  logger: Logger;
  authenticator: Authenticator;
  rateLimits: RateLimits;
  /** The services behind the gateway: over HTTP (httpUpstream) or in this process (inProcessUpstream). */
  upstream: Upstream;
  /** Whether the gateway's own dependencies (its database) are reachable. */
  readiness: () => Promise<void>;
  lifecycle?: Lifecycle;
  /** From a request's head to the end of its body (BODY_TIMEOUT_MS). Default 30 s. */
  bodyTimeoutMs?: number;
  /** Proxies in front of the gateway that append to X-Forwarded-For (CLIENT_ADDRESS_HOPS). Default 0. */
  trustedProxyHops?: number;
}

/**
 * The gateway's HTTP application. Pure: it never listens, so tests hand it to supertest. Every API route goes
 * through: request id → admission (API key → scope → rate limit and budget → chat slot), which yields the caller →
 * the upstream, called with it (body, then the service).
 */
export function createApp(deps: GatewayDeps): express.Express {
  const { logger, authenticator, rateLimits, upstream, readiness, lifecycle } = deps;

  const document = createOpenApiDocument();
  const documentJson = JSON.stringify(document);
  const docs = docsHandlers(document.info.title);
  const localHandlers: Record<string, RequestHandler> = {
    getOpenApiDocument: (_req, res) => {
      res.type('application/json').send(documentJson);
    },
    getApiDocs: docs.page,
  };

  const handlerFor = (route: GatewayRoute): RequestHandler => {
    if (route.target.kind === 'local') {
      const handler = localHandlers[route.id];
      if (handler === undefined) throw new Error(`no local handler for route ${route.id}`);
      return handler;
    }
    const admit = admission(route, { authenticator, rateLimits, logger, trustedProxyHops: deps.trustedProxyHops });
    return async (req, res, next) => {
      try {
        const caller = await admit(req, res);
        if (caller !== undefined) await upstream.call(route, caller, req, res);
      } catch (error) {
        next(error);
      }
    };
  };

  return createServiceApp({
    name: 'gateway',
    logger,
    readiness,
    ...(lifecycle === undefined ? {} : { lifecycle }),
    // Bodies are read by the upstream: raw and forwarded as they came over HTTP, parsed once in one process.
    jsonBodyLimit: false,
    routes: (app) => {
      app.use(
        untrustedForwardingHeaders(deps.trustedProxyHops ?? 0),
        bodyDeadline({ timeoutMs: deps.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS, logger }),
      );
      const register: Record<HttpMethod, (path: string, handler: RequestHandler) => void> = {
        get: (path, handler) => app.get(path, handler),
        post: (path, handler) => app.post(path, handler),
        put: (path, handler) => app.put(path, handler),
        delete: (path, handler) => app.delete(path, handler),
      };
      for (const route of GATEWAY_ROUTES) register[route.method](route.expressPath, handlerFor(route));
      // The docs page's scripts: not part of the API, so not in the document.
      app.get(DOCS_ASSETS_PATH, docs.assets);
      for (const { prefix, upstream: service } of PASS_THROUGH_PREFIXES) app.use(prefix, ...upstream.pages(prefix, service));
    },
  });
}
