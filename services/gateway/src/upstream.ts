// The seam between the gateway and the services behind it. Every API route, once its caller is authenticated,
// its scope checked and its request counted, is answered by an Upstream:
// - httpUpstream: the service is another process (Kubernetes, Compose). The body is read as it came and sent over
//   HTTP with the caller's identity signed for that service, which verifies it (proxy/forward.ts).
// - inProcessUpstream: the service is a unit of this process (npm start). The gateway calls its handler with the
//   caller it authenticated: no socket, no second HTTP parse, no signature, no second request context.
// Either way the handler runs with input parsed by the contract's schemas, and streams are written to the
// gateway's own response (back-pressure, client disconnects and revocation as the response has them).
import { API_ROUTES, type ApiRouteId } from '@fin/contracts';
import {
  JSON_TYPES,
  badRequest,
  requestIdOf,
  requireJsonContentType,
  routeCall,
  vouchFor,
  type Caller,
  type RouteCall,
  type RouteHandler,
  type ServiceUnit,
} from '@fin/http';
import type { Logger } from '@fin/log';
import express, { type Request, type RequestHandler, type Response } from 'express';
import { readBody } from './proxy/body';
import { forward, signingKeysFor, type ProxyOptions } from './proxy/forward';
import { forwardedForThisHop } from './proxy/headers';
import { closeServicePools, type ServicePools } from './proxy/service-pools';
import type { GatewayRoute, UpstreamName } from './routes';

export interface Upstream {
  /**
   * Answers a request of `route` for `caller`, whom the gateway authenticated (its key, scope and limits passed):
   * reads the body and calls the service. Rejects with the error to answer when no answer was begun.
   */
  call(route: GatewayRoute, caller: Caller, req: Request, res: Response): Promise<void>;
  /** What answers the pages under a prefix reached without an API key (the portal's web portal). */
  pages(prefix: string, service: UpstreamName): RequestHandler[];
  /** After the requests have drained. */
  close(): Promise<void>;
}

export interface UpstreamLimits {
  /** Largest request body (400 naming `body` beyond). */
  maxBodyBytes: number;
  /** Until a service's response headers arrive (504 beyond): HTTP only. */
  responseTimeoutMs: number;
  /** Longest silence inside a JSON response body: HTTP only. */
  idleTimeoutMs: number;
}

const DEFAULT_UPSTREAM_LIMITS: UpstreamLimits = { maxBodyBytes: 256 * 1024, responseTimeoutMs: 120_000, idleTimeoutMs: 30_000 };

/** Runs express middleware (a body parser) as a step of its own: resolves when it passes, rejects with its error. */
function step(handler: RequestHandler, req: Request, res: Response): Promise<void> {
  return new Promise((resolve, reject) => {
    void handler(req, res, (error?: unknown) => {
      if (error === undefined) resolve();
      else reject(error instanceof Error ? error : new Error('a request step failed', { cause: error }));
    });
  });
}

/** Runs the middleware in order: the first error rejects and the rest do not run. */
async function steps(handlers: readonly RequestHandler[], req: Request, res: Response): Promise<void> {
  for (const handler of handlers) await step(handler, req, res);
}

/**
 * A path segment "." or ".." (also percent-encoded) could make a router resolve a page path outside its prefix;
 * refused.
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

export interface HttpUpstreamOptions {
  /** One keep-alive connection pool per service. */
  pools: ServicePools;
  /** INTERNAL_SIGNING_SECRET: each service's key is derived from it, once, to sign the identity it verifies. */
  signingSecret: string;
  logger: Logger;
  limits?: Partial<UpstreamLimits>;
}

/** The services as processes of their own, over HTTP with a signed identity. */
export function httpUpstream({ pools, signingSecret, logger, limits: given }: HttpUpstreamOptions): Upstream {
  const limits = { ...DEFAULT_UPSTREAM_LIMITS, ...given };
  const proxy: ProxyOptions = {
    logger,
    signingKeys: signingKeysFor(signingSecret),
    responseTimeoutMs: limits.responseTimeoutMs,
    idleTimeoutMs: limits.idleTimeoutMs,
  };
  const body = readBody({ limit: limits.maxBodyBytes, json: true });
  return {
    call: async (route, caller, req, res) => {
      if (route.target.kind !== 'proxy') throw new Error(`route ${route.id} is not answered by a service`);
      await steps(body, req, res);
      await forward(pools[route.target.upstream], proxy, caller, req, res);
    },
    pages: (_prefix, service) => [
      refuseDotSegments,
      ...readBody({ limit: limits.maxBodyBytes, json: false }),
      (req, res, next) => {
        forward(pools[service], proxy, null, req, res).catch(next);
      },
    ],
    close: () => closeServicePools(pools),
  };
}

export interface InProcessUpstreamOptions {
  /** The units behind the gateway, by the name the route table gives each. */
  units: Readonly<Record<UpstreamName, ServiceUnit>>;
  limits?: Partial<Pick<UpstreamLimits, 'maxBodyBytes'>>;
}

/**
 * The services as units of this process: each route's handler is called with the caller the gateway
 * authenticated. The JSON body is parsed here, once; the handler's input is checked against the contract's schemas
 * by the same code a service's HTTP app runs (routeHandler of @fin/http).
 */
export function inProcessUpstream({ units, limits }: InProcessUpstreamOptions): Upstream {
  const maxBodyBytes = limits?.maxBodyBytes ?? DEFAULT_UPSTREAM_LIMITS.maxBodyBytes;
  const body = [requireJsonContentType(), express.json({ limit: maxBodyBytes, type: JSON_TYPES, strict: true })];
  const calls = new Map<ApiRouteId, RouteCall>(
    Object.values(units).flatMap(({ handlers }) =>
      (Object.keys(handlers) as ApiRouteId[]).map((id) => {
        const entry = API_ROUTES[id];
        return [id, routeCall(entry, handlers[id] as RouteHandler<typeof entry>)] as const;
      }),
    ),
  );
  return {
    call: async (route, caller, req, res) => {
      const call = calls.get(route.id);
      if (call === undefined) throw new Error(`no unit of this process handles route ${route.id}`);
      await steps(body, req, res);
      await call(caller, req, res);
    },
    pages: (_prefix, service) => {
      const pages = units[service].pages;
      if (pages === undefined) throw new Error(`the ${service} unit has no pages`);
      // Anonymous: the pages have sessions of their own. They see X-Forwarded-For as over HTTP, with the client's
      // address appended: passed through as the client sent it, its last entry was the client's own claim, and the
      // portal's sign-in throttle counted 26 sign-ins under 26 made-up addresses.
      const vouchAnonymous: RequestHandler = (req, res, next) => {
        const forwardedFor = forwardedForThisHop(req);
        if (forwardedFor !== undefined) req.headers['x-forwarded-for'] = forwardedFor;
        vouchFor(res, { requestId: requestIdOf(res) ?? '', caller: null });
        next();
      };
      return [refuseDotSegments, vouchAnonymous, pages.router];
    },
    close: async () => {},
  };
}
