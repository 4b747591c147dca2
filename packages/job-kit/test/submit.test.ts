import { randomUUID } from 'node:crypto';
import { createPool, type Pool } from '@fin/db';
import { AppError } from '@fin/http';
import { jobSubmissions } from '@fin/metrics';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { cacheKeyFor, submitJob, type SubmitParams } from '../src';

describe('submitJob', () => {
  let db: TestDatabase;
  let pool: Pool;
  let tenantA: string;
  let tenantB: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'submit-test', max: 12 });
    const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('a'), ('b') RETURNING id");
    [tenantA, tenantB] = rows.map((row) => row.id) as [string, string];
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  const request = { symbols: ['AAPL'], n: 5, language: 'en' };
  const params = (over: Partial<SubmitParams> = {}): SubmitParams => {
    const tenantId = over.tenantId ?? tenantA;
    return {
      tenantId,
      jobType: 'news',
      request,
      cacheKey: cacheKeyFor({ jobType: 'news', parameters: { ...request, v: over.cacheKey ?? 'x' }, tenantId }),
      ...over,
      ...(over.cacheKey ? { cacheKey: over.cacheKey } : {}),
    };
  };

  async function outboxCount(jobId: string): Promise<number> {
    const { rows } = await pool.query<{ n: string }>('SELECT count(*) AS n FROM outbox WHERE message_key = $1', [jobId]);
    return Number(rows[0]?.n);
  }

  async function complete(jobId: string, cacheKey: string, tenantScoped: string | null = null): Promise<void> {
    await pool.query("UPDATE jobs SET status = 'completed', progress = 100, result = $2, finished_at = now() WHERE id = $1", [
      jobId,
      JSON.stringify({ news: [] }),
    ]);
    await pool.query('INSERT INTO result_cache (cache_key, job_type, tenant_id, job_id, result) VALUES ($1, $2, $3, $4, $5)', [
      cacheKey,
      'news',
      tenantScoped,
      jobId,
      JSON.stringify({ news: [] }),
    ]);
  }

  it('creates a pending job and its request event in one go', async () => {
    const outcome = await submitJob(pool, params({ cacheKey: 'k-create' }));
    expect(outcome).toMatchObject({ kind: 'created', status: 'pending' });
    const { rows } = await pool.query('SELECT status, type, tenant_id FROM jobs WHERE id = $1', [outcome.jobId]);
    expect(rows[0]).toEqual({ status: 'pending', type: 'news', tenant_id: tenantA });
    expect(await outboxCount(outcome.jobId)).toBe(1);
  });

  it('lets ten identical concurrent requests share one job', async () => {
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => submitJob(pool, params({ cacheKey: 'k-burst' }))));
    const ids = new Set(outcomes.map((outcome) => outcome.jobId));
    expect(ids.size).toBe(1);
    expect(outcomes.filter((outcome) => outcome.kind === 'created')).toHaveLength(1);
    expect(await outboxCount([...ids][0]!)).toBe(1);
  });

  it('counts each submission by how it was answered, for the cache hit ratio', async () => {
    const counted = async (result: string) => (await jobSubmissions.get()).values.find((value) => value.labels.type === 'news' && value.labels.result === result)?.value ?? 0;
    const [created, joined, cached] = [await counted('created'), await counted('joined'), await counted('cached')];
    const first = await submitJob(pool, params({ cacheKey: 'k-metrics' }));
    await submitJob(pool, params({ cacheKey: 'k-metrics' }));
    await complete(first.jobId, 'k-metrics');
    await submitJob(pool, params({ cacheKey: 'k-metrics' }));
    expect([await counted('created'), await counted('joined'), await counted('cached')]).toEqual([created + 1, joined + 1, cached + 1]);
  });

  it('does not share an in-flight job across tenants', async () => {
    const a = await submitJob(pool, params({ cacheKey: 'k-tenants' }));
    const b = await submitJob(pool, params({ cacheKey: 'k-tenants', tenantId: tenantB }));
    expect(a.jobId).not.toBe(b.jobId);
  });

  it('answers a shared cache entry with a completed job of the caller’s own, reused on the next hit', async () => {
    const first = await submitJob(pool, params({ cacheKey: 'k-cache' }));
    await complete(first.jobId, 'k-cache');
    const hitA = await submitJob(pool, params({ cacheKey: 'k-cache' }));
    expect(hitA).toMatchObject({ kind: 'cached', result: { news: [] } });
    const hitB = await submitJob(pool, params({ cacheKey: 'k-cache', tenantId: tenantB }));
    expect(hitB.kind).toBe('cached');
    expect(hitB.jobId).not.toBe(first.jobId);
    const { rows } = await pool.query('SELECT tenant_id, status, cached_from FROM jobs WHERE id = $1', [hitB.jobId]);
    expect(rows[0]).toEqual({ tenant_id: tenantB, status: 'completed', cached_from: first.jobId });
    const again = await submitJob(pool, params({ cacheKey: 'k-cache', tenantId: tenantB }));
    expect(again.jobId).toBe(hitB.jobId);
  });

  it('never serves a tenant-scoped entry (custom data) to another tenant', async () => {
    const first = await submitJob(pool, params({ cacheKey: 'k-private' }));
    await complete(first.jobId, 'k-private', tenantA);
    expect((await submitJob(pool, params({ cacheKey: 'k-private' }))).kind).toBe('cached');
    expect((await submitJob(pool, params({ cacheKey: 'k-private', tenantId: tenantB }))).kind).toBe('created');
  });

  it('bypasses the cache on request, and ignores expired entries', async () => {
    const first = await submitJob(pool, params({ cacheKey: 'k-bypass' }));
    await complete(first.jobId, 'k-bypass');
    expect((await submitJob(pool, params({ cacheKey: 'k-bypass', bypassCache: true }))).kind).toBe('created');
    const second = await submitJob(pool, params({ cacheKey: 'k-expired' }));
    await complete(second.jobId, 'k-expired');
    await pool.query("UPDATE result_cache SET expires_at = now() - interval '1 second' WHERE cache_key = 'k-expired'");
    expect((await submitJob(pool, params({ cacheKey: 'k-expired' }))).kind).toBe('created');
  });

  it('returns the same job for a repeated Idempotency-Key, and 422 for a different body', async () => {
    const key = randomUUID();
    const first = await submitJob(pool, params({ cacheKey: 'k-idem', idempotencyKey: key }));
    const concurrent = await Promise.all(
      Array.from({ length: 5 }, () => submitJob(pool, params({ cacheKey: 'k-idem', idempotencyKey: key, bypassCache: true }))),
    );
    expect(first.kind).toBe('created');
    for (const outcome of concurrent) expect(outcome).toMatchObject({ kind: 'replayed', jobId: first.jobId });
    const different = submitJob(pool, { ...params({ cacheKey: 'k-idem', idempotencyKey: key }), request: { ...request, n: 6 } });
    await expect(different).rejects.toBeInstanceOf(AppError);
    await expect(different).rejects.toMatchObject({ status: 422, type: 'unprocessable_entity' });
    const otherTenant = await submitJob(pool, params({ cacheKey: 'k-idem', idempotencyKey: key, tenantId: tenantB }));
    expect(otherTenant.kind).toBe('created');
    expect(otherTenant.jobId).not.toBe(first.jobId);
  });
});

describe('cacheKeyFor', () => {
  it('depends on every parameter and, with custom data, on the tenant', () => {
    const base = { jobType: 'news', parameters: { symbols: ['AAPL', 'MSFT'], n: 5, language: 'en' }, tenantId: 't1' };
    expect(cacheKeyFor(base)).toBe(cacheKeyFor({ ...base, tenantId: 't2' }));
    expect(cacheKeyFor(base)).not.toBe(cacheKeyFor({ ...base, parameters: { ...base.parameters, n: 6 } }));
    expect(cacheKeyFor(base)).toBe(cacheKeyFor({ ...base, parameters: { language: 'en', n: 5, symbols: ['AAPL', 'MSFT'] } }));
    const withData = cacheKeyFor({ ...base, data: { eps: 1, q: 'Q3' } });
    expect(withData).toContain(':t:t1:');
    expect(withData).toBe(cacheKeyFor({ ...base, data: { q: 'Q3', eps: 1 } }));
    expect(withData).not.toBe(cacheKeyFor({ ...base, tenantId: 't2', data: { eps: 1, q: 'Q3' } }));
  });
});
