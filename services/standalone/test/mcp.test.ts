// The MCP server against `npm start`'s single process, with the MCP SDK's own client: the key the banner prints
// sees every tool, and news and chat answer through the gateway the MCP service reaches only once it listens.
import { NewsResult } from '@fin/contracts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { buildOnce, dataFolder, startNpmStart, type Launched } from './npm-start';

describe('the MCP server against npm start', () => {
  const data = dataFolder('fin-standalone-mcp');
  let running: Launched | undefined;
  let client: Client | undefined;
  beforeAll(buildOnce, 300_000);
  afterAll(async () => {
    await client?.close();
    await running?.forceStop();
    data.remove();
  });

  it('lists every tool for the development key, and answers news and chat', async () => {
    const started = await startNpmStart(data.dir);
    running = started.running;
    const { apiKey, baseUrl } = started;

    client = new Client({ name: 'standalone-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { requestInit: { headers: { 'X-API-Key': apiKey } } }),
    );
    expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual([
      'analysis',
      'chat',
      'job_status',
      'news',
      'sec_filings',
      'stock_report',
    ]);

    const news = (await client.callTool({ name: 'news', arguments: { symbols: ['AAPL'], n: 2 } })) as CallToolResult;
    expect(news.isError).toBeUndefined();
    expect(news.structuredContent).toMatchObject({ status: 'completed' });
    expect(NewsResult.parse((news.structuredContent as { result: unknown }).result).news.length).toBeGreaterThan(0);

    const chat = (await client.callTool({ name: 'chat', arguments: { message: 'What is the P/E of AAPL?' } })) as CallToolResult;
    expect(chat.structuredContent).toMatchObject({ conversation_id: expect.any(String), reply: expect.any(String) });
  });
});
