import { once } from 'node:events';
import { createServer, type RequestListener, type Server } from 'node:http';
import { parse } from 'node:url';

const PATHLESS_BODY = JSON.stringify({ detail: 'No route for this request target: it has no path.', status_code: 404, type: 'not_found' });

/**
 * A request target express cannot read a path from. Its router parses `req.url` with Node's legacy URL parser,
 * which reads a target such as `//docs?a={"@":0,"#":0}` as a host and no path; express then skips every
 * middleware (the error body, the request id, the access log) and answers with an HTML page.
 */
export function isPathless(target: string | undefined): boolean {
  return target !== undefined && target.startsWith('//') && parse(target).pathname === null;
}

/**
 * The request listener of a service's server: the app, except that a target without a path is answered here
 * with the spec's 404 body. Every server of the system is made by this (listen below, and the gateway's and the
 * portal's, which add their own settings).
 */
export function serveApp(app: RequestListener): RequestListener {
  return (req, res) => {
    if (!isPathless(req.url)) {
      app(req, res);
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(PATHLESS_BODY) }).end(PATHLESS_BODY);
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
