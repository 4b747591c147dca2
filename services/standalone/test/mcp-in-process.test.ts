// The MCP tools in npm start's process: their API calls go through the gateway's own pipeline in memory, never over
// a connection of the process to its own API port, and are still the caller's own requests: logged under the MCP
// request's id, counted against the caller's limits, held to its key's scopes.
import { createKey, createTenant, setLimitOverride } from '@fin/api-keys';
import { AsyncJobResponse, NewsResult, type ApiScope } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { buildOnce, connectionsTo, dataFolder, startNpmStart, systemPid, type Launched } from './npm-start';

interface AccessLine {
  msg?: string;
  service?: string;
  requestId?: string;
  tenantId?: string;
  path?: string;
  status?: number;
}

/**
 * The connections the system opens to its own API port while `work` runs, looked for every 10 ms (an open one, such
 * as a job's event stream or a pooled keep-alive connection, cannot be missed).
 */
async function ownConnectionsDuring<T>(pid: number, port: number, work: () => Promise<T>): Promise<{ value: T; connections: string[] }> {
  const seen = new Set<string>();
  const look = () => connectionsTo(pid, port).forEach(({ localPort, state }) => seen.add(`${String(localPort)} (state ${state})`));
  const timer = setInterval(look, 10);
  try {
    const value = await work();
    look();
    return { value, connections: [...seen] };
  } finally {
    clearInterval(timer);
  }
}

const text = (result: CallToolResult) => (result.content[0]?.type === 'text' ? result.content[0].text : '');

