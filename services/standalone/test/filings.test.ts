// The filings routes through the gateway as deployed: the real gateway (keys, scopes and per-minute limits in
// Postgres) forwarding over HTTP, with its signed identity, to the stock-report service answering from @fin/edgar's
// bundled sample, and from the live client against a fake SEC EDGAR. Every answer is checked against the OpenAPI
// document the gateway serves, with Ajv.
import { createKey, createTenant, setLimitOverride } from '@fin/api-keys';
import { parseConfig } from '@fin/config';
import { ErrorBody, FilingListResponse, FilingResponse, FilingSectionResponse, type ApiScope } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { sampleFilingsSource, type FilingsSource } from '@fin/edgar';
import { createMemoryBus } from '@fin/events';
import { gatewayConfigShape } from '@fin/gateway/config';
import { gatewayService } from '@fin/gateway/service';
import { serveDefinition, served, type ServedService } from '@fin/http';
import { createLogger } from '@fin/log';
import { stockReportConfigShape } from '@fin/stock-report/config';
import { stockReportService } from '@fin/stock-report/service';
import { startFakeEdgar, type FakeEdgar } from '@fin/fakes';
import { mcpConfigShape } from '@fin/mcp/config';
import { mcpService } from '@fin/mcp/service';
import { createTestDatabase, freePort, testCustomerToolsKey } from '@fin/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { FinancialIntelligence, PermissionDeniedError } from '@financial-intelligence/sdk';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020';

const SECRET = 'filings-test-signing-secret-0123456789abcdef';
const logger = createLogger({ service: 'filings-test', level: process.env.TEST_LOG_LEVEL ?? 'silent' });

interface Stack {
  /** The gateway's address. */
  url: string;
  pool: Pool;
  /** The OpenAPI document the gateway serves, and Ajv holding it. */
  document: Record<string, unknown>;
  ajv: Ajv2020;
  close(): Promise<void>;
}

/**
 * A database of its own, the stock-report service's API role (sharing `filings` when given, else choosing its
 * source from `env` as deployed) and the gateway in front of it, each listening on a port of its own.
 */
