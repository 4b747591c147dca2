// One MCP server per request. The transport runs stateless (no Mcp-Session-Id): each POST carries everything it
// needs (the caller's identity and key come with it through the gateway), so any replica answers any request and
// nothing has to be shared between replicas or pinned to one (no sticky sessions behind a load balancer). The
// answer to a request is an SSE stream (not a single JSON body), so that progress notifications can reach the
// client while a tool waits for its job; the stream ends with the response.
import type { Caller } from '@fin/http';
import { mcpToolCalls } from '@fin/metrics';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { TOOLS, allows, scopeRefusal, type ToolContext } from './tools';

const SERVER_INFO = { name: 'financial-intelligence', version: '1.0.0' } as const;

const INSTRUCTIONS =
  "Financial research tools: news for stock symbols, stock reports, custom analyses and a research chat. A tool whose job takes longer than its wait returns the job id: check it later with job_status. Each call counts against the account's rate limits like a direct API request.";

function outcomeOf(result: CallToolResult): 'ok' | 'pending' | 'failed' {
  if (result.isError === true) return 'failed';
  return result.structuredContent?.status === 'pending' ? 'pending' : 'ok';
}

/**
 * The server for one request of `caller`. tools/list shows the tools the key's scopes allow; a tools/call of a
 * known tool the key may not use (`calledTool`) is registered too, so that its call is refused with a tool error
 * naming the missing scope rather than an unknown-tool error.
 */
export function createMcpServer(caller: Caller, context: ToolContext, calledTool: string | undefined): McpServer {
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  for (const tool of TOOLS) {
    const allowed = allows(caller.scopes, tool);
    if (!allowed && tool.name !== calledTool) continue;
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: tool.inputSchema,
        ...(tool.outputSchema ? { outputSchema: tool.outputSchema } : {}),
        annotations: tool.annotations,
      },
      async (input: unknown, extra) => {
        const result = allowed ? await tool.run(input, context, extra) : scopeRefusal(tool);
        mcpToolCalls.inc({ tool: tool.name, outcome: allowed ? outcomeOf(result) : 'refused' });
        return result;
      },
    );
  }
  return server;
}
