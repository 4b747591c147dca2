import { API_ROUTES, type McpMessage } from '@fin/contracts';
import { AppError, createServiceApp, identityKey, route, unauthorized, verifyIdentity, type Lifecycle } from '@fin/http';
import type { Logger } from '@fin/log';
import { FinancialIntelligence } from '@financial-intelligence/sdk';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type express from 'express';
import { createMcpServer } from './server';

export interface McpAppDeps {
  logger: Logger;
  /** INTERNAL_SIGNING_SECRET: requests without the gateway's valid signature are refused (401). */
  signingSecret: string;
  /** The public API's base URL (the gateway), read per request: npm start learns it only once the gateway listens. */
  apiUrl: () => string;
  /** How long a tool waits for its job before answering with the job id instead. */
  jobWaitMs: number;
  /** Time between two status polls while waiting. */
  pollIntervalMs: number;
  lifecycle?: Lifecycle;
}

/** The tool a tools/call names, if the message is one. */
function calledTool(message: McpMessage): string | undefined {
  if (!('method' in message) || message.method !== 'tools/call') return undefined;
  const name = message.params?.name;
  return typeof name === 'string' ? name : undefined;
}

/**
 * The MCP service's HTTP application: POST /mcp (the streamable HTTP transport, stateless) and GET /mcp (405: no
 * server-initiated stream), for the caller the gateway vouches for. Pure: it never listens.
 */
export function createApp({ logger, signingSecret, apiUrl, jobWaitMs, pollIntervalMs, lifecycle }: McpAppDeps): express.Express {
  return createServiceApp({
    name: 'mcp',
    logger,
    // Nothing of its own to be ready: the API it calls has its own readiness behind the gateway.
    readiness: async () => {},
    ...(lifecycle === undefined ? {} : { lifecycle }),
    routes: (app) => {
      app.use('/mcp', verifyIdentity(identityKey(signingSecret, 'mcp'), { logger }));

      route(app, API_ROUTES.mcp, async ({ body, caller }, { req, res }) => {
        // The gateway forwards the caller's key to this service alone (docs/gateway.md); the signed identity
        // already says the key is valid, the tools need it to call the API as the caller.
        const apiKey = req.header('x-api-key');
        if (apiKey === undefined) throw unauthorized('Missing API key: send it in the X-API-Key header.');
        // The SDK's retries stay short: a 429 whose window ends later is the assistant's to wait for (the tool
        // error says when), not this request's.
        const api = new FinancialIntelligence({ apiKey, baseUrl: apiUrl(), maxRetries: 1, maxRetryDelayMs: 2_000 });
        const server = createMcpServer(caller, { api, jobWaitMs, pollIntervalMs }, calledTool(body));
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
        res.once('close', () => {
          void transport.close();
          void server.close();
        });
        await server.connect(transport);
        await transport.handleRequest(req, res, body);
        return undefined;
      });

      route(app, API_ROUTES.mcpStream, () => {
        throw new AppError(
          'method_not_allowed',
          'This MCP server is stateless and sends nothing unasked: there is no stream to open. Send messages with POST.',
          { headers: { Allow: 'POST' } },
        );
      });
    },
  });
}
