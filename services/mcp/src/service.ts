// The MCP service as a unit: the HTTP server of the MCP endpoint. It holds no state and no clients of its own: every
// tool calls the public API through the gateway with the caller's key. main.ts runs it alone; the single-process
// setup (services/standalone) runs it beside the gateway it calls.
import type { Server } from 'node:http';
import { createLifecycle, listenOrClose, type Closer, type Lifecycle } from '@fin/http';
import type { Logger } from '@fin/log';
import { createApp } from './app';
import type { McpConfig } from './config';

export interface McpServiceOptions {
  config: Pick<McpConfig, 'PORT' | 'HOST' | 'INTERNAL_SIGNING_SECRET' | 'MCP_API_URL' | 'MCP_JOB_WAIT_MS' | 'MCP_POLL_INTERVAL_MS'>;
  logger: Logger;
  lifecycle?: Lifecycle;
  /**
   * The API's base URL when it is not known before the start: npm start's gateway routes to this service, so it
   * starts after it and its URL is read per request. Default MCP_API_URL.
   */
  apiUrl?: () => string;
}

export interface McpService {
  server: Server;
  /** Where the server listens, e.g. http://127.0.0.1:8087 (PORT 0 picks a free port). */
  url: string;
  lifecycle: Lifecycle;
  /** Nothing to close after the HTTP server has drained. */
  closers: Closer[];
}

export async function startMcpService({ config, logger, lifecycle = createLifecycle(), apiUrl }: McpServiceOptions): Promise<McpService> {
  const app = createApp({
    logger,
    signingSecret: config.INTERNAL_SIGNING_SECRET,
    apiUrl: apiUrl ?? (() => config.MCP_API_URL),
    jobWaitMs: config.MCP_JOB_WAIT_MS,
    pollIntervalMs: config.MCP_POLL_INTERVAL_MS,
    lifecycle,
  });
  const closers: Closer[] = [];
  const { server, url } = await listenOrClose(app, { port: config.PORT, host: config.HOST, logger, started: closers });
  return { server, url, lifecycle, closers };
}
