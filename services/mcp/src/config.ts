import { int, logConfigShape, port, secret, url } from '@fin/config';
import { metricsConfigShape } from '@fin/metrics';
import { z } from 'zod';

/** The MCP service's environment. See docs/configuration.md (MCP server). */
export const mcpConfigShape = {
  PORT: port().default(8087),
  HOST: z.string().default('127.0.0.1'),
  ...metricsConfigShape(9087),
  ...logConfigShape(),
  /** Verifies the identity headers the gateway signs; every service holds the same value. */
  INTERNAL_SIGNING_SECRET: secret(z.string().min(32, 'must be at least 32 characters (e.g. `openssl rand -hex 32`)')),
  /**
   * The public API's base URL, as the tools call it with the caller's key: the gateway (its Service in Kubernetes),
   * so that scopes, rate limits and the cache apply to tool calls exactly as to direct requests.
   */
  MCP_API_URL: url(['http', 'https']).default('http://127.0.0.1:8080'),
  /**
   * How long a tool waits for its job before answering with the job id and status URL instead. Below MCP clients'
   * usual 60 s request timeout, so that the assistant gets an answer rather than a timeout.
   */
  MCP_JOB_WAIT_MS: int(0, 600_000).default(40_000),
  /** Time between two status polls while a tool waits for its job (the API asks for about 2 s). */
  MCP_POLL_INTERVAL_MS: int(100, 60_000).default(2_000),
  /** On SIGTERM: time between failing readiness and refusing connections, for endpoints to update. */
  SHUTDOWN_UNREADY_DELAY_MS: int(0, 60_000).default(0),
  /** On SIGTERM: how long tool calls in progress may take to finish; longer than MCP_JOB_WAIT_MS so that they can. */
  SHUTDOWN_DRAIN_TIMEOUT_MS: int(0, 600_000).default(45_000),
};

export type McpConfig = z.output<z.ZodObject<typeof mcpConfigShape>>;
