import { offlineAnalyst } from '@fin/ai';
import { AsyncJobResponse, ErrorBody, JobResultResponse, JobStatusResponse, StockReportResponse, StockReportResult } from '@fin/contracts';
import { startFakeAnthropic, startFakeFinnhub, type FakeAnthropic, type FakeFinnhub } from '@fin/fakes';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { UPSTREAM_MODES, sharedEnv, startSystem, type System } from '../src/system';

/**
 * Stock analysis through the whole system: gateway → stock-report API → outbox → Kafka → stock-report worker →
 * job events → jobs service (which stores the result and fills the cache) → client, each a process of its own.
 */
describe.each(UPSTREAM_MODES)('stock reports through the whole system (%s upstream)', (upstream) => {
  let db: TestDatabase;
  let claude: FakeAnthropic;
  let finnhub: FakeFinnhub;
  let system: System;
  let keyA: string;
  let keyB: string;

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
    system = await startSystem(env, {}, { products: ['stock-report'], upstream });
    keyA = system.tenantKey('acme');
    keyB = system.tenantKey('globex');
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([claude?.close(), finnhub?.close()]);
    await db?.drop();
  });

  async function api(path: string, { key = keyA, body }: { key?: string; body?: unknown } = {}) {
    const res = await fetch(`${system.gatewayUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'Content-Type': 'application/json', 'X-API-Key': key },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { res, body: await res.json() };
  }

  const report = (body: unknown, key = keyA) => api('/api/products/stock-report', { body, key });

  /** Polls the status URL until the job is finished, then reads the result URL. */
  async function resultOf(envelope: AsyncJobResponse, key = keyA): Promise<StockReportResult> {
    const final = await waitFor(
      async () => {
        const status = JobStatusResponse.parse((await api(envelope.status_url, { key })).body);
        return (status.status === 'completed' || status.status === 'failed') && status;
      },
      { timeoutMs: 30_000, what: `job ${envelope.job_id} to finish` },
    );
    expect(final).toMatchObject({ status: 'completed', progress: 100 });
    const { res, body } = await api(envelope.result_url, { key });
    expect(res.status).toBe(200);
    return StockReportResult.parse(JobResultResponse.parse(body).result);
  }

  it('compares two companies: a spec-valid comparison after polling, then the same report from the cache', async () => {
    const { res, body } = await report({ symbols: ['NVDA', 'msft'] });
    expect(res.status).toBe(202);
    const envelope = AsyncJobResponse.parse(body);
    expect(envelope).toMatchObject({
      status: 'pending',
      from_cache: false,
      status_url: `/api/jobs/stock-report/${envelope.job_id}/status`,
    });
    expect(res.headers.get('location')).toBe(envelope.status_url);

    const result = await resultOf(envelope);
    expect(new Set(result.detailed_analysis.map((item) => item.category)).size).toBeGreaterThanOrEqual(3);
    for (const item of result.detailed_analysis) {
      expect(item.title).toContain('NVDA versus MSFT');
      expect(item.keyMetric).toMatch(/NVDA .* vs MSFT /);
    }
    expect(result.quick_insights.length).toBeGreaterThanOrEqual(2);
    expect(result.quick_insights.length).toBeLessThanOrEqual(4);
    for (const insight of result.quick_insights) expect(insight).toMatch(/NVDA[\s\S]*MSFT|MSFT[\s\S]*NVDA/);
    // The result says what it cost, in the units the model provider bills: every call of the run, none failed.
    const usage = result.meta?.usage;
    expect(usage).toMatchObject({ web_searches: 0 });
    expect(usage?.failed_attempts).toBeUndefined();
    expect(usage?.model_calls).toBeGreaterThanOrEqual(2);
    expect(usage?.output_tokens).toBeGreaterThan(0);
    expect((usage?.input_tokens ?? 0) + (usage?.cache_creation_input_tokens ?? 0) + (usage?.cache_read_input_tokens ?? 0)).toBeGreaterThan(
      1_000,
    );

    const repeat = await report({ symbols: ['nvda', 'MSFT'], language: 'en' });
    expect(repeat.res.status).toBe(200);
    expect(repeat.res.headers.get('cache-status')).toMatch(/^fin-api; hit; ttl=\d+$/);
    const cached = StockReportResponse.parse(repeat.body);
    expect(cached).toMatchObject({ status: 'completed', from_cache: true });
    expect({ detailed_analysis: cached.detailed_analysis, quick_insights: cached.quick_insights }).toEqual({
      detailed_analysis: result.detailed_analysis,
      quick_insights: result.quick_insights,
    });
  });

  it("keeps a report made from one tenant's data to that tenant", async () => {
    const request = { symbols: ['AAPL'], data: { recent_earnings: { AAPL: 'Q4 EPS 1.64 USD, beat by 3%' } } };
    const own = AsyncJobResponse.parse((await report(request)).body);
    expect(JSON.stringify(await resultOf(own))).toContain("The client's data (recent_earnings) was weighed");
    expect((await report(request)).res.status).toBe(200);

    const other = await report(request, keyB);
    expect(other.res.status).toBe(202);
    expect(AsyncJobResponse.parse(other.body).job_id).not.toBe(own.job_id);
  });

  it('rejects no symbols and three symbols with a 400 naming symbols', async () => {
    for (const symbols of [[], ['AAPL', 'MSFT', 'NVDA']]) {
      const { res, body } = await report({ symbols });
      expect(res.status).toBe(400);
      expect(ErrorBody.parse(body)).toMatchObject({
        status_code: 400,
        type: 'validation_error',
        detail: expect.stringContaining('symbols'),
      });
    }
  });

  it("answers another tenant's job with the same 404 as a missing one", async () => {
    const { body } = await report({ symbols: ['TSLA'] });
    const { job_id: jobId } = AsyncJobResponse.parse(body);
    const missing = await api('/api/jobs/stock-report/00000000-0000-4000-8000-000000000000/status', { key: keyB });
    for (const path of [`/api/jobs/stock-report/${jobId}/status`, `/api/jobs/stock-report/${jobId}/result`]) {
      const other = await api(path, { key: keyB });
      expect(other.res.status).toBe(404);
      expect(other.body).toEqual(missing.body);
    }
  });
});