async function startStack({ env = {}, filings }: { env?: Record<string, string>; filings?: FilingsSource }): Promise<Stack> {
  // The MCP service calls the API back through the gateway: the gateway's port is chosen first.
  const gatewayPort = await freePort();
  const db = await createTestDatabase();
  const pool = createPool({ connectionString: db.url, applicationName: 'filings-test', max: 4 });
  const bus = createMemoryBus({ logger });
  const services: ServedService[] = [];
  const close = async () => {
    for (const service of services.reverse()) {
      await new Promise((resolve) => {
        service.server.close(resolve);
        service.server.closeAllConnections();
      });
      for (const closer of service.closers) await closer.close();
    }
    await bus.close();
    await pool.end();
    await db.drop();
  };
  try {
    const stockReportConfig = parseConfig(stockReportConfigShape, {
      DATABASE_URL: db.url,
      INTERNAL_SIGNING_SECRET: SECRET,
      KAFKA_BROKERS: '127.0.0.1:1',
      CUSTOMER_TOOLS_ENCRYPTION_KEY: testCustomerToolsKey(),
      STOCK_REPORT_ROLE: 'api',
      PORT: '0',
      METRICS_PORT: '0',
      ...env,
    });
    const shared = { pool, bus, ...(filings ? { filings } : {}) };
    const stockReport = served(await serveDefinition(stockReportService, { config: stockReportConfig, logger, shared }));
    services.push(stockReport);
    const mcpConfig = parseConfig(mcpConfigShape, {
      INTERNAL_SIGNING_SECRET: SECRET,
      MCP_API_URL: `http://127.0.0.1:${gatewayPort}`,
      PORT: '0',
      METRICS_PORT: '0',
    });
    const mcp = served(await serveDefinition(mcpService, { config: mcpConfig, logger }));
    services.push(mcp);
    const gatewayConfig = parseConfig(gatewayConfigShape, {
      DATABASE_URL: db.url,
      INTERNAL_SIGNING_SECRET: SECRET,
      STOCK_REPORT_URL: stockReport.url,
      MCP_URL: mcp.url,
      PORT: String(gatewayPort),
      METRICS_PORT: '0',
    });
    const gateway = served(await serveDefinition(gatewayService(), { config: gatewayConfig, logger }));
    services.push(gateway);
    const document = (await (await fetch(`${gateway.url}/api/openapi.json`)).json()) as Record<string, unknown>;
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    ajv.addSchema(document, 'openapi');
    return { url: gateway.url, pool, document, ajv, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A key of a new tenant: every scope unless told, and the tenant's filings limit when given. */
async function keyOf(
  { pool }: Stack,
  tenant: string,
  { scopes, perMinute }: { scopes?: ApiScope[]; perMinute?: number } = {},
): Promise<string> {
  await createTenant(pool, tenant);
  if (perMinute !== undefined) await setLimitOverride(pool, tenant, 'filings', perMinute);
  return (await createKey(pool, { tenant, ...(scopes ? { scopes } : {}) })).apiKey;
}

/** The served document's schema of `path`'s GET answer with `status`. */
function documented({ ajv, document }: Stack, path: string, status: number): ValidateFunction {
  const escape = (part: string) => part.replaceAll('~', '~0').replaceAll('/', '~1');
  const at = (pointer: string): unknown =>
    pointer
      .split('/')
      .slice(1)
      .reduce<unknown>(
        (node, part) => (node as Record<string, unknown> | undefined)?.[part.replaceAll('~1', '/').replaceAll('~0', '~')],
        document,
      );
  let pointer = `#/paths/${escape(path)}/get/responses/${status}`;
  // Error answers are shared components ($ref); successes are inline.
  const ref = (at(pointer) as { $ref?: string } | undefined)?.$ref;
  if (ref !== undefined) pointer = ref;
  const validate = ajv.getSchema(`openapi${pointer}/content/application~1json/schema`);
  if (validate === undefined) throw new Error(`the document has no JSON answer ${status} for GET ${path}`);
  return validate;
}

/** GET `path` through the gateway with `key`; the answer, checked against the served document (`route`'s). */
async function getFrom(stack: Stack, path: string, key: string, route: string): Promise<{ res: Response; body: unknown }> {
  const res = await fetch(`${stack.url}${path}`, { headers: { 'X-API-Key': key } });
  const body: unknown = await res.json();
  const validate = documented(stack, route, res.status);
  expect([res.status, validate(body) ? 'valid' : validate.errors]).toEqual([res.status, 'valid']);
  return { res, body };
}

const LIST = '/api/filings';
const FILING = '/api/filings/{accession}';
const SECTION = '/api/filings/{accession}/sections/{item}';

describe('the filings routes through the gateway, on the bundled sample', () => {
  let stack: Stack;
  let key: string;
  beforeAll(async () => {
    stack = await startStack({ filings: sampleFilingsSource() });
    key = await keyOf(stack, 'filings-reader');
  });
  afterAll(async () => {
    await stack?.close();
  });

  const get = (path: string, apiKey: string, route: string) => getFrom(stack, path, apiKey, route);
  const keyFor = (tenant: string, options?: { scopes?: ApiScope[]; perMinute?: number }) => keyOf(stack, tenant, options);

  it("lists a company's filings newest first, narrowed by forms, since and limit, labelled as sample data", async () => {
    const { res, body } = await get('/api/filings?symbol=aapl&forms=10-k,8-K&since=2024-01-01&limit=5', key, LIST);
    expect(res.status).toBe(200);
    const listed = FilingListResponse.parse(body);
    expect(listed).toMatchObject({ symbol: 'AAPL', company: { cik: '0000320193' }, source: 'sample' });
    expect(listed.note).toMatch(/sample/i);
    expect(listed.filings.length).toBeGreaterThan(0);
    expect(listed.filings.length).toBeLessThanOrEqual(5);
    for (const filing of listed.filings) {
      expect(['10-K', '8-K']).toContain(filing.form);
      expect(filing.filed >= '2024-01-01').toBe(true);
    }
    const filed = listed.filings.map((filing) => filing.filed);
    expect(filed).toEqual([...filed].sort().reverse());
    expect(listed.filings.filter((filing) => filing.form === '8-K').every((filing) => filing.items.length > 0)).toBe(true);
    expect(res.headers.get('cache-control')).toBe('private, max-age=300');
    expect(res.headers.get('x-ratelimit-limit')).toBe('60');
  });

  it('answers a market SEC EDGAR does not cover with 200, no filings and a note, not an error', async () => {
    const { res, body } = await get('/api/filings?symbol=7203.T', key, LIST);
    expect(res.status).toBe(200);
    expect(FilingListResponse.parse(body)).toEqual({
      symbol: '7203.T',
      company: null,
      filings: [],
      source: 'sample',
      note: expect.stringMatching(/^No SEC filings for this market: SEC EDGAR does not know 7203\.T/) as unknown,
    });
  });

  it("gives a filing's sections without their text, then one section's text, and 404 for what is not there", async () => {
    const listed = FilingListResponse.parse((await get('/api/filings?symbol=AAPL&forms=10-K&limit=1', key, LIST)).body);
    const accession = listed.filings[0]!.accession;

    const { res, body } = await get(`/api/filings/${accession}?symbol=AAPL`, key, FILING);
    expect(res.status).toBe(200);
    const filing = FilingResponse.parse(body);
    expect(filing).toMatchObject({ symbol: 'AAPL', filing: { accession, form: '10-K' }, source: 'sample' });
    expect(filing.sections.map((section) => section.item)).toEqual(expect.arrayContaining(['1A', '7']));
    expect(JSON.stringify(body)).not.toContain('"text"');
    expect(res.headers.get('cache-control')).toBe('private, max-age=86400, immutable');

    const risk = await get(`/api/filings/${accession}/sections/1a?symbol=AAPL`, key, SECTION);
    expect(risk.res.status).toBe(200);
    const section = FilingSectionResponse.parse(risk.body).section;
    expect(section).toMatchObject({ item: '1A', title: expect.stringMatching(/risk factors/i) as unknown });
    expect(section.text.length).toBe(filing.sections.find((candidate) => candidate.item === '1A')!.characters);
    expect(section.text.length).toBeGreaterThan(100);

    const missingItem = await get(`/api/filings/${accession}/sections/9Z?symbol=AAPL`, key, SECTION);
    expect(missingItem.res.status).toBe(404);
    // Only a success is cacheable.
    expect(missingItem.res.headers.get('cache-control')).toBeNull();
    expect(ErrorBody.parse(missingItem.body).detail).toMatch(/has no item 9Z; its items are .*1A/);
    const missingFiling = await get(`/api/filings/0000320193-99-999999?symbol=AAPL`, key, FILING);
    expect(missingFiling.res.status).toBe(404);
    const uncovered = await get(`/api/filings/${accession}?symbol=7203.T`, key, FILING);
    expect([uncovered.res.status, ErrorBody.parse(uncovered.body).detail]).toEqual([
      404,
      expect.stringMatching(/^No SEC filings for this market/),
    ]);
  });

  it.each([
    ['symbol missing', '/api/filings', /^symbol: is required$/],
    ['a symbol that is no ticker', '/api/filings?symbol=EUR%2FUSD', /^symbol: "EUR\/USD" is not a valid ticker symbol/],
    ['a form it does not know', '/api/filings?symbol=AAPL&forms=10K', /^forms\[0\]: "10K" is not a form this API lists/],
    ['an empty form', '/api/filings?symbol=AAPL&forms=10-K,,8-K', /^forms\[1\]: names an empty form/],
    ['since not a date', '/api/filings?symbol=AAPL&since=2025-13-01', /^since: must be a date such as 2025-01-01/],
    [
      'since in the future',
      '/api/filings?symbol=AAPL&since=2999-01-01',
      /^since: must not be in the future \(today is \d{4}-\d{2}-\d{2} UTC\)$/,
    ],
    ['limit 0', '/api/filings?symbol=AAPL&limit=0', /^limit: must be at least 1$/],
    ['limit not a number', '/api/filings?symbol=AAPL&limit=ten', /^limit: must be an integer$/],
    ['limit over 100', '/api/filings?symbol=AAPL&limit=101', /^limit: must be at most 100$/],
  ])('refuses %s with a 400 naming the field', async (_case, path, detail) => {
    const { res, body } = await get(path, key, LIST);
    expect(res.status).toBe(400);
    expect(ErrorBody.parse(body)).toEqual({ type: 'validation_error', status_code: 400, detail: expect.stringMatching(detail) as unknown });
  });

  it('refuses a malformed accession number or item with a 400 naming it', async () => {
    const accession = await get('/api/filings/12345?symbol=AAPL', key, FILING);
    expect([accession.res.status, ErrorBody.parse(accession.body).detail]).toEqual([
      400,
      expect.stringMatching(/^accession: must be an accession number/),
    ]);
    const item = await get('/api/filings/0000320193-25-000079/sections/1A..B?symbol=AAPL', key, SECTION);
    expect([item.res.status, ErrorBody.parse(item.body).detail]).toEqual([400, expect.stringMatching(/^item: must be an item such as 1A/)]);
  });

  it('refuses a key without the filings scope with 403, and one that is missing with 401', async () => {
    const other = await keyFor('filings-unscoped', { scopes: ['news', 'stock-report'] });
    for (const path of ['/api/filings?symbol=AAPL', '/api/filings/0000320193-25-000079?symbol=AAPL']) {
      const { res, body } = await get(path, other, path.startsWith('/api/filings?') ? LIST : FILING);
      expect([res.status, ErrorBody.parse(body)]).toEqual([
        403,
        { type: 'forbidden', status_code: 403, detail: 'This API key does not have the filings scope.' },
      ]);
    }
    const anonymous = await fetch(`${stack.url}/api/filings?symbol=AAPL`);
    expect(anonymous.status).toBe(401);
  });

  it("counts the filings routes together per account and answers 429 with the rate-limit headers past the account's limit", async () => {
    const limited = await keyFor('filings-limited', { perMinute: 2 });
    const first = await get('/api/filings?symbol=AAPL', limited, LIST);
    expect([first.res.status, first.res.headers.get('x-ratelimit-remaining')]).toEqual([200, '1']);
    const second = await get('/api/filings/0000320193-99-999999?symbol=AAPL', limited, FILING);
    expect([second.res.status, second.res.headers.get('x-ratelimit-remaining')]).toEqual([404, '0']);
    const refused = await get('/api/filings?symbol=MSFT', limited, LIST);
    expect(refused.res.status).toBe(429);
    expect(ErrorBody.parse(refused.body)).toMatchObject({
      type: 'rate_limit_exceeded',
      detail: expect.stringContaining('2 filings requests per minute') as unknown,
    });
    expect(refused.res.headers.get('x-ratelimit-limit')).toBe('2');
    expect(refused.res.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(refused.res.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
    expect(Number(refused.res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
  it('is what the SDK reads: filings.list, filings.get and filings.section, and a 403 as PermissionDeniedError', async () => {
    const client = new FinancialIntelligence({ apiKey: key, baseUrl: stack.url, maxRetries: 0 });
    const listed = await client.filings.list({ symbol: 'NVDA', forms: '10-Q', limit: 2 });
    expect(listed).toMatchObject({ symbol: 'NVDA', source: 'sample' });
    expect(listed.filings.map((filing) => filing.form)).toEqual(['10-Q', '10-Q']);
    const accession = listed.filings[0]!.accession;
    const filing = await client.filings.get('NVDA', accession);
    const item = filing.sections[0]!.item;
    const { section } = await client.filings.section('NVDA', accession, item);
    expect(section.text.length).toBe(filing.sections[0]!.characters);
    const unscoped = new FinancialIntelligence({ apiKey: await keyFor('filings-sdk-unscoped', { scopes: ['news'] }), baseUrl: stack.url });
    await expect(unscoped.filings.list({ symbol: 'NVDA' })).rejects.toBeInstanceOf(PermissionDeniedError);
  });
  it("is what the MCP server's sec_filings tool reads, through the gateway with the caller's key", async () => {
    const client = new Client({ name: 'filings-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.url}/mcp`), { requestInit: { headers: { 'X-API-Key': key } } }),
    );
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('sec_filings');
      const call = async (args: Record<string, unknown>) =>
        (await client.callTool({ name: 'sec_filings', arguments: args })) as CallToolResult;
      const listed = FilingListResponse.parse((await call({ symbol: 'MSFT', forms: '10-K', limit: 1 })).structuredContent);
      expect(listed).toMatchObject({ symbol: 'MSFT', source: 'sample', filings: [{ form: '10-K' }] });
      const accession = listed.filings[0]!.accession;
      const sections = FilingResponse.parse((await call({ symbol: 'MSFT', accession })).structuredContent).sections;
      expect(sections.map((section) => section.item)).toContain('1A');
      const risk = FilingSectionResponse.parse((await call({ symbol: 'MSFT', accession, item: '1A' })).structuredContent);
      expect(risk.section.text.length).toBe(sections.find((section) => section.item === '1A')!.characters);
      const missing = await call({ symbol: 'MSFT', accession, item: '9Z' });
      expect([missing.isError, (missing.content[0] as { text: string }).text]).toEqual([
        true,
        expect.stringMatching(/has no item 9Z.*HTTP 404 not_found/),
      ]);
    } finally {
      await client.close();
    }
  });
});

describe('the filings routes through the gateway, on SEC EDGAR (a fake at its paths) as the service is deployed', () => {
  let edgar: FakeEdgar;
  let stack: Stack;
  let key: string;
  beforeAll(async () => {
    // MSFT's submissions fail as EDGAR's do when it is down; NVDA's are refused for exceeding EDGAR's rate.
    edgar = await startFakeEdgar({
      faults: [
        { path: '/submissions/CIK0000789019', status: 503 },
        { path: '/submissions/CIK0001045810', status: 429 },
      ],
    });
    // No shared source: the service picks EDGAR itself from its environment, as in Kubernetes (EDGAR_OFFLINE=false).
    stack = await startStack({
      env: {
        EDGAR_OFFLINE: 'false',
        EDGAR_USER_AGENT: 'Filings Test Ltd ops@example.com',
        EDGAR_BASE_URL: edgar.url,
        EDGAR_DATA_URL: edgar.url,
      },
    });
    key = await keyOf(stack, 'filings-online');
  });
  afterAll(async () => {
    await stack?.close();
    await edgar?.close();
  });

  it("answers from EDGAR, labelled sec_edgar, with the operator's User-Agent on every request", async () => {
    const listed = FilingListResponse.parse((await getFrom(stack, '/api/filings?symbol=AAPL&forms=10-K&limit=1', key, LIST)).body);
    expect(listed).toMatchObject({ symbol: 'AAPL', company: { cik: '0000320193' }, source: 'sec_edgar' });
    expect(listed.note).toBeUndefined();
    const accession = listed.filings[0]!.accession;
    const section = await getFrom(stack, `/api/filings/${accession}/sections/7?symbol=AAPL`, key, SECTION);
    expect(FilingSectionResponse.parse(section.body)).toMatchObject({ section: { item: '7' }, source: 'sec_edgar' });
    expect(edgar.requests.length).toBeGreaterThan(0);
    expect(edgar.requests.every((request) => request.headers['user-agent'] === 'Filings Test Ltd ops@example.com')).toBe(true);
    const uncovered = FilingListResponse.parse((await getFrom(stack, '/api/filings?symbol=7203.T', key, LIST)).body);
    expect(uncovered).toMatchObject({ company: null, filings: [], source: 'sec_edgar' });
  });

  it('answers 503 when EDGAR cannot answer, not a 500', async () => {
    const { res, body } = await getFrom(stack, '/api/filings?symbol=MSFT', key, LIST);
    expect([res.status, ErrorBody.parse(body)]).toEqual([
      503,
      {
        type: 'service_unavailable',
        status_code: 503,
        detail: expect.stringMatching(/^SEC EDGAR is not answering this service right now/) as unknown,
      },
    ]);
  });

  // Last: EDGAR's block holds for every request of the deployment until it ends.
  it('answers 503 with Retry-After while EDGAR blocks the deployment, and what it stored meanwhile from its copy', async () => {
    const before = await getFrom(stack, '/api/filings?symbol=AAPL&forms=10-K&limit=1', key, LIST);
    expect(before.res.status).toBe(200);
    const { res, body } = await getFrom(stack, '/api/filings?symbol=NVDA', key, LIST);
    expect(res.status).toBe(503);
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(ErrorBody.parse(body).detail).toBe(`SEC EDGAR is not answering this service right now; try again in ${retryAfter} s.`);
    const stored = await getFrom(stack, '/api/filings?symbol=AAPL&forms=10-K&limit=1', key, LIST);
    expect([stored.res.status, FilingListResponse.parse(stored.body).source]).toEqual([200, 'sec_edgar']);
  });
});
