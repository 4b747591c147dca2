// The MCP server through the gateway, with the MCP SDK's own client (Client over StreamableHTTPClientTransport,
// the key in X-API-Key), every service a process of its own: initialize, the tools a key's scopes allow, each
// product from call to result, a chat continued in its conversation, a tool refused for want of its scope, no key
// refused by the gateway, and the account's rate limit and cache applying to tool calls as to direct requests.
import { offlineAnalyst } from '@fin/ai';
import { ErrorBody, NewsResult, StockReportResult } from '@fin/contracts';
import { startFakeAnthropic, startFakeFinnhub, type FakeAnthropic, type FakeFinnhub } from '@fin/fakes';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { sharedEnv, startSystem, type System } from '../src/system';

describe('the MCP server through the gateway', () => {
  let db: TestDatabase;
  let claude: FakeAnthropic;
  let finnhub: FakeFinnhub;
  let system: System;
  let key: string;
  const clients: Client[] = [];
  const transportErrors: Error[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    claude = await startFakeAnthropic({ handler: offlineAnalyst() });
    finnhub = await startFakeFinnhub({ token: 'finnhub-e2e-token' });
    const env = sharedEnv({
      databaseUrl: db.url,
      anthropicUrl: claude.url,
      finnhubUrl: finnhub.apiBaseUrl,
      finnhubToken: 'finnhub-e2e-token',
    });
    system = await startSystem(env, {}, { products: ['news', 'stock-report', 'analysis', 'chat', 'mcp'] });
    key = system.tenantKey('acme');
  }, 240_000);

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await system?.stop();
    await Promise.all([claude?.close(), finnhub?.close()]);
    await db?.drop();
  });

  const keyOf = (tenant: string, scopes?: string) =>
    (
      JSON.parse(system.admin(['keys', 'create', '--tenant', tenant, ...(scopes ? ['--scopes', scopes] : []), '--json'])) as {
        api_key: string;
      }
    ).api_key;

  async function connect(apiKey: string): Promise<Client> {
    const client = new Client({ name: 'e2e', version: '1.0.0' });
    client.onerror = (error) => transportErrors.push(error);
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${system.gatewayUrl}/mcp`), { requestInit: { headers: { 'X-API-Key': apiKey } } }),
    );
    clients.push(client);
    return client;
  }

  const call = async (client: Client, name: string, args: Record<string, unknown>) =>
    (await client.callTool({ name, arguments: args }, undefined, { timeout: 90_000 })) as CallToolResult;
  const text = (result: CallToolResult) => (result.content[0]?.type === 'text' ? result.content[0].text : '');
  const completed = (result: CallToolResult) => {
    expect([result.isError, text(result)]).toEqual([undefined, expect.any(String)]);
    expect(result.structuredContent).toMatchObject({ status: 'completed' });
    return (result.structuredContent as { result: unknown }).result;
  };

  it('initializes and lists the tools the key allows: all six for every scope, chat alone for a chat key', async () => {
    const client = await connect(key);
    expect(client.getServerVersion()?.name).toBe('financial-intelligence');
    expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual([
      'analysis',
      'chat',
      'job_status',
      'news',
      'sec_filings',
      'stock_report',
    ]);
    const chatOnly = await connect(keyOf('acme', 'chat'));
    expect((await chatOnly.listTools()).tools.map((tool) => tool.name)).toEqual(['chat']);
    // The client's GET for a server-initiated stream got the 405 that tells it there is none, not an error.
    expect(transportErrors).toEqual([]);
  });

  it('news: the tool follows the job to its result, which the API then serves from its cache', async () => {
    const client = await connect(key);
    // Listed first, the output schema is checked by the client too (the server checks every answer against it).
    const listed = (await client.listTools()).tools.find((tool) => tool.name === 'news');
    expect(JSON.stringify(listed?.outputSchema)).toContain('"ticker_sentiment"');
    const progress: number[] = [];
    const result = (await client.callTool({ name: 'news', arguments: { symbols: ['AAPL'], n: 2 } }, undefined, {
      timeout: 90_000,
      onprogress: (update) => progress.push(update.progress),
    })) as CallToolResult;
    const news = NewsResult.parse(completed(result));
    expect(news.news.length).toBeGreaterThan(0);
    expect(news.news[0]?.title).toEqual(expect.any(String));
    expect(progress).toEqual([...progress].sort((a, b) => a - b));

    // The tool's request went through the gateway as the caller's: the same request made directly is a cache hit.
    const direct = await fetch(`${system.gatewayUrl}/api/products/news`, {
      method: 'POST',
      headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ symbols: ['AAPL'], n: 2 }),
    });
    expect(direct.status).toBe(200);
    expect(direct.headers.get('cache-status')).toMatch(/hit/);
  });

  it("stock_report and analysis: each to its result, the job's progress reported through the gateway as it runs", async () => {
    const client = await connect(key);
    const progress: { progress: number; message?: string }[] = [];
    const result = (await client.callTool({ name: 'stock_report', arguments: { symbols: ['MSFT', 'NVDA'] } }, undefined, {
      timeout: 90_000,
      onprogress: (update) => progress.push(update),
    })) as CallToolResult;
    const report = StockReportResult.parse(completed(result));
    expect(report.detailed_analysis.length).toBeGreaterThan(0);
    // A fresh job (not cached): its progress came as notifications on the call's own event stream, rising, with the
    // job's current step as the message.
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.map((update) => update.progress)).toEqual(
      [...new Set(progress.map((update) => update.progress))].sort((a, b) => a - b),
    );
    expect(progress.every((update) => typeof update.message === 'string' && update.message !== '')).toBe(true);
    const analysis = completed(
      await call(client, 'analysis', {
        prompt: 'How exposed is Apple to interest rates?',
        symbols: ['AAPL'],
        output_format: { type: 'markdown' },
      }),
    ) as { format: string; content: string };
    expect(analysis.format).toBe('markdown');
    expect(analysis.content.length).toBeGreaterThan(0);
  });

  it('chat: a reply and its conversation id, then the conversation continued', async () => {
    const client = await connect(key);
    const first = (await call(client, 'chat', { message: 'What is the P/E of AAPL?' })).structuredContent as {
      conversation_id: string;
      reply: string;
    };
    expect(first.reply.length).toBeGreaterThan(0);
    const next = (await call(client, 'chat', { message: 'And MSFT?', conversation_id: first.conversation_id })).structuredContent as {
      conversation_id: string;
      reply: string;
    };
    expect(next.conversation_id).toBe(first.conversation_id);
    expect(next.reply.length).toBeGreaterThan(0);
  });

  it("refuses a tool outside the key's scopes with a tool error naming the scope", async () => {
    const client = await connect(keyOf('acme', 'chat'));
    const result = await call(client, 'news', { symbols: ['AAPL'] });
    expect(result.isError).toBe(true);
    expect(text(result)).toBe('This API key does not have the news scope, which the news tool needs. (HTTP 403 forbidden)');
  });

  it('no key, or an unknown one: 401 from the gateway, before the MCP service', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
    const none = await fetch(`${system.gatewayUrl}/mcp`, { method: 'POST', headers, body });
    expect(none.status).toBe(401);
    expect(ErrorBody.parse(await none.json()).type).toBe('unauthorized');
    const client = new Client({ name: 'e2e', version: '1.0.0' });
    await expect(
      client.connect(
        new StreamableHTTPClientTransport(new URL(`${system.gatewayUrl}/mcp`), {
          requestInit: { headers: { 'X-API-Key': 'fin_not_a_key' } },
        }),
      ),
    ).rejects.toThrow(/401/);
  });

  it("counts tool calls against the account's rate limit, shared with direct requests", async () => {
    system.admin(['tenants', 'create', 'tight']);
    system.admin(['limits', 'set', '--tenant', 'tight', '--product', 'stock-report', '--per-minute', '2']);
    system.admin(['limits', 'set', '--tenant', 'tight', '--product', 'jobs', '--per-minute', '100000']);
    const tightKey = keyOf('tight');
    const client = await connect(tightKey);
    const direct = () =>
      fetch(`${system.gatewayUrl}/api/products/stock-report`, {
        method: 'POST',
        headers: { 'X-API-Key': tightKey, 'Content-Type': 'application/json' },
        body: JSON.stringify({ symbols: ['ORCL'] }),
      });
    expect((await direct()).status).toBe(202);
    completed(await call(client, 'stock_report', { symbols: ['IBM'] }));
    const refused = await call(client, 'stock_report', { symbols: ['SAP'] });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/^Rate limit exceeded: .*stock-report.* \(HTTP 429 rate_limit_exceeded\) Retry in \d+ s\.$/);
    expect((await direct()).status).toBe(429);
  }, 120_000);
});