describe('the MCP tools inside npm start', () => {
  const data = dataFolder('fin-standalone-mcp-in-process');
  let database: TestDatabase;
  let pool: Pool;
  let running: Launched | undefined;
  let baseUrl: string;
  let pid: number;
  let port: number;
  const clients: Client[] = [];

  beforeAll(async () => {
    await buildOnce();
    database = await createTestDatabase();
    pool = createPool({ connectionString: database.url, applicationName: 'mcp-in-process-test' });
    // Every access line, so that each API call of a tool can be found.
    const started = await startNpmStart(data.dir, { DATABASE_URL: database.url, LOG_LEVEL: 'info', ACCESS_LOG_SAMPLE_RATE: '1' });
    running = started.running;
    baseUrl = started.baseUrl;
    port = Number(new URL(baseUrl).port);
    pid = systemPid(data.dir);
    for (const tenant of ['mcp-calls', 'mcp-limited', 'mcp-scoped']) await createTenant(pool, tenant);
    // Three job status or result requests a minute for this account, however they come.
    await setLimitOverride(pool, 'mcp-limited', 'jobs', 3);
  }, 300_000);
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await running?.forceStop();
    await pool?.end();
    await database?.drop();
    data.remove();
  });

  async function connect(tenant: string, requestId: string, scopes?: ApiScope[]): Promise<{ client: Client; apiKey: string }> {
    const { apiKey } = await createKey(pool, { tenant, ...(scopes ? { scopes } : {}) });
    const client = new Client({ name: 'standalone-in-process-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
        requestInit: { headers: { 'X-API-Key': apiKey, 'X-Request-Id': requestId } },
      }),
    );
    clients.push(client);
    return { client, apiKey };
  }

  /**
   * The system's access lines (JSON lines of its output) of the API calls made for MCP requests with `requestId`,
   * once `count` of them are written (the process writes its lines in batches).
   */
  async function toolCallLines(requestId: string, count: number): Promise<AccessLine[]> {
    const lines = () =>
      running!
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as AccessLine)
        .filter((line) => line.msg === 'request completed' && line.requestId?.startsWith(`${requestId}.mcp.`));
    await waitFor(() => lines().length >= count, { what: `${String(count)} access lines of ${requestId}'s API calls` });
    return lines();
  }

  it("answers a news tool call through the gateway's pipeline without a connection to its own port, each API call logged under the MCP request's id", async () => {
    const { client } = await connect('mcp-calls', 'mcp-news');
    // The news request, then its job's event stream read as the job runs, then (maybe) its result.
    const { value: news, connections } = await ownConnectionsDuring(
      pid,
      port,
      async () => (await client.callTool({ name: 'news', arguments: { symbols: ['AAPL'], n: 2 } })) as CallToolResult,
    );
    expect(connections).toEqual([]);
    expect(news.isError).toBeUndefined();
    expect(news.structuredContent).toMatchObject({ status: 'completed' });
    expect(NewsResult.parse((news.structuredContent as { result: unknown }).result).news.length).toBeGreaterThan(0);

    // One access line per API call, written by the gateway for the caller's tenant, each with an id of its own that
    // names the MCP request it served.
    const calls = await toolCallLines('mcp-news', 2);
    expect(calls.map((line) => line.path)).toContain('/api/products/news');
    expect(calls.every((line) => line.service === 'gateway' && line.tenantId !== undefined)).toBe(true);
    expect(new Set(calls.map((line) => line.requestId)).size).toBe(calls.length);
  });

  it("counts the tool's API calls against the caller's limits, in the window of its direct requests, up to a 429", async () => {
    const { client, apiKey } = await connect('mcp-limited', 'mcp-limited');
    const jobId = '00000000-0000-4000-8000-000000000000';
    const status = () => fetch(`${baseUrl}/api/jobs/news/${jobId}/status`, { headers: { 'X-API-Key': apiKey } });
    const jobStatus = async () =>
      (await client.callTool({ name: 'job_status', arguments: { job_type: 'news', job_id: jobId } })) as CallToolResult;

    const first = await status();
    expect(first.status).toBe(404);
    expect(first.headers.get('x-ratelimit-limit')).toBe('3');
    expect(first.headers.get('x-ratelimit-remaining')).toBe('2');

    const { value: missing, connections } = await ownConnectionsDuring(pid, port, jobStatus);
    expect(connections).toEqual([]);
    expect(missing.isError).toBe(true);
    expect(missing.structuredContent).toMatchObject({ error: { status_code: 404, type: 'not_found' } });

    // The tool's status request took the second of the three.
    expect((await status()).headers.get('x-ratelimit-remaining')).toBe('0');
    const limited = await jobStatus();
    expect(limited.isError).toBe(true);
    expect(limited.structuredContent).toMatchObject({ error: { status_code: 429, type: 'rate_limit_exceeded' } });
    expect(text(limited)).toMatch(/Retry in \d+ s\./);
    expect((await toolCallLines('mcp-limited', 2)).map((line) => line.status)).toEqual([404, 429]);
  });

  it("holds the tool's API calls to the key's scopes: the gateway refuses the job of a product the key may not use", async () => {
    const { client } = await connect('mcp-scoped', 'mcp-scoped', ['stock-report']);
    // The news tool is not this key's: the MCP service refuses it, naming the scope, before calling anything.
    const news = (await client.callTool({ name: 'news', arguments: { symbols: ['AAPL'] } })) as CallToolResult;
    expect(news.isError).toBe(true);
    expect(text(news)).toContain('does not have the news scope');

    // job_status is (the key has stock-report), but a news job's status is not: the gateway's 403, as for a direct
    // request with this key.
    const { apiKey: newsKey } = await createKey(pool, { tenant: 'mcp-scoped', scopes: ['news'] });
    const created = await fetch(`${baseUrl}/api/products/news`, {
      method: 'POST',
      headers: { 'X-API-Key': newsKey, 'Content-Type': 'application/json' },
      body: JSON.stringify({ symbols: ['MSFT'], n: 1 }),
    });
    const { job_id: jobId } = AsyncJobResponse.parse(await created.json());
    const refused = (await client.callTool({ name: 'job_status', arguments: { job_type: 'news', job_id: jobId } })) as CallToolResult;
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toEqual({
      error: { detail: 'This API key does not have the news scope.', status_code: 403, type: 'forbidden' },
    });
    expect(await toolCallLines('mcp-scoped', 1)).toEqual([
      expect.objectContaining({ path: `/api/jobs/news/${jobId}/status`, status: 403, service: 'gateway' }),
    ]);
  });
});
