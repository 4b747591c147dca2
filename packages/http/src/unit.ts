// What a service definition composes (a unit) and what a served unit leaves to shut down. Only types: the
// launchers (run-service.ts), the handler app (handlers.ts) and the services all depend on this file, and it on
// none of them.
import type { Server } from 'node:http';
import type { API_ROUTES, ApiRouteId } from '@fin/contracts';
import type { RequestHandler } from 'express';
import type { RouteHandler } from './route';
import type { Lifecycle, ServiceApp } from './service-app';
import type { Closer } from './shutdown';

/** The handlers of a service, by route id: each typed by its contract entry. */
export type HandlerTable = { readonly [K in ApiRouteId]?: RouteHandler<(typeof API_ROUTES)[K]> };

/**
 * A service as its definition composes it, whether it runs alone (runService) or beside the others in one process
 * (runSystem): its handlers, what runs beside them (workers, consumers, relays: `start`), and what closes in
 * shutdown order.
 */
export interface ServiceUnit {
  /** The service's name: its logger's, its metrics', and the name its identity key is derived for. */
  readonly name: string;
  readonly handlers: HandlerTable;
  /** Pages outside the API (the portal's web portal): an express router at `prefix`, reached without an API key. */
  readonly pages?: { readonly prefix: string; readonly router: RequestHandler };
  /**
   * The edge (the gateway): an app of its own, which authenticates callers itself and is served as it is, instead
   * of a handler table behind the gateway's signed identity. In one process it is the only unit that listens.
   */
  readonly edge?: {
    readonly app: ServiceApp;
    /** Settings of its server once it listens (timeouts, answers to heads Node's parser refuses). */
    configure?(server: Server): void;
  };
  /** False for a unit with nothing to answer (a worker-only process): it does not listen. Default true. */
  readonly serves?: boolean;
  /** Resolves when the service's dependencies are reachable. */
  readiness(): Promise<void>;
  readonly lifecycle: Lifecycle;
  /** Starts what runs beside the handlers (workers, consumers); called once the unit is composed. */
  start(): Promise<void>;
  /** In shutdown order, after the requests and streams have drained. */
  readonly closers: readonly Closer[];
}

/** A unit once started: what the shutdown stops. */
export interface RunningService {
  lifecycle: Lifecycle;
  /** The HTTP server; a worker-only process has none. */
  server?: Server;
  /** Where the server listens, e.g. http://127.0.0.1:8081 (PORT 0 picks a free port). */
  url?: string;
  /** In shutdown order, after the HTTP server has drained. */
  closers: readonly Closer[];
}

/** A service listening: its server and where. */
export type ServedService = RunningService & { server: Server; url: string };
