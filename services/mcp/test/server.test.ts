// A request's MCP server (server.ts), whose tool listings and schemas are made once per process, answers tools/list
// and tools/call as the SDK's McpServer does for the same tools registered with it: the same listings, the same
// errors for unknown tools and bad arguments.
import type { Caller } from '@fin/http';
import { FinancialIntelligence } from '@financial-intelligence/sdk';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { createMcpServer } from '../src/server';
import { TOOLS, type ToolContext } from '../src/tools';

const caller = (scopes: string[]): Caller => ({ tenantId: 'tenant', tenantName: 'Tenant', keyId: 'key', scopes }) as unknown as Caller;
const context: ToolContext = {
  api: new FinancialIntelligence({ apiKey: 'fi_test', baseUrl: 'http://127.0.0.1:9', maxRetries: 0 }),
  jobWaitMs: 1_000,
  pollIntervalMs: 100,
};

/** McpServer with the tools a key with `scopes` is shown, registered as the SDK takes them. */
function reference(scopes: string[]): McpServer {
  const server = new McpServer({ name: 'financial-intelligence', version: '1.0.0' }, { capabilities: { tools: {} } });
  for (const tool of TOOLS.filter((entry) => entry.scopes.some((scope) => scopes.includes(scope)))) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: tool.inputSchema,
        ...(tool.outputSchema ? { outputSchema: tool.outputSchema } : {}),
        annotations: tool.annotations,
      },
      () => ({ content: [] }),
    );
  }
  return server;
}

async function connected(server: McpServer): Promise<{ client: Client; close: () => Promise<void> }> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'test', version: '1.0.0' });
  await server.connect(serverSide);
  await client.connect(clientSide);
  return {
    client,
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}

describe('a request’s MCP server', () => {
  it.each([[['news']], [['news', 'stock-report', 'analysis', 'chat']], [['chat']]])(
    'lists the tools of a key with scopes %j as McpServer lists them',
    async (scopes) => {
      const ours = await connected(createMcpServer(caller(scopes), context));
      const theirs = await connected(reference(scopes));
      try {
        const listed = await ours.client.listTools();
        expect(listed).toEqual(await theirs.client.listTools());
        expect(listed.tools.length).toBeGreaterThan(0);
        // The same listing objects for every request: converted once per process.
        const again = await connected(createMcpServer(caller(scopes), context));
        expect((await again.client.listTools()).tools).toEqual(listed.tools);
        await again.close();
        expect(ours.client.getServerCapabilities()).toEqual(theirs.client.getServerCapabilities());
      } finally {
        await ours.close();
        await theirs.close();
      }
    },
  );

  it('answers an unknown tool and bad arguments with McpServer’s tool errors, and refuses a tool the key lacks', async () => {
    const ours = await connected(createMcpServer(caller(['news']), context));
    const theirs = await connected(reference(['news']));
    try {
      for (const request of [
        { name: 'no_such_tool', arguments: {} },
        { name: 'job_status', arguments: { job_type: 'news', job_id: 'not-a-uuid' } },
        { name: 'news', arguments: { symbols: [] } },
      ]) {
        expect(await ours.client.callTool(request)).toEqual(await theirs.client.callTool(request));
      }
      const refused = await ours.client.callTool({ name: 'chat', arguments: { message: 'Hello' } });
      expect(refused).toMatchObject({ isError: true, structuredContent: { error: { status_code: 403, type: 'forbidden' } } });
    } finally {
      await ours.close();
      await theirs.close();
    }
  });
});
