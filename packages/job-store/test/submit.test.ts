import { randomUUID } from 'node:crypto';
import { createPool, type Pool } from '@fin/db';
import { AppError } from '@fin/http';
import { jobSubmissions } from '@fin/metrics';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { cacheKeysFor, describeCacheKey, submitJob, withToolSet, type SubmitOutcome, type SubmitParams } from '../src';

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
  /** A news submission; `key` names the request (its parameters), so each test has keys of its own. */
  const params = ({
    key = 'x',
    data,
    ...over
  }: Partial<SubmitParams> & { key?: string; data?: Record<string, unknown> } = {}): SubmitParams => {
    const tenantId = over.tenantId ?? tenantA;
    return {
      tenantId,
      jobType: 'news',
      request,
      cacheKeys: cacheKeysFor({ jobType: 'news', parameters: { ...request, v: key }, tenantId, ...(data ? { data } : {}) }),
      ...over,
    };
  };

  /** An outcome with a cached result parsed (a hit carries it as the database's JSON text). */
  const served = (outcome: SubmitOutcome) =>
    outcome.kind === 'cached' ? { ...outcome, result: JSON.parse(outcome.resultJson ?? 'null') as unknown } : outcome;

  async function outboxCount(jobId: string): Promise<number> {
    const { rows } = await pool.query<{ n: string }>('SELECT count(*) AS n FROM outbox WHERE message_key = $1', [jobId]);
    return Number(rows[0]?.n);
  }

  /** Completes a job and fills the cache under the job's key, as the jobs service does for a matching run. */
  async function complete(jobId: string, result: Record<string, unknown> = { news: [] }): Promise<string> {
    const { rows } = await pool.query<{ cache_key: string; tenant_id: string }>(
      "UPDATE jobs SET status = 'completed', progress = 100, result = $2, finished_at = now() WHERE id = $1 RETURNING cache_key, tenant_id",
      [jobId, JSON.stringify(result)],
    );
    const { cache_key: key, tenant_id: tenantId } = rows[0]!;
    await pool.query('INSERT INTO result_cache (cache_key, job_type, tenant_id, job_id, result) VALUES ($1, $2, $3, $4, $5)', [
      key,
      'news',
      describeCacheKey(key).tenantScoped ? tenantId : null,
      jobId,
      JSON.stringify(result),
    ]);
    return key;
  }

  async function addTool(tenantId: string, name: string, products = ['news']): Promise<string> {
    const { rows } = await pool.query<{ id: string }>(
      `INSERT INTO customer_tools (tenant_id, name, description, endpoint, input_schema, products)
       VALUES ($1, $2, 'Looks up our positions.', 'https://api.example.com/positions', '{"type":"object"}', $3) RETURNING id`,
      [tenantId, name, products],
    );
    return rows[0]!.id;
  }

  it('creates a pending job and its request event in one go', async () => {
    const outcome = await submitJob(pool, params({ key: 'k-create' }));
    expect(outcome).toMatchObject({ kind: 'created', status: 'pending' });
    const { rows } = await pool.query('SELECT status, type, tenant_id FROM jobs WHERE id = $1', [outcome.jobId]);
    expect(rows[0]).toEqual({ status: 'pending', type: 'news', tenant_id: tenantA });
    expect(await outboxCount(outcome.jobId)).toBe(1);
    // The event names the job; the request (custom data included) stays in Postgres, where the worker reads it.
    const { rows: events } = await pool.query<{ payload: Record<string, unknown> }>(
      "SELECT envelope->'payload' AS payload FROM outbox WHERE message_key = $1",
      [outcome.jobId],
    );
    expect(events[0]!.payload).toEqual({ job_id: outcome.jobId, job_type: 'news', tenant_id: tenantA, attempt: 1 });
  });

  /** `pool` with every statement sent through it recorded (name and parameters), to see what a submission sends. */
  function recording(): { pool: Pool; sent: { name: string | undefined; values: unknown[] }[] } {
    const sent: { name: string | undefined; values: unknown[] }[] = [];
    const query = (config: { name?: string; values?: unknown[] }) => {
      sent.push({ name: config.name, values: config.values ?? [] });
      return pool.query(config as never) as Promise<unknown>;
    };
    const watched = new Proxy(pool, {
      get: (target, property): unknown => (property === 'query' ? query : (Reflect.get(target, property) as unknown)),
    });
    return { pool: watched, sent };
  }

  async function outboxTotal(): Promise<number> {
    const { rows } = await pool.query<{ n: string }>('SELECT count(*) AS n FROM outbox');
    return Number(rows[0]?.n);
  }

  it('answers a hit in one statement that carries no event and writes no outbox row', async () => {
    const first = await submitJob(pool, params({ key: 'k-no-event' }));
    await complete(first.jobId);
    const before = await outboxTotal();
    for (const tenantId of [tenantA, tenantB, tenantB]) {
      const { pool: watched, sent } = recording();
      expect((await submitJob(watched, params({ key: 'k-no-event', tenantId }))).kind).toBe('cached');
      expect(sent).toHaveLength(1);
      // No envelope was built for it: none of the statement's parameters is one.
      expect(sent[0]!.values.some((value) => typeof value === 'string' && value.includes('"job.requested"'))).toBe(false);
    }
    expect(await outboxTotal()).toBe(before);
  });

  it('builds the event of a miss and sends it with the statement that creates the job', async () => {
    const { pool: watched, sent } = recording();
    const outcome = await submitJob(watched, params({ key: 'k-miss-event' }));
    expect(outcome.kind).toBe('created');
    const carrying = sent.filter(({ values }) => values.some((value) => typeof value === 'string' && value.includes('"job.requested"')));
    expect(carrying).toHaveLength(1);
    expect(await outboxCount(outcome.jobId)).toBe(1);
  });

  it('lets ten identical concurrent requests share one job', async () => {
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => submitJob(pool, params({ key: 'k-burst' }))));
    const ids = new Set(outcomes.map((outcome) => outcome.jobId));
    expect(ids.size).toBe(1);
    expect(outcomes.filter((outcome) => outcome.kind === 'created')).toHaveLength(1);
    expect(await outboxCount([...ids][0]!)).toBe(1);
  });

  it('counts each submission by how it was answered, for the cache hit ratio', async () => {
    const counted = async (result: string) =>
      (await jobSubmissions.get()).values.find((value) => value.labels.type === 'news' && value.labels.result === result)?.value ?? 0;
    const [created, joined, cached] = [await counted('created'), await counted('joined'), await counted('cached')];
    const first = await submitJob(pool, params({ key: 'k-metrics' }));
    await submitJob(pool, params({ key: 'k-metrics' }));
    await complete(first.jobId);
    await submitJob(pool, params({ key: 'k-metrics' }));
    expect([await counted('created'), await counted('joined'), await counted('cached')]).toEqual([created + 1, joined + 1, cached + 1]);
  });

  it('leaves out the result of a hit on the source the caller already holds, and only that one', async () => {
    const first = await submitJob(pool, params({ key: 'k-held' }));
    await complete(first.jobId, { news: [{ title: 'held' }] });
    const sent = await submitJob(pool, params({ key: 'k-held', heldResult: randomUUID() }));
    expect(sent).toMatchObject({ kind: 'cached', sourceJobId: first.jobId, resultJson: '{"news": [{"title": "held"}]}' });
    const held = await submitJob(pool, params({ key: 'k-held', heldResult: first.jobId }));
    expect(held).toEqual({ ...sent, resultJson: undefined, expiresAt: expect.any(Date) as Date, ttlMs: expect.any(Number) as number });
    expect(held).not.toHaveProperty('resultJson');
    // Another tenant holding the same source still gets a job of its own.
    const other = await submitJob(pool, params({ key: 'k-held', tenantId: tenantB, heldResult: first.jobId }));
    expect(other).toMatchObject({ kind: 'cached', sourceJobId: first.jobId });
    expect(other.jobId).not.toBe(held.jobId);
  });

  it('does not share an in-flight job across tenants', async () => {
    const a = await submitJob(pool, params({ key: 'k-tenants' }));
    const b = await submitJob(pool, params({ key: 'k-tenants', tenantId: tenantB }));
    expect(a.jobId).not.toBe(b.jobId);
  });

  it('answers a shared cache entry with a completed job of the caller’s own, reused on the next hit', async () => {
    const first = await submitJob(pool, params({ key: 'k-cache' }));
    await complete(first.jobId);
    const hitA = await submitJob(pool, params({ key: 'k-cache' }));
    expect(served(hitA)).toMatchObject({ kind: 'cached', result: { news: [] } });
    const hitB = await submitJob(pool, params({ key: 'k-cache', tenantId: tenantB }));
    expect(hitB.kind).toBe('cached');
    expect(hitB.jobId).not.toBe(first.jobId);
    const { rows } = await pool.query('SELECT tenant_id, status, cached_from FROM jobs WHERE id = $1', [hitB.jobId]);
    expect(rows[0]).toEqual({ tenant_id: tenantB, status: 'completed', cached_from: first.jobId });
    const again = await submitJob(pool, params({ key: 'k-cache', tenantId: tenantB }));
    expect(again.jobId).toBe(hitB.jobId);
  });

  it('never serves a tenant-scoped entry (custom data) to another tenant', async () => {
    const data = { holdings: ['AAPL'] };
    const first = await submitJob(pool, params({ key: 'k-private', data }));
    expect(await complete(first.jobId)).toContain(`:t:${tenantA}:d:`);
    expect((await submitJob(pool, params({ key: 'k-private', data }))).kind).toBe('cached');
    expect((await submitJob(pool, params({ key: 'k-private', data, tenantId: tenantB }))).kind).toBe('created');
  });

  it('bypasses the cache on request, and ignores expired entries', async () => {
    const first = await submitJob(pool, params({ key: 'k-bypass' }));
    await complete(first.jobId);
    expect((await submitJob(pool, params({ key: 'k-bypass', bypassCache: true }))).kind).toBe('created');
    const second = await submitJob(pool, params({ key: 'k-expired' }));
    const expired = await complete(second.jobId);
    await pool.query("UPDATE result_cache SET expires_at = now() - interval '1 second' WHERE cache_key = $1", [expired]);
    expect((await submitJob(pool, params({ key: 'k-expired' }))).kind).toBe('created');
  });

  it('returns the same job for a repeated Idempotency-Key, and 422 for a different body', async () => {
    const key = randomUUID();
    const first = await submitJob(pool, params({ key: 'k-idem', idempotencyKey: key }));
    const concurrent = await Promise.all(
      Array.from({ length: 5 }, () => submitJob(pool, params({ key: 'k-idem', idempotencyKey: key, bypassCache: true }))),
    );
    expect(first.kind).toBe('created');
    for (const outcome of concurrent) expect(outcome).toMatchObject({ kind: 'replayed', jobId: first.jobId });
    const different = submitJob(pool, { ...params({ key: 'k-idem', idempotencyKey: key }), request: { ...request, n: 6 } });
    await expect(different).rejects.toBeInstanceOf(AppError);
    await expect(different).rejects.toMatchObject({ status: 422, type: 'unprocessable_entity' });
    const otherTenant = await submitJob(pool, params({ key: 'k-idem', idempotencyKey: key, tenantId: tenantB }));
    expect(otherTenant.kind).toBe('created');
    expect(otherTenant.jobId).not.toBe(first.jobId);
  });
  it('files a request of a tenant with customer tools under that tenant and that tool set, never a shared key', async () => {
    const tenantC = (await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('c') RETURNING id")).rows[0]!.id;
    // A result produced without tools is in the cache for everyone.
    const plain = await submitJob(pool, params({ key: 'k-tools', tenantId: tenantB }));
    await complete(plain.jobId, { news: ['plain'] });
    // C registers a tool: its request is not served the shared entry (its tools would not have been offered).
    const tool = await addTool(tenantC, 'positions');
    const first = await submitJob(pool, params({ key: 'k-tools', tenantId: tenantC }));
    expect(first.kind).toBe('created');
    const key = await complete(first.jobId, { news: ['with C tools'] });
    const digest = (await pool.query<{ d: string }>("SELECT customer_tool_set_digest($1, 'news') AS d", [tenantC])).rows[0]!.d;
    expect(key).toBe(
      withToolSet(cacheKeysFor({ jobType: 'news', parameters: { ...request, v: 'k-tools' }, tenantId: tenantC }).own, digest),
    );
    expect(describeCacheKey(key)).toEqual({ tenantScoped: true, toolSet: digest });
    // C gets its own result back; B, and any other tenant, still get the shared one.
    expect(served(await submitJob(pool, params({ key: 'k-tools', tenantId: tenantC })))).toMatchObject({
      kind: 'cached',
      result: { news: ['with C tools'] },
    });
    expect(served(await submitJob(pool, params({ key: 'k-tools', tenantId: tenantB })))).toMatchObject({
      kind: 'cached',
      result: { news: ['plain'] },
    });
    expect(served(await submitJob(pool, params({ key: 'k-tools', tenantId: tenantA })))).toMatchObject({
      kind: 'cached',
      result: { news: ['plain'] },
    });
    // A changed tool is another tool set: the entry made with the old one is not served.
    await pool.query("UPDATE customer_tools SET description = 'Now also returns cash.', updated_at = now() WHERE id = $1", [tool]);
    expect((await submitJob(pool, params({ key: 'k-tools', tenantId: tenantC }))).kind).toBe('created');
  });

  it('offers only tools that allow the product: a tool for chat alone leaves news requests shared', async () => {
    const tenantD = (await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('d') RETURNING id")).rows[0]!.id;
    await addTool(tenantD, 'chat_only', ['chat']);
    const first = await submitJob(pool, params({ key: 'k-chat-tool', tenantId: tenantD }));
    expect(describeCacheKey(await complete(first.jobId))).toEqual({ tenantScoped: false, toolSet: null });
    expect((await submitJob(pool, params({ key: 'k-chat-tool', tenantId: tenantB }))).kind).toBe('cached');
  });

  it('refreshes only the caller’s own entry on no-cache, leaving what other tenants are served alone', async () => {
    const first = await submitJob(pool, params({ key: 'k-refresh', tenantId: tenantB }));
    await complete(first.jobId, { news: ['old'] });
    const refresh = await submitJob(pool, params({ key: 'k-refresh', bypassCache: true }));
    expect(refresh.kind).toBe('created');
    expect(describeCacheKey(await complete(refresh.jobId, { news: ['fresh'] }))).toEqual({ tenantScoped: true, toolSet: null });
    expect(served(await submitJob(pool, params({ key: 'k-refresh' })))).toMatchObject({ kind: 'cached', result: { news: ['fresh'] } });
    expect(served(await submitJob(pool, params({ key: 'k-refresh', tenantId: tenantB })))).toMatchObject({
      kind: 'cached',
      result: { news: ['old'] },
    });
  });

  it('past a spent budget answers a hit, a job in flight and a replay, and refuses only what needs a new job', async () => {
    const refusal = new AppError('rate_limit_exceeded', 'Daily token budget used.');
    const jobsOf = async (tenantId: string) =>
      Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM jobs WHERE tenant_id = $1', [tenantId])).rows[0]?.n);
    const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('spent') RETURNING id");
    const tenantId = rows[0]!.id;
    const before = await jobsOf(tenantId);
    // Nothing answers it: refused, and nothing is written (no job, no event).
    await expect(submitJob(pool, params({ tenantId, key: 'k-spent-miss', newWorkRefusal: refusal }))).rejects.toBe(refusal);
    await expect(
      submitJob(pool, params({ tenantId, key: 'k-spent-miss', newWorkRefusal: refusal, idempotencyKey: 'spent-1' })),
    ).rejects.toBe(refusal);
    // Without cache keys (an analysis) too.
    await expect(submitJob(pool, { tenantId, jobType: 'analysis', request: { prompt: 'p' }, newWorkRefusal: refusal })).rejects.toBe(
      refusal,
    );
    expect(await jobsOf(tenantId)).toBe(before);
    const { rows: keys } = await pool.query('SELECT 1 FROM idempotency_keys WHERE tenant_id = $1', [tenantId]);
    expect(keys).toHaveLength(0);

    // A job of the tenant in flight is joined; once done, its result is a hit.
    const running = await submitJob(pool, params({ tenantId, key: 'k-spent-hit' }));
    expect(await submitJob(pool, params({ tenantId, key: 'k-spent-hit', newWorkRefusal: refusal }))).toMatchObject({
      kind: 'joined',
      jobId: running.jobId,
    });
    await complete(running.jobId, { news: [{ title: 'cached' }] });
    expect(served(await submitJob(pool, params({ tenantId, key: 'k-spent-hit', newWorkRefusal: refusal })))).toMatchObject({
      kind: 'cached',
      sourceJobId: running.jobId,
      result: { news: [{ title: 'cached' }] },
    });
    // ...but a fresh run (no-cache) of it is new work.
    await expect(submitJob(pool, params({ tenantId, key: 'k-spent-hit', bypassCache: true, newWorkRefusal: refusal }))).rejects.toBe(
      refusal,
    );
    // An Idempotency-Key used before the budget was spent replays its job.
    const first = await submitJob(pool, { tenantId, jobType: 'analysis', request: { prompt: 'q' }, idempotencyKey: 'spent-2' });
    expect(
      await submitJob(pool, {
        tenantId,
        jobType: 'analysis',
        request: { prompt: 'q' },
        idempotencyKey: 'spent-2',
        newWorkRefusal: refusal,
      }),
    ).toMatchObject({ kind: 'replayed', jobId: first.jobId });
  });

  it('serves a hit for a request with an Idempotency-Key on the transaction’s own connection', async () => {
    const first = await submitJob(pool, params({ key: 'k-idem-hit' }));
    await complete(first.jobId);
    // With one connection, a lookup through the pool while the transaction holds it could never get one (the
    // submission would wait until the test's time limit).
    const single = createPool({ connectionString: db.url, applicationName: 'submit-test-single', max: 1 });
    try {
      const hit = await submitJob(single, params({ key: 'k-idem-hit', idempotencyKey: randomUUID() }));
      expect(hit.kind).toBe('cached');
      const { rows } = await pool.query('SELECT job_id FROM idempotency_keys WHERE job_id = $1', [hit.jobId]);
      expect(rows).toHaveLength(1);
    } finally {
      await single.end();
    }
  });
});

