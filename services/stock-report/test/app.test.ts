import { randomUUID } from 'node:crypto';
import { AsyncJobResponse, ErrorBody, StockReportResponse, type StockReportResult } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { identityKey, signIdentity } from '@fin/http';
import { createLogger } from '@fin/log';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import request from 'supertest';
import { createApp } from '../src/app';

const SECRET = 'x'.repeat(40);
const PATH = '/api/products/stock-report';

const REPORT: StockReportResult = {
  detailed_analysis: [
    {
      title: 'Growth: NVDA versus MSFT',
      keyMetric: 'Revenue growth NVDA 62% vs MSFT 15%',
      implications: ['NVDA outgrows MSFT.'],
      investmentThesis: 'NVDA leads.',
      category: 'growth',
      citations: [],
    },
    {
      title: 'Valuation: NVDA versus MSFT',
      keyMetric: 'P/E NVDA 49 vs MSFT 36',
      implications: ['MSFT is cheaper than NVDA.'],
      investmentThesis: 'MSFT is cheaper.',
      category: 'valuation',
      citations: [],
    },
    {
      title: 'Risk: NVDA versus MSFT',
      keyMetric: 'Beta NVDA 1.7 vs MSFT 0.9',
      implications: ['NVDA swings more than MSFT.'],
      investmentThesis: 'MSFT is steadier.',
      category: 'risk',
      citations: [],
    },
  ],
  quick_insights: ['NVDA grows faster than MSFT.', 'MSFT is cheaper than NVDA.'],
  quick_insight_citations: [[], []],
  figures: [],
  ratios: [],
  figure_notes: [],
};

