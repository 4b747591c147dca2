// The MCP service as a unit: the MCP endpoint's handlers. It holds no state and no clients of its own: every tool
// calls the public API through the gateway with the caller's key (in one process through the gateway's app itself,
// without a socket: see services/standalone).
import { createLifecycle, serveUnitOn, served, type Lifecycle, type ServedService, type ServiceUnit } from '@fin/http';
import type { Logger } from '@fin/log';
import { createMcpHandlers, type McpApi } from './app';
import type { McpConfig } from './config';

export interface McpServiceOptions {
  config: Pick<McpConfig, 'PORT' | 'HOST' | 'INTERNAL_SIGNING_SECRET' | 'MCP_API_URL' | 'MCP_JOB_WAIT_MS' | 'MCP_POLL_INTERVAL_MS'>;
  logger: Logger;
  lifecycle?: Lifecycle;
  /** How the tools reach the API when not over HTTP at MCP_API_URL (npm start: the gateway in the same process). */
  api?: McpApi;
}

export function createMcpUnit({ config, lifecycle = createLifecycle(), api }: McpServiceOptions): Promise<ServiceUnit> {
  return Promise.resolve({
    name: 'mcp',
    handlers: createMcpHandlers({
      api: api ?? { baseUrl: () => config.MCP_API_URL },
      jobWaitMs: config.MCP_JOB_WAIT_MS,
      pollIntervalMs: config.MCP_POLL_INTERVAL_MS,
    }),
    // Nothing of its own to be ready: the API it calls has its own readiness behind the gateway.
    readiness: async () => {},
    lifecycle,
    start: async () => {},
    closers: [],
  });
}

/** The unit as a process of its own on PORT (tests; main.ts goes through runService, which does the same). */
export async function startMcpService(options: McpServiceOptions): Promise<ServedService> {
  return served(await serveUnitOn(await createMcpUnit(options), options.config, options.logger));
}
