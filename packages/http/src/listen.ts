import { once } from 'node:events';
import { createServer, IncomingMessage, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@fin/log';
import parseurl from 'parseurl';
import { closeStarted, type Closer } from './shutdown';

const PATHLESS_BODY = JSON.stringify({ detail: 'No route for this request target: it has no path.', status_code: 404, type: 'not_found' });

/**
 * A request target express cannot read a path from. Its router parses `req.url` with `parseurl` (Node's legacy
 * URL parser underneath), which reads a target such as `//docs?a={"@":0,"#":0}` as a host and no path; express
 * then skips every middleware (the error body, the request id, the access log) and answers with an HTML page.
 */
/** What parseurl reads of a request: its target. */
function requestFor(target: string): IncomingMessage {
  return Object.assign(Object.create(IncomingMessage.prototype) as IncomingMessage, { url: target });
}

function isPathless(target: string | undefined): boolean {
  return target !== undefined && target.startsWith('//') && parseurl(requestFor(target))?.pathname == null;
}

/**
 * The request listener of a service's server: the app, except that a target without a path is answered here
 * with the spec's 404 body. Every server of the system is made by this (listen below, and the gateway's and the
 * portal's, which add their own settings).
 */
function serveApp(app: RequestListener): RequestListener {
  return (req, res) => {
    if (!isPathless(req.url)) {
      app(req, res);
      return;
    }
    res
      .writeHead(404, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(PATHLESS_BODY) })
      .end(PATHLESS_BODY);
  };
}

/**
 * Starts a server for `app` (serveApp) listening and waits until it does. A port in use or an address that cannot
 * be bound rejects here, so the caller can close what it started and exit with the reason, instead of the server
 * emitting an `error` nobody listens to (an uncaught exception, after workers and relays were already running).
 */
export async function listen(app: RequestListener, port: number, host: string): Promise<Server> {
  const server = createServer(serveApp(app)).listen(port, host);
  // once() rejects when the server emits 'error' before 'listening'.
  await once(server, 'listening');
  return server;
}

export interface ListenOrCloseOptions {
  port: number;
  host: string;
  logger: Logger;
  /**
   * What the start has already started, in shutdown order (workers, relays, engines, pools it owns): closed when the
   * rest of the start fails, since the caller is left with nothing to shut down.
   */
  started: readonly Closer[];
  /** What else the start does under the same guard, before listening: a worker's subscription, say. */
  before?: () => Promise<void>;
}

export interface Listening {
  server: Server;
  /** Where the server listens, e.g. http://127.0.0.1:8081 (PORT 0 picks a free port). */
  url: string;
}

/**
 * The end of every service's start: runs `before`, then listens for `app` (with no app, a worker-only process,
 * it only runs `before`). When either fails (the port in use, say), what was started is closed in the order given
 * and the promise rejects with the reason: a port in use names PORT, and the error keeps its `code`
 * (EADDRINUSE). The process then exits through runService's single fatal line instead of an unhandled error.
 */
export async function listenOrClose(app: RequestListener, options: ListenOrCloseOptions): Promise<Listening>;
export async function listenOrClose(app: RequestListener | undefined, options: ListenOrCloseOptions): Promise<Partial<Listening>>;
export async function listenOrClose(
  app: RequestListener | undefined,
  { port, host, logger, started, before }: ListenOrCloseOptions,
): Promise<Partial<Listening>> {
  let server: Server | undefined;
  try {
    await before?.();
    if (app) server = await listen(app, port, host).catch((error: unknown) => Promise.reject(listenError(error, port, host)));
  } catch (error) {
    await closeStarted(started);
    throw error;
  }
  if (!server) return {};
  const url = `http://${host}:${(server.address() as AddressInfo).port}`;
  logger.info({ url }, 'listening');
  return { server, url };
}

/** The reason a server could not listen, in words an operator acts on; the system error stays as the cause. */
function listenError(error: unknown, port: number, host: string): Error {
  const code = (error as { code?: unknown }).code;
  const message =
    code === 'EADDRINUSE'
      ? `PORT ${port} is in use on ${host}; set PORT to a free port (0 picks one).`
      : `The server could not listen on ${host}:${port}: ${error instanceof Error ? error.message : String(error)}`;
  return Object.assign(new Error(message, { cause: error }), typeof code === 'string' ? { code } : {});
}
