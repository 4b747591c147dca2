import { randomUUID } from 'node:crypto';
import { AsyncJobResponse, ErrorBody, NewsResponse } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { identityKey, signIdentity } from '@fin/http';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import request from 'supertest';
import { newsApi, SECRET, type NewsApi } from './support';

const PATH = '/api/products/news';

describe('POST /api/products/news (API role)', () => {
  let db: TestDatabase;
  let pool: Pool;
  let tenantA: string;
  let tenantB: string;
  let api: NewsApi;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'news-app-test', max: 5 });
    const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('a'), ('b') RETURNING id");
    [tenantA, tenantB] = rows.map((row) => row.id) as [string, string];
    api = await newsApi(db.url, pool);
  });
  afterAll(async () => {
    await api.close();
    await pool.end();
    await db.drop();
  });

  function post(body: unknown, tenantId = tenantA, headers: Record<string, string> = {}) {
    const signed = signIdentity(
      { requestId: randomUUID(), caller: { tenantId, keyId: randomUUID(), scopes: ['news'] } },
      identityKey(SECRET, 'news'),
      { method: 'POST', path: PATH, body: typeof body === 'string' ? body : JSON.stringify(body) },
    );
    return request(api.app)
      .post(PATH)
      .set(signed)
      .set(headers)
      .send(body as object);
  }

  async function completeWithCache(jobId: string, news: unknown[]): Promise<void> {
    const { rows } = await pool.query<{ cache_key: string }>(
      "UPDATE jobs SET status = 'completed', progress = 100, result = $2, finished_at = now() WHERE id = $1 RETURNING cache_key",
      [jobId, JSON.stringify({ news })],
    );
    await pool.query("INSERT INTO result_cache (cache_key, job_type, job_id, result) VALUES ($1, 'news', $2, $3)", [
      rows[0]!.cache_key,
      jobId,
      JSON.stringify({ news }),
    ]);
  }

  it('accepts a new request with 202 and the job envelope', async () => {
    const res = await post({ symbols: ['aapl', 'MSFT'], n: 3 }).expect(202);
    const envelope = AsyncJobResponse.parse(res.body);
    expect(envelope.status_url).toBe(`/api/jobs/news/${envelope.job_id}/status`);
    expect(res.headers.location).toBe(envelope.status_url);
    expect(res.headers['cache-status']).toBe('fin-api; fwd=miss');
    const { rows } = await pool.query<{ request: unknown }>('SELECT request FROM jobs WHERE id = $1', [envelope.job_id]);
    expect(rows[0]?.request).toEqual({ symbols: ['AAPL', 'MSFT'], n: 3, language: 'en', sort: 'relevance' });
  });

  it('answers a cached result at once with 200, from_cache, Cache-Status and Age — also for another tenant', async () => {
    const first = AsyncJobResponse.parse((await post({ symbols: ['NVDA'] }).expect(202)).body);
    const item = { title: 'T', content: 'C', sources: ['https://news.example.com/a'], further_reading: [], relevance_score: 0.9 };
    await completeWithCache(first.job_id, [item]);
    // Symbol order and case do not matter to the cache.
    const res = await post({ symbols: ['nvda'] }, tenantB).expect(200);
    const body = NewsResponse.parse(res.body);
    expect(body).toMatchObject({ status: 'completed', from_cache: true, news: [item] });
    expect(body.job_id).not.toBe(first.job_id);
    expect(res.headers['cache-status']).toMatch(/^fin-api; hit; ttl=\d+$/);
    expect(Number(res.headers.age)).toBeGreaterThanOrEqual(0);
    // The same cached result served again (validated once, then reused): each tenant still gets a job of its own.
    const forA = NewsResponse.parse((await post({ symbols: ['NVDA'] }, tenantA).expect(200)).body);
    const againForB = NewsResponse.parse((await post({ symbols: ['NVDA'] }, tenantB).expect(200)).body);
    expect(forA).toEqual({ ...body, job_id: forA.job_id });
    expect(forA.job_id).not.toBe(body.job_id);
    expect(againForB).toEqual(body);
    // Bypassing the cache starts a fresh run.
    const fresh = await post({ symbols: ['NVDA'] }, tenantB, { 'Cache-Control': 'no-cache' }).expect(202);
    expect(fresh.headers['cache-status']).toBe('fin-api; fwd=bypass');
  });

  it('shares an in-flight job between identical requests', async () => {
    const responses = await Promise.all(Array.from({ length: 10 }, () => post({ symbols: ['TSLA'], n: 2 })));
    expect(new Set(responses.map((res) => (res.body as { job_id: string }).job_id)).size).toBe(1);
    expect(responses.filter((res) => String(res.headers['cache-status']).includes('collapsed'))).toHaveLength(9);
  });

  it('honours Idempotency-Key: same job for the same body, 422 for another', async () => {
    const key = `order-${randomUUID()}`;
    const a = await post({ symbols: ['GOOGL'] }, tenantA, { 'Idempotency-Key': key }).expect(202);
    const b = await post({ symbols: ['GOOGL'] }, tenantA, { 'Idempotency-Key': key, 'Cache-Control': 'no-cache' }).expect(202);
    expect(AsyncJobResponse.parse(b.body).job_id).toBe(AsyncJobResponse.parse(a.body).job_id);
    const c = await post({ symbols: ['AMZN'] }, tenantA, { 'Idempotency-Key': key }).expect(422);
    expect(ErrorBody.parse(c.body).type).toBe('unprocessable_entity');
    await post({ symbols: ['GOOGL'] }, tenantA, { 'Idempotency-Key': 'bad key with spaces' }).expect(400);
  });

  it.each([
    [{ symbols: [] }, 'symbols'],
    [{ symbols: Array.from({ length: 11 }, (_, i) => `S${i}`) }, 'symbols'],
    [{ symbols: ['^GSPC'] }, 'symbols'],
    [{ symbols: ['A..B'] }, 'symbols'],
    [{ symbols: ['AAPL', 'no spaces'] }, 'symbols'],
    [{ symbols: ['AAPL'], n: 0 }, 'n'],
    [{ symbols: ['AAPL'], n: 21 }, 'n'],
    [{ symbols: ['AAPL'], language: 'xx' }, 'language'],
    [{ symbols: 'AAPL' }, 'symbols'],
    [{ symbols: ['AAPL'], colour: 'red' }, 'colour'],
    [{}, 'symbols'],
  ])('rejects %j with a 400 naming %s', async (body, field) => {
    const res = await post(body).expect(400);
    const error = ErrorBody.parse(res.body);
    expect(error.type).toBe('validation_error');
    expect(error.detail).toContain(field);
  });

  it('refuses a request that did not come through the gateway', async () => {
    const res = await request(api.app)
      .post(PATH)
      .send({ symbols: ['AAPL'] })
      .expect(401);
    expect(ErrorBody.parse(res.body).type).toBe('unauthorized');
  });
});
