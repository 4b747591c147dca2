// One MCP server per request. The transport runs stateless (no Mcp-Session-Id): each POST carries everything it
// needs (the caller's identity and key come with it through the gateway), so any replica answers any request and
// nothing has to be shared between replicas or pinned to one (no sticky sessions behind a load balancer). The
// answer to a request is an SSE stream (not a single JSON body), so that progress notifications can reach the
// client while a tool waits for its job; the stream ends with the response.
//
// What does not depend on the request is built once per process: each tool's listing (its input and output schemas
// converted to JSON Schema), the input and output schemas it is checked against, and the JSON Schema validator the
// SDK's server would otherwise make for each server. A request's server registers no tools with the SDK (which
// converts the schemas on every list): its protocol server gets two handlers, tools/list and tools/call, which
// answer as the SDK's McpServer does for tools registered with it.
import type { Caller } from '@fin/http';
import { mcpToolCalls } from '@fin/metrics';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { getParseErrorMessage } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import { toJsonSchemaCompat } from '@modelcontextprotocol/sdk/server/zod-json-schema-compat.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { TOOLS, allows, scopeRefusal, type ToolContext, type ToolDefinition } from './tools';

const SERVER_INFO = { name: 'financial-intelligence', version: '1.0.0' } as const;

const INSTRUCTIONS =
  "Financial research tools: news for stock symbols, stock reports, custom analyses and a research chat. A tool whose job takes longer than its wait returns the job id: check it later with job_status. Each call counts against the account's rate limits like a direct API request.";

/** The SDK's own validator of JSON Schemas (elicitation answers), shared by every request's server. */
const JSON_SCHEMA_VALIDATOR = new AjvJsonSchemaValidator();

/** Each tool as tools/list shows it, converted once: the listing McpServer would make on every list. */
const LISTINGS = new Map<string, Tool>(
  TOOLS.map((tool) => [
    tool.name,
    {
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: toJsonSchemaCompat(tool.inputSchema, { strictUnions: true, pipeStrategy: 'input' }) as Tool['inputSchema'],
      annotations: tool.annotations,
      // What McpServer lists for a tool registered without task support.
      execution: { taskSupport: 'forbidden' },
      ...(tool.outputSchema
        ? { outputSchema: toJsonSchemaCompat(tool.outputSchema, { strictUnions: true, pipeStrategy: 'output' }) as Tool['outputSchema'] }
        : {}),
    },
  ]),
);
const BY_NAME = new Map<string, ToolDefinition>(TOOLS.map((tool) => [tool.name, tool]));

function outcomeOf(result: CallToolResult): 'ok' | 'pending' | 'failed' {
  if (result.isError === true) return 'failed';
  return result.structuredContent?.status === 'pending' ? 'pending' : 'ok';
}

/** A failure of the call as a tool error, as McpServer reports it (protocol errors it does not return, none here). */
function toolError(error: unknown): CallToolResult {
  return { content: [{ type: 'text', text: error instanceof Error ? error.message : String(error) }], isError: true };
}

/** A tools/call of `tool` by a caller it `allowed` or not: input checked, run, structured output checked. */
async function callTool(
  tool: ToolDefinition,
  allowed: boolean,
  args: unknown,
  context: ToolContext,
  extra: Parameters<ToolDefinition['run']>[2],
): Promise<CallToolResult> {
  const input = await tool.inputSchema.safeParseAsync(args ?? {});
  if (!input.success) {
    throw new McpError(
      ErrorCode.InvalidParams,
      `Input validation error: Invalid arguments for tool ${tool.name}: ${getParseErrorMessage(input.error)}`,
    );
  }
  const result = allowed ? await tool.run(input.data, context, extra) : scopeRefusal(tool);
  mcpToolCalls.inc({ tool: tool.name, outcome: allowed ? outcomeOf(result) : 'refused' });
  if (tool.outputSchema && result.isError !== true) {
    if (!result.structuredContent) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `Output validation error: Tool ${tool.name} has an output schema but no structured content was provided`,
      );
    }
    const output = await tool.outputSchema.safeParseAsync(result.structuredContent);
    if (!output.success) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `Output validation error: Invalid structured content for tool ${tool.name}: ${getParseErrorMessage(output.error)}`,
      );
    }
  }
  return result;
}

/**
 * The server for one request of `caller`. tools/list shows the tools the key's scopes allow; a tools/call of a
 * known tool the key may not use is refused with a tool error naming the missing scope rather than an
 * unknown-tool error.
 */
export function createMcpServer(caller: Caller, context: ToolContext): McpServer {
  const mcp = new McpServer(SERVER_INFO, {
    capabilities: { tools: { listChanged: true } },
    instructions: INSTRUCTIONS,
    jsonSchemaValidator: JSON_SCHEMA_VALIDATOR,
  });
  mcp.server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: TOOLS.filter((tool) => allows(caller.scopes, tool)).map((tool) => LISTINGS.get(tool.name) as Tool),
  }));
  mcp.server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    try {
      const tool = BY_NAME.get(request.params.name);
      if (!tool) throw new McpError(ErrorCode.InvalidParams, `Tool ${request.params.name} not found`);
      return await callTool(tool, allows(caller.scopes, tool), request.params.arguments, context, extra);
    } catch (error) {
      return toolError(error);
    }
  });
  return mcp;
}
