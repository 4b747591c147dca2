import { AppError, REQUEST_ID_HEADER, isWellFormedRequestId, requestIdOf, unauthorized, type HandlerTable } from '@fin/http';
import { traceHeaders } from '@fin/log';
import { FinancialIntelligence, type Fetch } from '@financial-intelligence/sdk';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpServer } from './server';

/** How the tools reach the public API: the gateway's URL, and in one process the fetch that calls it without a socket. */
export interface McpApi {
  /** The public API's base URL (the gateway), read per request. */
  baseUrl: () => string;
  /** The fetch the SDK uses; default the global one (HTTP to baseUrl). In one process: the gateway's in-memory fetch. */
  fetch?: typeof fetch;
}

/**
 * The fetch of one MCP request's API calls. Each call gets a request id made from the MCP request's (`<id>.mcp.<n>`),
 * so that the gateway's access log ties every tool call to the MCP request it served, and the MCP request's trace
 * context, so that the calls are spans of its trace.
 */
function callsOf(requestId: string | undefined, base: typeof fetch = fetch): Fetch {
  let calls = 0;
  return (input, init) => {
    const headers = new Headers(init.headers);
    calls += 1;
    const id = `${requestId ?? ''}.mcp.${String(calls)}`;
    if (requestId !== undefined && !headers.has(REQUEST_ID_HEADER) && isWellFormedRequestId(id)) headers.set(REQUEST_ID_HEADER, id);
    for (const [name, value] of Object.entries(traceHeaders())) if (!headers.has(name)) headers.set(name, value);
    return base(input, { ...init, headers });
  };
}

export interface McpHandlerDeps {
  api: McpApi;
  /** How long a tool waits for its job before answering with the job id instead. */
  jobWaitMs: number;
  /** Time between two status polls while waiting. */
  pollIntervalMs: number;
}

/**
 * The MCP handlers: POST /mcp (the streamable HTTP transport, stateless) and GET /mcp (405: no server-initiated
 * stream), for the caller the gateway vouches for.
 */
export function createMcpHandlers({ api, jobWaitMs, pollIntervalMs }: McpHandlerDeps): HandlerTable {
  return {
    mcp: async ({ body, caller }, { req, res }) => {
      // The gateway forwards the caller's key to this service alone (docs/gateway.md); the signed identity
      // already says the key is valid, the tools need it to call the API as the caller.
      const apiKey = req.header('x-api-key');
      if (apiKey === undefined) throw unauthorized('Missing API key: send it in the X-API-Key header.');
      // The SDK's retries stay short: a 429 whose window ends later is the assistant's to wait for (the tool
      // error says when), not this request's.
      const client = new FinancialIntelligence({
        apiKey,
        baseUrl: api.baseUrl(),
        maxRetries: 1,
        maxRetryDelayMs: 2_000,
        fetch: callsOf(requestIdOf(res), api.fetch),
      });
      const server = createMcpServer(caller, { api: client, jobWaitMs, pollIntervalMs });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.once('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
      return undefined;
    },

    mcpStream: () => {
      throw new AppError(
        'method_not_allowed',
        'This MCP server is stateless and sends nothing unasked: there is no stream to open. Send messages with POST.',
        { headers: { Allow: 'POST' } },
      );
    },
  };
}
