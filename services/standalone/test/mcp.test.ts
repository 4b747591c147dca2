// The MCP server against `npm start`'s single process, with the MCP SDK's own client: the key the banner prints
// sees every tool, and news and chat answer through the gateway the MCP service reaches only once it listens.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { NewsResult } from '@fin/contracts';
import { freePort, waitFor } from '@fin/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { buildOnce, launchNpmStart, type Launched } from './npm-start';

describe('the MCP server against npm start', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'fin-standalone-mcp-'));
  // As root, PostgreSQL runs as the postgres user, which must be able to enter the folder (mkdtemp makes it 700).
  chmodSync(dataDir, 0o755);
  let running: Launched | undefined;
  let client: Client | undefined;
  beforeAll(buildOnce, 300_000);
  afterAll(async () => {
    await client?.close();
    await running?.forceStop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('lists every tool for the development key, and answers news and chat', async () => {
    const port = await freePort();
    running = launchNpmStart({ DATA_DIR: dataDir, PORT: String(port) });
    await waitFor(() => running!.output().includes('Ctrl-C stops everything') || running!.child.exitCode !== null, {
      timeoutMs: 45_000,
      what: 'the banner',
    });
    const apiKey = /X-API-Key: (fin_\w+)/.exec(running.output())?.[1];
    expect(apiKey).toBeDefined();

    client = new Client({ name: 'standalone-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { requestInit: { headers: { 'X-API-Key': apiKey! } } }),
    );
    expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual([
      'analysis',
      'chat',
      'job_status',
      'news',
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
