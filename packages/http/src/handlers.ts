// A service is a table of typed handlers keyed by the contract's route ids. The gateway reaches it through an
// Upstream: in one process by calling the handler with the caller it authenticated; in a cluster over HTTP, where
// the service's app is this table mounted behind identity verification (createHandlerApp, generated, never
// written per route). Either way the handler is given input already parsed by the contract's schemas.
import { API_ROUTES, type ApiRouteId } from '@fin/contracts';
import type { Logger } from '@fin/log';
import type { RequestHandler } from 'express';
import { jsonBody } from './body';
import { identityKey, verifyIdentity } from './identity';
import { routeHandler, toExpressPath, type RouteHandler } from './route';
import { createServiceApp, type ServiceApp } from './service-app';
import { listenOrClose } from './listen';
import type { HandlerTable, RunningService, ServedService, ServiceUnit } from './unit';

/** The entries of a table, each with its contract entry. */
function tableEntries(handlers: HandlerTable): { id: ApiRouteId; entry: (typeof API_ROUTES)[ApiRouteId]; handler: RequestHandler }[] {
  return (Object.keys(handlers) as ApiRouteId[]).map((id) => {
    const entry = API_ROUTES[id];
    const handler = handlers[id] as RouteHandler<typeof entry>;
    return { id, entry, handler: routeHandler(entry, handler) };
  });
}

export interface HandlerAppOptions {
  logger: Logger;
  /** INTERNAL_SIGNING_SECRET: the service's identity key is derived from it. */
  signingSecret: string;
  /** Largest JSON body. */
  jsonBodyLimit?: number;
}

/**
 * The HTTP app of a unit, for a cluster: health probes, its pages, and each handler at its contract path behind
 * the gateway's signed identity. A request the gateway did not sign learns nothing, not even a 400: the check
 * runs on every path under the prefixes the table uses, before any route's validation.
 */
export function createHandlerApp(unit: ServiceUnit, { logger, signingSecret, jsonBodyLimit }: HandlerAppOptions): ServiceApp {
  return createServiceApp({
    name: unit.name,
    logger,
    readiness: () => unit.readiness(),
    lifecycle: unit.lifecycle,
    // The pages take forms; the API's bodies are read after the identity, so their bytes are checked against it.
    jsonBodyLimit: false,
    routes: (app) => {
      const key = identityKey(signingSecret, unit.name);
      // The pages check the gateway's (anonymous) identity themselves, after their public static files.
      if (unit.pages) app.use(unit.pages.prefix, unit.pages.router);
      const entries = tableEntries(unit.handlers);
      if (entries.length === 0) return;
      const prefixes = new Set(entries.map(({ entry }) => `/${entry.path.split('/')[1] ?? ''}`));
      const verify = verifyIdentity(key, { logger });
      const body = jsonBody(jsonBodyLimit === undefined ? {} : { limit: jsonBodyLimit });
      for (const prefix of prefixes) app.use(prefix, verify, ...body);
      for (const { entry, handler } of entries) app[entry.method](toExpressPath(entry.path), handler);
    },
  });
}

export interface ServeUnitOptions extends HandlerAppOptions {
  port: number;
  host: string;
}

/**
 * A unit listening on `port` (its handler app, or the edge's own app; nothing for a unit that serves nothing), its
 * workers started first. When either fails (the port in use, say), what the unit started is closed and the
 * promise rejects with the reason.
 */
export async function serveUnit(unit: ServiceUnit, options: ServeUnitOptions): Promise<RunningService> {
  const { port, host, logger } = options;
  const app = unit.serves === false ? undefined : (unit.edge?.app ?? createHandlerApp(unit, options));
  const { server, url } = await listenOrClose(app, { port, host, logger, started: unit.closers, before: () => unit.start() });
  if (server) unit.edge?.configure?.(server);
  return { lifecycle: unit.lifecycle, closers: unit.closers, ...(server ? { server } : {}), ...(url === undefined ? {} : { url }) };
}

/** `running` as a service that listens; throws for one that serves nothing (a worker-only unit). */
export function served(running: RunningService): ServedService {
  const { server, url } = running;
  if (server === undefined || url === undefined) throw new Error('the unit serves nothing: it has no server');
  return { ...running, server, url };
}

/** Responses whose event stream the gateway ended itself (a revoked key), in one process. */
const cutStreams = new WeakSet<object>();

/**
 * Ends an event stream a handler of this process is writing, with `lastEvent` (a formatted SSE event) as its last
 * bytes: what the gateway does when the caller's key is revoked while the stream is open. Writes the handler
 * still makes are dropped (an ended response would otherwise report them as errors), and the handler sees it
 * through streamEndedEarly.
 */
export function cutStream(
  res: { writableEnded: boolean; end(chunk: string): unknown; on(event: 'error', listener: () => void): unknown },
  lastEvent: string,
): void {
  cutStreams.add(res);
  res.on('error', () => undefined);
  if (!res.writableEnded) res.end(lastEvent);
}

/**
 * Whether a stream's response closed before its handler ended it: the client went away, or (in one process) the
 * gateway cut it. A handler stops its work then.
 */
export function streamEndedEarly(res: { writableFinished: boolean }): boolean {
  return !res.writableFinished || cutStreams.has(res);
}
