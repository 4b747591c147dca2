import { once } from 'node:events';
import type { Server } from 'node:http';

/**
 * Starts a server listening and waits until it does. A port in use or an address that cannot be bound rejects
 * here, so the caller can close what it started and exit with the reason, instead of the server emitting an
 * `error` nobody listens to (an uncaught exception, after workers and relays were already running).
 */
export async function listen(app: { listen(port: number, host: string): Server }, port: number, host: string): Promise<Server> {
  const server = app.listen(port, host);
  // once() rejects when the server emits 'error' before 'listening'.
  await once(server, 'listening');
  return server;
}
