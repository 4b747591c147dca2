import { offlineAnalyst } from '@fin/ai';
import { AsyncJobResponse, CustomerTool, CustomerToolCallListResponse, JobResultResponseByType, JobStatusResponse } from '@fin/contracts';
import { startFakeCustomerApi, testCertificate, type FakeCustomerApi } from '@fin/customer-tools/testing';
import {
  jsonReply,
  lastUserText,
  startFakeAnthropic,
  startFakeFinnhub,
  toolUseReply,
  type FakeAnthropic,
  type FakeFinnhub,
  type MessagesRequestBody,
} from '@fin/fakes';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { sharedEnv, startSystem, type System } from '../src/system';

/**
 * A tenant's customer tool inside its product jobs, across the whole system: the tool is registered through the
 * gateway (portal service), a news job and an analysis job run in their workers (separate processes), the model
 * calls the tool, the call reaches the customer's API with its secret header, and the audit lists it under the job.
 * Another tenant's job never sees the tool. The workers may call loopback here only because the fake customer API
 * lives on 127.0.0.1 (CUSTOMER_TOOLS_ALLOW_LOOPBACK, test configuration).
 */
describe('customer tools called by product jobs', () => {
  let db: TestDatabase;
  let claude: FakeAnthropic;
  let finnhub: FakeFinnhub;
  let api: FakeCustomerApi;
  let system: System;
  let keyA: string;
  let keyB: string;
  /** The customer tool's answer as the model was shown it (what the customer's API served). */
  let servedToModel = '';

  function toolOutputIn(body: MessagesRequestBody): { url: string; text: string } | undefined {
    for (const entry of body.messages) {
      if (typeof entry.content === 'string') continue;
      for (const block of entry.content) {
        const match =
          block.type === 'tool_result' && typeof block.content === 'string'
            ? /^<tool_output tool="get_positions" source_url="([^"]+)">\n([\s\S]*)\n<\/tool_output>$/.exec(block.content)
            : null;
        if (match) return { url: match[1] ?? '', text: match[2] ?? '' };
      }
    }
    return undefined;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    api = await startFakeCustomerApi();
    const analyst = offlineAnalyst();
    // The model calls the tool once when it is offered, then answers as the offline analyst does.
    claude = await startFakeAnthropic({
      handler: async (request, context) => {
        const body = request.body as { tools?: { name: string }[]; messages: unknown[] };
        const offered = body.tools?.some((tool) => tool.name === 'get_positions') ?? false;
        if (offered && !JSON.stringify(body.messages).includes('tool_result')) return toolUseReply('get_positions', { account: 'A-1' });
        // Asked for an analysis's citations, it cites the tool's answer under the URL the engine gave it: once
        // truly, once with a figure the customer's API never sent.
        const output = toolOutputIn(request.body);
        if (output && lastUserText(request.body).startsWith('List the passages')) {
          servedToModel = output.text;
          return jsonReply({
            citations: [
              { url: output.url, quote: '"positions":[{"symbol":"AAPL","shares":120}]' },
              { url: output.url, quote: '"shares":9999' },
            ],
          });
        }
        return analyst(request, context);
      },
    });
    finnhub = await startFakeFinnhub({ token: 'finnhub-e2e-token' });
    const env = sharedEnv({
      databaseUrl: db.url,
      anthropicUrl: claude.url,
      finnhubUrl: finnhub.apiBaseUrl,
      finnhubToken: 'finnhub-e2e-token',
    });
    const workerEnv = { CUSTOMER_TOOLS_ALLOW_LOOPBACK: 'true', NODE_EXTRA_CA_CERTS: (await testCertificate()).certFile };
    system = await startSystem(env, {}, { products: ['portal', 'news', 'analysis'], productEnv: { news: workerEnv, analysis: workerEnv } });
    keyA = system.tenantKey('acme');
    keyB = system.tenantKey('globex');
    system.admin(['limits', 'set', '--tenant', 'acme', '--product', 'tools', '--per-minute', '100000']);
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([claude?.close(), finnhub?.close(), api?.close()]);
    await db?.drop();
  });

  const call = (path: string, key: string, init: RequestInit = {}) =>
    fetch(`${system.gatewayUrl}${path}`, { ...init, headers: { 'Content-Type': 'application/json', 'X-API-Key': key } });

  async function finished(statusUrl: string, key: string) {
    return waitFor(
      async () => {
        const status = JobStatusResponse.parse(await (await call(statusUrl, key)).json());
        return status.status === 'completed' || status.status === 'failed' ? status : undefined;
      },
      { timeoutMs: 30_000, what: 'the job to finish' },
    );
  }

  it('offers an enabled tool to news and analysis jobs, calls it with its secret, and audits each call under its job', async () => {
    const created = await call('/api/customer-tools/', keyA, {
      method: 'POST',
      body: JSON.stringify({
        name: 'get_positions',
        description: 'Positions of a client account.',
        endpoint: `${api.url}/positions`,
        method: 'POST',
        input_schema: { type: 'object', properties: { account: { type: 'string' } }, required: ['account'] },
        headers: { Authorization: 'Bearer e2e-customer-secret' },
        products: ['news', 'analysis'],
      }),
    });
    expect(created.status).toBe(201);
    const tool = CustomerTool.parse(await created.json());

    const news = AsyncJobResponse.parse(
      await (await call('/api/products/news', keyA, { method: 'POST', body: JSON.stringify({ symbols: ['AAPL'], n: 2 }) })).json(),
    );
    expect((await finished(news.status_url, keyA)).status).toBe('completed');
    const analysisRes = await call('/api/analysis', keyA, {
      method: 'POST',
      body: JSON.stringify({ prompt: 'How is account A-1 positioned?' }),
    });
    const analysis = (await analysisRes.json()) as { job_id: string; status_url: string };
    expect((await finished(analysis.status_url, keyA)).status).toBe('completed');
    // The analysis cites the tool's answer under its endpoint (scheme, host and path), quoting what the API served.
    const analysisResult = JobResultResponseByType.analysis.parse(
      await (await call(`/api/jobs/analysis/${analysis.job_id}/result`, keyA)).json(),
    );
    expect(analysisResult.result.citations).toEqual([
      {
        url: `${api.url}/positions`,
        title: 'get_positions',
        publisher: new URL(api.url).hostname,
        published_at: null,
        quote: '"positions":[{"symbol":"AAPL","shares":120}]',
        source: 'customer_tool',
      },
    ]);
    expect(servedToModel).toContain(analysisResult.result.citations[0]?.quote);

    // The customer's API got both calls, with the secret header the portal sealed and the worker opened.
    const received = api.requests.filter((request) => request.path === '/positions');
    expect(received).toHaveLength(2);
    expect(
      received.every((request) => request.headers.authorization === 'Bearer e2e-customer-secret' && request.body === '{"account":"A-1"}'),
    ).toBe(true);

    const audit = CustomerToolCallListResponse.parse(await (await call(`/api/customer-tools/${tool.id}/calls`, keyA)).json());
    const byJob = new Map(audit.calls.map((entry) => [entry.job_id, entry]));
    expect(byJob.get(news.job_id)).toMatchObject({ product: 'news', outcome: 'ok', http_status: 200 });
    expect(byJob.get(analysis.job_id)).toMatchObject({ product: 'analysis', outcome: 'ok', http_status: 200 });
    // No secret in the audit.
    expect(JSON.stringify(audit)).not.toContain('e2e-customer-secret');
  });

  it("never offers a tenant's tool to another tenant's job", async () => {
    const before = api.requests.length;
    const requestsBefore = claude.requests.length;
    const news = AsyncJobResponse.parse(
      await (await call('/api/products/news', keyB, { method: 'POST', body: JSON.stringify({ symbols: ['MSFT'], n: 2 }) })).json(),
    );
    expect((await finished(news.status_url, keyB)).status).toBe('completed');
    const offered = claude.requests
      .slice(requestsBefore)
      .flatMap((request) => ((request.body as { tools?: { name: string }[] }).tools ?? []).map((tool) => tool.name));
    expect(offered).not.toContain('get_positions');
    expect(api.requests.length).toBe(before);
  });
});