describe('cacheKeysFor', () => {
  it('depends on every parameter and, for the own key and with custom data, on the tenant', () => {
    const base = { jobType: 'news', parameters: { symbols: ['AAPL', 'MSFT'], n: 5, language: 'en' }, tenantId: 't1' };
    expect(cacheKeysFor(base).shared).toBe(cacheKeysFor({ ...base, tenantId: 't2' }).shared);
    expect(cacheKeysFor(base).own).not.toBe(cacheKeysFor({ ...base, tenantId: 't2' }).own);
    expect(cacheKeysFor(base).shared).not.toBe(cacheKeysFor({ ...base, parameters: { ...base.parameters, n: 6 } }).shared);
    expect(cacheKeysFor(base)).toEqual(cacheKeysFor({ ...base, parameters: { language: 'en', n: 5, symbols: ['AAPL', 'MSFT'] } }));
    const withData = cacheKeysFor({ ...base, data: { eps: 1, q: 'Q3' } });
    expect(withData.shared).toBeUndefined();
    expect(withData.own).toContain(':t:t1:d:');
    expect(withData).toEqual(cacheKeysFor({ ...base, data: { q: 'Q3', eps: 1 } }));
    expect(withData.own).not.toBe(cacheKeysFor({ ...base, tenantId: 't2', data: { eps: 1, q: 'Q3' } }).own);
  });

  it('reads back whose entry a key is and which tool set made it', () => {
    const keys = cacheKeysFor({ jobType: 'news', parameters: { n: 5 }, tenantId: 't1' });
    expect(describeCacheKey(keys.shared!)).toEqual({ tenantScoped: false, toolSet: null });
    expect(describeCacheKey(keys.own)).toEqual({ tenantScoped: true, toolSet: null });
    expect(describeCacheKey(withToolSet(keys.own, 'abc123'))).toEqual({ tenantScoped: true, toolSet: 'abc123' });
  });
});
