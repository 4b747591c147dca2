// The MCP service as a unit: the MCP endpoint's handlers. It holds no state and no clients of its own: every tool
// calls the public API through the gateway with the caller's key (in one process through the gateway's app itself,
// without a socket: see services/standalone).
import { createLifecycle, type ServiceDefinition, type ServiceUnit } from '@fin/http';
import type { Logger } from '@fin/log';
import { createMcpHandlers, type McpApi } from './app';
import { mcpConfigShape, type McpConfig } from './config';

export type { McpApi } from './app';

interface McpServiceOptions {
  config: McpConfig;
  logger: Logger;
  /** How the tools reach the API when not over HTTP at MCP_API_URL (npm start: the gateway in the same process). */
  api?: McpApi;
}

function createMcpUnit({ config, api }: McpServiceOptions): Promise<ServiceUnit> {
  return Promise.resolve({
    name: 'mcp',
    handlers: createMcpHandlers({
      api: api ?? { baseUrl: () => config.MCP_API_URL },
      jobWaitMs: config.MCP_JOB_WAIT_MS,
      pollIntervalMs: config.MCP_POLL_INTERVAL_MS,
    }),
    // Nothing of its own to be ready: the API it calls has its own readiness behind the gateway.
    readiness: async () => {},
    lifecycle: createLifecycle(),
    start: async () => {},
    closers: [],
  });
}

/** The MCP service: runService runs it as a process, runSystem beside the gateway it calls. */
export const mcpService: ServiceDefinition<typeof mcpConfigShape, { api: McpApi }> = {
  name: 'mcp',
  configShape: mcpConfigShape,
  unit: createMcpUnit,
};
