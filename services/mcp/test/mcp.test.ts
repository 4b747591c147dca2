// The MCP service with the MCP SDK's own client. Requests reach it signed as the gateway signs them (the caller's
// tenant, key and scopes, and the caller's key in X-API-Key); the API its tools call is a stand-in at the wire,
// recording what it receives, since the real one (through the gateway) is the e2e suite's (e2e/test/mcp.test.ts).
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { API_ROUTES, ErrorBody } from '@fin/contracts';
import { identityKey, listen, serveDefinition, served, signIdentity, type Caller } from '@fin/http';
import { createLogger } from '@fin/log';
import { mcpToolCalls } from '@fin/metrics';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import express from 'express';
import type { ServedService } from '@fin/http';
import { parseConfig } from '@fin/config';
import { mcpConfigShape } from '../src/config';
import { mcpService } from '../src/service';
import { TOOLS } from '../src/tools';

const SECRET = 'mcp-test-secret-0123456789abcdef0123';
const logger = createLogger({ service: 'mcp-test', level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const JOB = '3fa85f64-5717-4562-b3fc-2c963f66afa6';
const SLOW_JOB = '9b2f3c1e-4d5a-4e6f-8a7b-0c1d2e3f4a5b';
const FAILED_JOB = '5d6e7f80-1a2b-4c3d-8e9f-a0b1c2d3e4f5';
const CONVERSATION = '0c1d2e3f-4a5b-4e6f-8a7b-9b2f3c1e4d5a';
const NEWS_RESULT = {
  news: [
    {
      title: 'Apple beats',
      content: 'Revenue up.',
      sources: ['https://example.com/apple-beats'],
      further_reading: [],
      citations: [],
      relevance_score: 0.9,
      published_at: '2026-11-20T21:05:00Z',
      topics: ['earnings', 'technology'],
      tickers: [
        {
          symbol: 'AAPL',
          relevance_score: 0.95,
          sentiment_score: 0.42,
          sentiment_label: 'bullish',
          reasoning: 'Revenue above estimates.',
        },
      ],
    },
  ],
  ticker_sentiment: [{ symbol: 'AAPL', sentiment_score: 0.42, sentiment_label: 'bullish', items: 1 }],
};
/** A result the news contract refuses: a sentiment score outside −1…1. */
const BAD_JOB = '7e8f9a0b-1c2d-4e3f-8a4b-5c6d7e8f9a0b';

interface Received {
  method: string;
  path: string;
  apiKey: string | undefined;
  requestId: string | undefined;
  traceparent: string | undefined;
  body: unknown;
}

/** The API as the tools see it: each product answering as the gateway would, and a record of every request. */
async function startApi(): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const app = express();
  app.use(express.json());
  app.use((req, _res, next) => {
    received.push({
      method: req.method,
      path: req.path,
      apiKey: req.header('x-api-key'),
      requestId: req.header('x-request-id'),
      traceparent: req.header('traceparent'),
      body: req.body as unknown,
    });
    next();
  });
  const pending = (jobId: string) => ({
    job_id: jobId,
    status: 'pending',
    from_cache: false,
    status_url: `/api/jobs/news/${jobId}/status`,
    result_url: `/api/jobs/news/${jobId}/result`,
  });
  let polls = 0;
  app.post('/api/products/news', (req, res) => {
    const { symbols } = req.body as { symbols: string[] };
    const jobId = symbols.includes('SLOW') ? SLOW_JOB : symbols.includes('FAIL') ? FAILED_JOB : symbols.includes('BAD') ? BAD_JOB : JOB;
    res.status(202).json(pending(jobId));
  });
  app.get(`/api/jobs/news/${FAILED_JOB}/status`, (_req, res) => {
    res.json({
      job_id: FAILED_JOB,
      status: 'failed',
      progress: 40,
      currently_working_on: 'Reading news',
      error: { type: 'gateway_timeout', detail: 'The model did not answer in time.' },
    });
  });
  app.get('/api/jobs/news/:id/status', (req, res) => {
    polls += 1;
    const done = (req.params.id === JOB && polls > 1) || req.params.id === BAD_JOB;
    res.json({
      job_id: req.params.id,
      status: done ? 'completed' : 'running',
      progress: done ? 100 : 40,
      currently_working_on: 'Reading news',
    });
  });
  app.get('/api/jobs/news/:id/result', (req, res) => {
    const [item] = NEWS_RESULT.news;
    const result =
      req.params.id === BAD_JOB ? { news: [{ ...item, tickers: [{ ...item?.tickers[0], sentiment_score: 3 }] }] } : NEWS_RESULT;
    res.json({ job_id: req.params.id, status: 'completed', result });
  });
  app.post('/api/products/stock-report', (_req, res) => {
    res
      .status(429)
      .set({ 'Retry-After': '37', 'X-RateLimit-Reset': String(Math.ceil(Date.now() / 1000) + 37) })
      .json({
        detail: 'Rate limit exceeded: this account may make 20 stock-report requests per minute.',
        status_code: 429,
        type: 'rate_limit_exceeded',
      });
  });
  // The filings routes answer with what they were asked: the tool passes the API's answer on as it is.
  app.get(['/api/filings', '/api/filings/:accession', '/api/filings/:accession/sections/:item'], (req, res) => {
    res.json({ asked: req.originalUrl });
  });
  app.post('/api/chat', (req, res) => {
    const {
      message,
      conversation_id: conversationId,
      stream,
    } = req.body as { message: string; conversation_id: string | null; stream: boolean };
    res.json({
      conversation_id: conversationId ?? CONVERSATION,
      message_id: randomUUID(),
      response: `You said: ${message} (stream ${String(stream)})`,
    });
  });
  const server = await listen(app, 0, '127.0.0.1');
  return { url: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`, received, server };
}

const caller = (...scopes: string[]): Caller => ({
  tenantId: '6f1c2b8e-0d3a-4e5f-9a7b-1c2d3e4f5a6b',
  keyId: `key-${scopes.join('-')}`,
  scopes,
});

/**
 * fetch as the gateway forwards: the caller's key, its request id (when given), and the identity signed for the MCP
 * service over the body sent.
 */
function gatewayFetch(who: Caller, apiKey: string, signed = true, requestId?: string) {
  const key = identityKey(SECRET, 'mcp');
  return (input: string | URL, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(input);
    const headers = new Headers(init.headers);
    headers.set('x-api-key', apiKey);
    if (signed) {
      const body = typeof init.body === 'string' ? init.body : undefined;
      const method = init.method ?? 'GET';
      for (const [name, value] of Object.entries(
        signIdentity({ requestId: requestId ?? randomUUID(), caller: who }, key, { method, path: url.pathname, body }),
      ))
        headers.set(name, value);
    }
    return fetch(url, { ...init, headers });
  };
}

describe('the MCP service', () => {
  let api: Awaited<ReturnType<typeof startApi>>;
  let service: ServedService;
  const clients: Client[] = [];

  beforeAll(async () => {
    api = await startApi();
    const config = parseConfig(mcpConfigShape, {
      PORT: '0',
      INTERNAL_SIGNING_SECRET: SECRET,
      MCP_API_URL: api.url,
      MCP_JOB_WAIT_MS: '1500',
      MCP_POLL_INTERVAL_MS: '100',
    });
    service = served(await serveDefinition(mcpService, { config, logger }));
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await new Promise((resolve) => service.server.close(resolve));
    await new Promise((resolve) => api.server.close(resolve));
  });

  async function connect(who: Caller, apiKey = `fin_key_of_${who.keyId}`, requestId?: string): Promise<Client> {
    const client = new Client({ name: 'mcp-service-test', version: '1.0.0' });
    const errors: Error[] = [];
    client.onerror = (error) => errors.push(error);
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${service.url}/mcp`), { fetch: gatewayFetch(who, apiKey, true, requestId) }),
    );
    clients.push(client);
    return client;
  }

  const text = (result: CallToolResult) => (result.content[0]?.type === 'text' ? result.content[0].text : '');

  it('initializes statelessly (no session id) and names itself', async () => {
    const client = await connect(caller('news'));
    expect(client.getServerVersion()).toEqual({ name: 'financial-intelligence', version: '1.0.0' });
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    expect(client.getInstructions()).toContain('job_status');
  });

  it.each([
    [['news'], ['job_status', 'news']],
    [['chat'], ['chat']],
    [
      ['stock-report', 'analysis'],
      ['analysis', 'job_status', 'stock_report'],
    ],
    [
      ['news', 'stock-report', 'analysis', 'chat', 'tools'],
      ['analysis', 'chat', 'job_status', 'news', 'stock_report'],
    ],
    [['tools'], []],
    [['filings'], ['sec_filings']],
  ])('a key with %j lists %j', async (scopes, tools) => {
    const client = await connect(caller(...scopes));
    const listed = await client.listTools();
    expect(listed.tools.map((tool) => tool.name).sort()).toEqual(tools);
  });

  it("takes its input schemas from the contract (less callback_url and chat's stream)", async () => {
    const { tools } = await (await connect(caller('news', 'chat'))).listTools();
    const news = tools.find((tool) => tool.name === 'news');
    expect(news?.inputSchema.required).toEqual(['symbols']);
    expect(Object.keys(news?.inputSchema.properties ?? {}).sort()).toEqual([
      'data',
      'language',
      'n',
      'sort',
      'sources',
      'symbols',
      'time_from',
      'time_to',
      'topics',
    ]);
    const chat = tools.find((tool) => tool.name === 'chat');
    expect(Object.keys(chat?.inputSchema.properties ?? {}).sort()).toEqual(['conversation_id', 'message']);
  });

  it('is described in the OpenAPI document by the tools it has, and no other', () => {
    const description = API_ROUTES.mcp.description;
    const listed = /Tools: ([^;(]+)/.exec(description)?.[1] ?? '';
    expect(listed.split(/, | and /).map((name) => name.trim())).toEqual(TOOLS.map((tool) => tool.name));
    // Any tool-like name the description mentions is one of them (it once named a job_result tool).
    for (const [name] of description.matchAll(/\b[a-z]+_[a-z_]+\b/g))
      if (!['callback_url'].includes(name)) expect(TOOLS.map((tool) => tool.name)).toContain(name);
  });

  it("refuses a tool outside the key's scopes with a tool error naming the scope, and calls nothing", async () => {
    const client = await connect(caller('chat'));
    const before = api.received.length;
    const result = (await client.callTool({ name: 'news', arguments: { symbols: ['AAPL'] } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(text(result)).toBe('This API key does not have the news scope, which the news tool needs. (HTTP 403 forbidden)');
    expect(ErrorBody.parse((result.structuredContent as { error: unknown }).error).type).toBe('forbidden');
    expect(api.received.length).toBe(before);
  });

  it("calls the API with the caller's own key, follows the job and reports its progress", async () => {
    const client = await connect(caller('news'), 'fin_the_callers_key', 'outer-request');
    const before = api.received.length;
    const progress: number[] = [];
    const result = (await client.callTool({ name: 'news', arguments: { symbols: ['AAPL'], n: 3 } }, undefined, {
      onprogress: (update) => progress.push(update.progress),
    })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ job_id: JOB, status: 'completed', result: NEWS_RESULT });
    expect(JSON.parse(text(result))).toEqual(result.structuredContent);
    expect(progress).toEqual([40, 100]);
    // However the SDK follows the job (event stream or polling), every request is the caller's own.
    const calls = api.received.slice(before);
    expect(calls.every((request) => request.apiKey === 'fin_the_callers_key')).toBe(true);
    expect(calls.map((request) => `${request.method} ${request.path}`)).toEqual(
      expect.arrayContaining(['POST /api/products/news', `GET /api/jobs/news/${JOB}/result`]),
    );
    expect(calls[0]?.body).toEqual({ symbols: ['AAPL'], n: 3, language: 'en', sort: 'relevance' });
    // Each call names the MCP request it served (the access log ties them together), in that request's trace.
    expect(calls.map((request) => request.requestId)).toEqual(calls.map((_request, i) => `outer-request.mcp.${String(i + 1)}`));
    const traces = new Set(calls.map((request) => request.traceparent?.split('-')[1]));
    expect(traces.size).toBe(1);
    expect([...traces][0]).toMatch(/^[0-9a-f]{32}$/);
  });

  it('answers a job that outlasts the wait with its id and status URL, and job_status reads it later', async () => {
    const client = await connect(caller('news'));
    const started = Date.now();
    const result = (await client.callTool({ name: 'news', arguments: { symbols: ['SLOW'] } })) as CallToolResult;
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);
    expect(result.structuredContent).toMatchObject({
      job_id: SLOW_JOB,
      job_type: 'news',
      status: 'pending',
      status_url: `/api/jobs/news/${SLOW_JOB}/status`,
    });
    const status = (await client.callTool({ name: 'job_status', arguments: { job_type: 'news', job_id: SLOW_JOB } })) as CallToolResult;
    expect(status.structuredContent).toEqual({
      job_type: 'news',
      job_id: SLOW_JOB,
      status: 'running',
      progress: 40,
      currently_working_on: 'Reading news',
    });
  });

  it("lists each job tool's output schema from the contract's result schema, and the client checks answers against it", async () => {
    const client = await connect(caller('news', 'stock-report', 'analysis'));
    // Listing makes the SDK's client check every later answer of a tool against its output schema.
    const { tools } = await client.listTools();
    const schemaOf = (name: string) => tools.find((tool) => tool.name === name)?.outputSchema;
    for (const name of ['news', 'stock_report', 'analysis']) {
      expect(schemaOf(name)?.type).toBe('object');
      expect(Object.keys(schemaOf(name)?.properties ?? {}).sort()).toEqual([
        'error',
        'job_id',
        'job_type',
        'note',
        'result',
        'status',
        'status_url',
      ]);
    }
    // The news item's sentiment, dates and topics are described to the assistant.
    const described = JSON.stringify(schemaOf('news'));
    for (const field of ['published_at', 'topics', 'tickers', 'sentiment_label', 'ticker_sentiment'])
      expect(described).toContain(`"${field}"`);
    expect(schemaOf('chat')).toBeUndefined();

    const result = (await client.callTool({ name: 'news', arguments: { symbols: ['AAPL'] } })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ job_id: JOB, status: 'completed', result: NEWS_RESULT });
    // A tool error conforms too (its body under `error`), so a checking client reads it rather than throwing.
    const refused = (await client.callTool({ name: 'stock_report', arguments: { symbols: ['IBM'] } })) as CallToolResult;
    expect(refused.isError).toBe(true);
    expect(ErrorBody.parse((refused.structuredContent as { error: unknown }).error).status_code).toBe(429);
    // An answer outside the schema is never passed on as if it were the result.
    const bad = (await client.callTool({ name: 'news', arguments: { symbols: ['BAD'] } })) as CallToolResult;
    expect(bad.isError).toBe(true);
    expect(text(bad)).toMatch(/output/i);
  });

  it("passes the API's 429 on as a tool error saying when to retry, without waiting for the window", async () => {
    const client = await connect(caller('stock-report'));
    const started = Date.now();
    const result = (await client.callTool({ name: 'stock_report', arguments: { symbols: ['AAPL'] } })) as CallToolResult;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(result.isError).toBe(true);
    expect(text(result)).toBe(
      'Rate limit exceeded: this account may make 20 stock-report requests per minute. (HTTP 429 rate_limit_exceeded) Retry in 37 s.',
    );
  });

  it('checks tool input with the contract schema before calling the API', async () => {
    const client = await connect(caller('news'));
    const before = api.received.length;
    const result = (await client.callTool({ name: 'news', arguments: { symbols: [] } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(text(result)).toContain('symbols');
    expect(api.received.length).toBe(before);
  });

  it('refuses callback_url with the fields the tool takes, which do not include it', async () => {
    const client = await connect(caller('news'));
    const before = api.received.length;
    const result = (await client.callTool({
      name: 'news',
      arguments: { symbols: ['AAPL'], callback_url: 'https://example.com/hook' },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(text(result)).toContain(
      'unknown field "callback_url" (allowed: symbols, n, language, time_from, time_to, topics, sort, sources, data)',
    );
    expect(api.received.length).toBe(before);
  });

  it('refuses "__proto__" in tool arguments as the API does: 400 naming its path, and calls nothing', async () => {
    const before = api.received.length;
    const body =
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"news","arguments":{"symbols":["AAPL"],"data":{"__proto__":null}}}}';
    const res = await gatewayFetch(caller('news'), 'fin_x')(`${service.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body,
    });
    expect(res.status).toBe(400);
    expect(ErrorBody.parse(await res.json())).toEqual({
      detail: 'params.arguments.data.__proto__: the key "__proto__" is not allowed',
      status_code: 400,
      type: 'validation_error',
    });
    expect(api.received.length).toBe(before);
  });

  it("reports a failed job with the job's own error type and status, not a 500", async () => {
    const client = await connect(caller('news'));
    const result = (await client.callTool({ name: 'news', arguments: { symbols: ['FAIL'] } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toEqual({
      error: { detail: `The news job ${FAILED_JOB} failed: The model did not answer in time.`, status_code: 504, type: 'gateway_timeout' },
    });
    expect(text(result)).toBe(
      `The news job ${FAILED_JOB} failed: The model did not answer in time. (HTTP 504 gateway_timeout) job_status with job_type news and job_id ${FAILED_JOB} shows it.`,
    );
  });

  it('counts tool calls by tool and outcome (fin_mcp_tool_calls_total)', async () => {
    const count = async (tool: string, outcome: string) =>
      (await mcpToolCalls.get()).values.find((value) => value.labels.tool === tool && value.labels.outcome === outcome)?.value ?? 0;
    const before = {
      refused: await count('news', 'refused'),
      ok: await count('news', 'ok'),
      pending: await count('news', 'pending'),
      failed: await count('stock_report', 'failed'),
    };
    await (await connect(caller('chat'))).callTool({ name: 'news', arguments: { symbols: ['AAPL'] } });
    const client = await connect(caller('news', 'stock-report'));
    await client.callTool({ name: 'news', arguments: { symbols: ['AAPL'] } });
    await client.callTool({ name: 'news', arguments: { symbols: ['SLOW'] } });
    await client.callTool({ name: 'stock_report', arguments: { symbols: ['AAPL'] } });
    expect({
      refused: await count('news', 'refused'),
      ok: await count('news', 'ok'),
      pending: await count('news', 'pending'),
      failed: await count('stock_report', 'failed'),
    }).toEqual({ refused: before.refused + 1, ok: before.ok + 1, pending: before.pending + 1, failed: before.failed + 1 });
  });

  it("sec_filings lists filings, gives a filing's sections and one section's text, with the contract's checks first", async () => {
    const client = await connect(caller('filings'), 'fin_the_filings_key');
    const before = api.received.length;
    const call = async (args: Record<string, unknown>) =>
      (await client.callTool({ name: 'sec_filings', arguments: args })) as CallToolResult;
    const accession = '0000320193-25-000079';
    expect((await call({ symbol: 'aapl', forms: '10-k, 8-K', since: '2025-01-01' })).structuredContent).toEqual({
      asked: '/api/filings?symbol=AAPL&limit=20&forms=10-K%2C8-K&since=2025-01-01',
    });
    expect((await call({ symbol: 'AAPL', accession })).structuredContent).toEqual({ asked: `/api/filings/${accession}?symbol=AAPL` });
    expect((await call({ symbol: 'AAPL', accession, item: '1a' })).structuredContent).toEqual({
      asked: `/api/filings/${accession}/sections/1A?symbol=AAPL`,
    });
    expect(api.received.slice(before).every((request) => request.apiKey === 'fin_the_filings_key')).toBe(true);

    const counted = api.received.length;
    for (const [args, field] of [
      [{ symbol: 'AAPL', item: '1A' }, 'item'],
      [{ symbol: 'AAPL', forms: '10K' }, 'forms'],
      [{ symbol: 'AAPL', accession: '12345' }, 'accession'],
    ] as const) {
      const refused = await call(args);
      expect([refused.isError, text(refused)]).toEqual([true, expect.stringContaining(field)]);
    }
    expect(api.received.length).toBe(counted);
    const unscoped = await (await connect(caller('news'))).callTool({ name: 'sec_filings', arguments: { symbol: 'AAPL' } });
    expect(text(unscoped as CallToolResult)).toBe(
      'This API key does not have the filings scope, which the sec_filings tool needs. (HTTP 403 forbidden)',
    );
  });

  it('chats, and continues the conversation it returned', async () => {
    const client = await connect(caller('chat'));
    const first = (await client.callTool({ name: 'chat', arguments: { message: 'Hello' } })) as CallToolResult;
    expect(first.structuredContent).toMatchObject({ conversation_id: CONVERSATION, reply: 'You said: Hello (stream false)' });
    const next = (await client.callTool({
      name: 'chat',
      arguments: { message: 'And then?', conversation_id: CONVERSATION },
    })) as CallToolResult;
    expect(next.structuredContent).toMatchObject({ conversation_id: CONVERSATION, reply: 'You said: And then? (stream false)' });
    expect(api.received.at(-1)?.body).toEqual({ message: 'And then?', conversation_id: CONVERSATION, stream: false });
  });

  it('refuses a request the gateway did not sign (401) and answers GET with 405', async () => {
    const unsigned = await gatewayFetch(
      caller('news'),
      'fin_x',
      false,
    )(`${service.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(unsigned.status).toBe(401);
    const get = await gatewayFetch(caller('news'), 'fin_x')(`${service.url}/mcp`, { headers: { accept: 'text/event-stream' } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect(ErrorBody.parse(await get.json()).type).toBe('method_not_allowed');
  });

  it("refuses a body that is not a JSON-RPC message, and a client that does not take event streams, with the spec's 400", async () => {
    const res = await gatewayFetch(caller('news'), 'fin_x')(`${service.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '1.0', method: 7 }),
    });
    expect(res.status).toBe(400);
    const body = ErrorBody.parse(await res.json());
    expect(body.detail).toContain('expected a JSON-RPC 2.0 request, notification or response');

    const jsonOnly = await gatewayFetch(caller('news'), 'fin_x')(`${service.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(jsonOnly.status).toBe(400);
    expect(ErrorBody.parse(await jsonOnly.json()).detail).toBe('Accept: must list both application/json and text/event-stream');
  });
});
