// POST /mcp: the Model Context Protocol endpoint (streamable HTTP transport). Its body and answers are JSON-RPC 2.0
// messages, whose full shapes belong to the protocol (modelcontextprotocol.io); the API describes the envelope,
// checks it at the edge, and leaves the rest to the MCP server.
import { z } from 'zod';

const jsonrpc = z.literal('2.0', { error: 'must be "2.0"' });
const RequestId = z.union([z.string(), z.int()], { error: 'must be a string or an integer' });
const Params = z.record(z.string(), z.unknown(), { error: 'must be an object' });

/**
 * A JSON-RPC 2.0 message as the protocol defines it: a request (method and id), a notification (method, no id), or
 * a response (id with result or error). Strict, as the protocol's own schemas are.
 */
export const McpMessage = z
  .union(
    [
      z.strictObject({ jsonrpc, id: RequestId, method: z.string(), params: Params.optional() }),
      z.strictObject({ jsonrpc, method: z.string(), params: Params.optional() }),
      z.strictObject({ jsonrpc, id: RequestId, result: Params }),
      z.strictObject({
        jsonrpc,
        id: RequestId.optional(),
        error: z.looseObject({ code: z.int(), message: z.string() }),
      }),
    ],
    { error: 'expected a JSON-RPC 2.0 request, notification or response ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})' },
  )
  .meta({
    id: 'McpMessage',
    description:
      "A JSON-RPC 2.0 message of the Model Context Protocol (streamable HTTP transport): a request (`method` and `id`), a notification (`method` only) or a response (`id` with `result` or `error`); see the protocol for each method's `params` and `result`.",
    examples: [{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'news', arguments: { symbols: ['AAPL'] } } }],
  });
export type McpMessage = z.infer<typeof McpMessage>;

/** The transport's Accept rule: a client takes a JSON body or an event stream, whichever the server answers with. */
export const McpRequestHeaders = z
  .object({
    Accept: z
      .string({ error: 'must list both application/json and text/event-stream' })
      .refine((value) => value.includes('application/json') && value.includes('text/event-stream'), {
        error: 'must list both application/json and text/event-stream',
      })
      .meta({ description: 'Both `application/json` and `text/event-stream`, as the MCP transport requires.' }),
  })
  .meta({ id: 'McpRequestHeaders', description: 'Request headers of POST /mcp.' });

/** The answer's event stream: each JSON-RPC message the server sends for the request (progress, then the response). */
export const McpStreamEvents = { message: McpMessage } as const;
