// callback_url on a news request: refused (400, no job made) for a private address or an account without a
// callback secret; otherwise left on the job the answer names, one per request even when requests share the job,
// never stored in the job's request (so neither the worker nor the cache key sees it), and not left on a cache hit.
import { randomUUID } from 'node:crypto';
import { AsyncJobResponse, ErrorBody } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { identityKey, signIdentity } from '@fin/http';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import request from 'supertest';
import { newsApi, SECRET, type NewsApi } from './support';

const PATH = '/api/products/news';

describe('callback_url on POST /api/products/news', () => {
  let db: TestDatabase;
  let pool: Pool;
  let tenantId: string;
  let api: NewsApi;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'news-callback-test', max: 5 });
    const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('a') RETURNING id");
    tenantId = rows[0]?.id ?? '';
    api = await newsApi(db.url, pool);
  });
  afterAll(async () => {
    await api.close();
    await pool.end();
    await db.drop();
  });

  function post(body: unknown) {
    const signed = signIdentity(
      { requestId: randomUUID(), caller: { tenantId, keyId: randomUUID(), scopes: ['news'] } },
      identityKey(SECRET, 'news'),
      { method: 'POST', path: PATH, body: JSON.stringify(body) },
    );
    return request(api.app)
      .post(PATH)
      .set(signed)
      .send(body as object);
  }
  const jobs = async () => Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM jobs')).rows[0]?.n);

  it('refuses a callback_url before any job is made: not https, a private address, or no callback secret yet', async () => {
    const cases: [string, string][] = [
      ['http://hooks.example.com/x', 'callback_url: must be an absolute https:// URL'],
      ['https://192.168.0.10/x', 'callback_url: 192.168.0.10 is not a public internet address'],
      ['https://localhost/x', 'callback_url: localhost is not a public internet address'],
      ['https://hooks.example.com/x', 'callback_url: this account has no callback secret yet'],
    ];
    for (const [url, detail] of cases) {
      const res = await post({ symbols: ['AAPL'], callback_url: url }).expect(400);
      expect(ErrorBody.parse(res.body).detail).toContain(detail);
    }
    expect(await jobs()).toBe(0);
  });

  it('leaves one callback per request on the job, outside the job request, and none on a cache hit', async () => {
    await pool.query("INSERT INTO webhook_callback_secrets (tenant_id, secret_ciphertext) VALUES ($1, '\\x00')", [tenantId]);
    const first = AsyncJobResponse.parse((await post({ symbols: ['MSFT'], callback_url: 'https://a.example.com/cb' }).expect(202)).body);
    // An identical request while the job runs shares it, with a callback of its own.
    const second = AsyncJobResponse.parse((await post({ symbols: ['MSFT'], callback_url: 'https://b.example.com/cb' }).expect(202)).body);
    expect(second.job_id).toBe(first.job_id);
    const { rows } = await pool.query<{ url: string }>('SELECT url FROM webhook_callbacks WHERE job_id = $1 ORDER BY url', [first.job_id]);
    expect(rows.map((row) => row.url)).toEqual(['https://a.example.com/cb', 'https://b.example.com/cb']);
    const job = await pool.query<{ request: unknown; cache_key: string }>('SELECT request, cache_key FROM jobs WHERE id = $1', [
      first.job_id,
    ]);
    expect(job.rows[0]?.request).toEqual({ symbols: ['MSFT'], n: 5, language: 'en', sort: 'relevance' });

    // Finished and cached: a request with a callback_url is now a 200 from the cache, with no callback left.
    await pool.query("UPDATE jobs SET status = 'completed', progress = 100, result = '{\"news\": []}', finished_at = now() WHERE id = $1", [
      first.job_id,
    ]);
    await pool.query("INSERT INTO result_cache (cache_key, job_type, job_id, result) VALUES ($1, 'news', $2, '{\"news\": []}')", [
      job.rows[0]?.cache_key,
      first.job_id,
    ]);
    await post({ symbols: ['MSFT'], callback_url: 'https://c.example.com/cb' }).expect(200);
    expect((await pool.query('SELECT 1 FROM webhook_callbacks')).rowCount).toBe(2);
    expect((await pool.query('SELECT 1 FROM webhook_deliveries')).rowCount).toBe(0);
  });
});