describe('POST /api/products/stock-report (API role)', () => {
  let db: TestDatabase;
  let pool: Pool;
  let tenantA: string;
  let tenantB: string;
  let app: ReturnType<typeof createApp>;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'stock-report-app-test', max: 5 });
    const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('a'), ('b') RETURNING id");
    [tenantA, tenantB] = rows.map((row) => row.id) as [string, string];
    app = createApp({ pool, logger: createLogger({ service: 'stock-report-test', level: 'silent' }), signingSecret: SECRET });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  function post(body: unknown, tenantId = tenantA, headers: Record<string, string> = {}) {
    const signed = signIdentity(
      { requestId: randomUUID(), caller: { tenantId, keyId: randomUUID(), scopes: ['stock-report'] } },
      identityKey(SECRET, 'stock-report'),
      { method: 'POST', path: PATH, body: typeof body === 'string' ? body : JSON.stringify(body) },
    );
    return request(app)
      .post(PATH)
      .set(signed)
      .set(headers)
      .send(body as object);
  }

  /** What the jobs service does when a job completes: stores its result and fills the cache (tenant-owned with data). */
  async function complete(jobId: string, result: StockReportResult = REPORT): Promise<void> {
    const { rows } = await pool.query<{ cache_key: string; tenant_id: string; has_data: boolean }>(
      `UPDATE jobs SET status = 'completed', progress = 100, result = $2, finished_at = now() WHERE id = $1
       RETURNING cache_key, tenant_id, request ? 'data' AS has_data`,
      [jobId, JSON.stringify(result)],
    );
    const job = rows[0]!;
    await pool.query('INSERT INTO result_cache (cache_key, job_type, job_id, result, tenant_id) VALUES ($1, $2, $3, $4, $5)', [
      job.cache_key,
      'stock-report',
      jobId,
      JSON.stringify(result),
      job.has_data ? job.tenant_id : null,
    ]);
  }

  it('accepts a comparison with 202 and the job envelope, storing the normalised request with language en', async () => {
    const res = await post({ symbols: ['nvda', 'MSFT'] }).expect(202);
    const envelope = AsyncJobResponse.parse(res.body);
    expect(envelope).toMatchObject({ status: 'pending', from_cache: false });
    expect(envelope.status_url).toBe(`/api/jobs/stock-report/${envelope.job_id}/status`);
    expect(envelope.result_url).toBe(`/api/jobs/stock-report/${envelope.job_id}/result`);
    expect(res.headers.location).toBe(envelope.status_url);
    expect(res.headers['cache-status']).toBe('fin-api; fwd=miss');
    const { rows } = await pool.query('SELECT type, request, status FROM jobs WHERE id = $1', [envelope.job_id]);
    expect(rows[0]).toEqual({ type: 'stock-report', request: { symbols: ['NVDA', 'MSFT'], language: 'en' }, status: 'pending' });
  });

  it('answers a cached report at once with 200, from_cache, Cache-Status and Age, and bypasses on no-cache', async () => {
    const first = AsyncJobResponse.parse((await post({ symbols: ['NVDA', 'AMZN'] }).expect(202)).body);
    await complete(first.job_id);
    const res = await post({ symbols: ['nvda', 'amzn'] }, tenantB).expect(200);
    const body = StockReportResponse.parse(res.body);
    expect(body).toMatchObject({ status: 'completed', from_cache: true, ...REPORT });
    expect(body.job_id).not.toBe(first.job_id);
    expect(res.headers['cache-status']).toMatch(/^fin-api; hit; ttl=\d+$/);
    expect(Number(res.headers.age)).toBeGreaterThanOrEqual(0);
    const fresh = await post({ symbols: ['NVDA', 'AMZN'] }, tenantB, { 'Cache-Control': 'no-cache' }).expect(202);
    expect(fresh.headers['cache-status']).toBe('fin-api; fwd=bypass');
  });

  it('keys the cache by what changes the report: language, and which company a comparison is written from', async () => {
    const en = AsyncJobResponse.parse((await post({ symbols: ['AAPL', 'GOOGL'] }).expect(202)).body);
    await complete(en.job_id);
    await post({ symbols: ['AAPL', 'GOOGL'], language: 'EN' }).expect(200);
    await post({ symbols: ['AAPL', 'GOOGL'], language: 'de' }).expect(202);
    await post({ symbols: ['GOOGL', 'AAPL'] }).expect(202);
    await post({ symbols: ['AAPL'] }).expect(202);
  });

  it("never answers one tenant's request that carried data with another tenant's result", async () => {
    const data = { recent_earnings: { TSLA: 'Q3 EPS 0.72, beat by 5%' } };
    const own = AsyncJobResponse.parse((await post({ symbols: ['TSLA'], data }, tenantA).expect(202)).body);
    const { rows } = await pool.query<{ cache_key: string }>('SELECT cache_key FROM jobs WHERE id = $1', [own.job_id]);
    expect(rows[0]!.cache_key).toContain(`:t:${tenantA}:`);
    await complete(own.job_id);

    // The same tenant with the same data: a hit.
    expect(StockReportResponse.parse((await post({ symbols: ['TSLA'], data }, tenantA).expect(200)).body).from_cache).toBe(true);
    // Another tenant with the very same request and data: a run of its own, never tenant A's result.
    const other = AsyncJobResponse.parse((await post({ symbols: ['TSLA'], data }, tenantB).expect(202)).body);
    expect(other.job_id).not.toBe(own.job_id);
    // Without data the request is another one: the shared (data-free) entry is not tenant A's either.
    await post({ symbols: ['TSLA'] }, tenantB).expect(202);
    await post({ symbols: ['TSLA'] }, tenantA).expect(202);
    // Other data of the same tenant is another entry.
    await post({ symbols: ['TSLA'], data: { recent_earnings: { TSLA: 'Q3 EPS 0.60, missed' } } }, tenantA).expect(202);
  });

  it('shares an in-flight report between identical requests, and replays an Idempotency-Key', async () => {
    const responses = await Promise.all(Array.from({ length: 5 }, () => post({ symbols: ['MSFT', 'GOOGL'] })));
    expect(new Set(responses.map((res) => (res.body as { job_id: string }).job_id)).size).toBe(1);
    const key = `report-${randomUUID()}`;
    const a = await post({ symbols: ['AMZN'] }, tenantA, { 'Idempotency-Key': key }).expect(202);
    const b = await post({ symbols: ['AMZN'] }, tenantA, { 'Idempotency-Key': key, 'Cache-Control': 'no-cache' }).expect(202);
    expect(AsyncJobResponse.parse(b.body).job_id).toBe(AsyncJobResponse.parse(a.body).job_id);
    expect(ErrorBody.parse((await post({ symbols: ['AAPL'] }, tenantA, { 'Idempotency-Key': key }).expect(422)).body).type).toBe(
      'unprocessable_entity',
    );
  });

  it.each([
    ['symbols', 'no symbols', { symbols: [] }],
    ['symbols', 'three symbols', { symbols: ['AAPL', 'MSFT', 'NVDA'] }],
    ['symbols', 'symbols as a string', { symbols: 'AAPL' }],
    ['symbols', 'no body fields', {}],
    ['language', 'an unknown language code', { symbols: ['AAPL'], language: 'xx' }],
    ['language', 'a locale instead of a language', { symbols: ['AAPL'], language: 'en-US' }],
    ['data', 'data as a string', { symbols: ['AAPL'], data: 'recent earnings were strong' }],
    ['data', 'data as an array', { symbols: ['AAPL'], data: [1, 2] }],
    ['data', 'data over 64 KiB', { symbols: ['AAPL'], data: { blob: 'x'.repeat(70 * 1024) } }],
    ['n', 'a field the product does not have', { symbols: ['AAPL'], n: 3 }],
  ])('answers 400 validation_error naming %s for %s', async (field, _case, body) => {
    const res = await post(body).expect(400);
    const error = ErrorBody.parse(res.body);
    expect(error).toMatchObject({ status_code: 400, type: 'validation_error' });
    expect(error.detail).toContain(field);
  });

  it('says how many symbols it got when there are three', async () => {
    const res = await post({ symbols: ['AAPL', 'MSFT', 'NVDA'] }).expect(400);
    expect(ErrorBody.parse(res.body).detail).toMatch(/symbols: .*got 3/);
  });

  it('refuses a request that did not come through the gateway', async () => {
    const res = await request(app)
      .post(PATH)
      .send({ symbols: ['AAPL'] })
      .expect(401);
    expect(ErrorBody.parse(res.body).type).toBe('unauthorized');
  });
});
