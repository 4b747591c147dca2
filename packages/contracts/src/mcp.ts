// POST /mcp: the Model Context Protocol endpoint (streamable HTTP transport). Its body and answers are JSON-RPC 2.0
// messages, whose full shapes belong to the protocol (modelcontextprotocol.io); the API describes the envelope,
// checks it at the edge, and leaves the rest to the MCP server.
import { z } from 'zod';

/** A JSON-RPC 2.0 message: a request (method and id), a notification (method, no id) or a response (id). */
export const McpMessage = z
  .looseObject({
    jsonrpc: z.literal('2.0', { error: 'must be "2.0"' }),
    id: z
      .union([z.string(), z.int()], { error: 'must be a string or an integer' })
      .optional()
      .meta({ description: 'Present on requests and responses; absent on notifications.' }),
    method: z
      .string({ error: 'must be a string' })
      .optional()
      .meta({ description: 'initialize, tools/list, tools/call, ping, notifications/initialized, …' }),
    params: z.record(z.string(), z.unknown(), { error: 'must be an object' }).optional(),
  })
  .meta({
    id: 'McpMessage',
    description:
      "A JSON-RPC 2.0 message of the Model Context Protocol (streamable HTTP transport). Requests carry `method` and `id`, notifications `method` only; see the protocol for each method's `params` and `result`.",
    examples: [{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'news', arguments: { symbols: ['AAPL'] } } }],
  });
export type McpMessage = z.infer<typeof McpMessage>;

/** The answer's event stream: each JSON-RPC message the server sends for the request (progress, then the response). */
export const McpStreamEvents = { message: McpMessage } as const;
