// Cache hits answered from memory: a warm hit makes no database query, yet is never served to another tenant,
// after its entry expires, or after a change the database would answer differently.
import { randomUUID } from 'node:crypto';
import { API_ROUTES } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { identityKey, signIdentity } from '@fin/http';
import { createLogger } from '@fin/log';
import { countingPool, createTestDatabase, waitFor, type CountingPool, type TestDatabase } from '@fin/testing';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { createCachedProductApp, createHotResults, describeCacheKey, type HotAnswer, type HotResults } from '../src';

const logger = createLogger({ service: 'hot-results-test', level: 'silent' });

describe('cache hits from memory', () => {
  let db: TestDatabase;
  let pool: Pool;
  let hot: HotResults;
  let tenantA: string;
  let tenantB: string;
  /** The product API's pool, counting the statements sent through it (the LISTEN connection is not the pool's). */
  let counting: CountingPool<Pool>;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'hot-results-test', max: 4 });
    const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('a'), ('b') RETURNING id");
    [tenantA, tenantB] = rows.map((row) => row.id) as [string, string];
    hot = createHotResults({ pool, logger, maxBytes: 1024 * 1024 });
    await waitFor(() => hot.listening, { what: 'the LISTEN connection' });
  });
  afterAll(async () => {
    await hot.close();
    await pool.end();
    await db.drop();
  });

  const SECRET = 'hot-results-test-secret-0123456789abcdef';
  let server: Server;
  let url: string;

  /**
   * A news API role's HTTP app over a pool that counts its statements (`counting`). Built from the product's parts
   * rather than a service's definition on purpose: the test holds the hot results itself (to wait for their
   * notifications), and only the handler's statements go through the counted pool (a unit's relay would poll it).
   */
  beforeAll(async () => {
    counting = countingPool(pool);
    const app = createCachedProductApp(
      {
        jobType: 'news',
        route: API_ROUTES.createNews,
        promptVersion: 'news@test',
        cacheKey: ({ data, ...parameters }) => ({ parameters, ...(data === undefined ? {} : { data }) }),
      },
      { pool: counting.pool, logger, signingSecret: SECRET, hotResults: hot },
    );
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  interface Answer {
    status: number;
    text: string;
    body: { job_id: string; status: string; from_cache: boolean };
    headers: Headers;
    /** Statements the request sent through the pool. */
    queries: number;
  }

  /** A news request of `tenantId`, signed as the gateway signs it. */
  async function ask(tenantId: string, symbol: string, headers: Record<string, string> = {}): Promise<Answer> {
    const path = '/api/products/news';
    const body = JSON.stringify({ symbols: [symbol], n: 3 });
    const caller = { tenantId, keyId: 'key', scopes: ['news'] };
    const identity = signIdentity({ requestId: randomUUID(), caller }, identityKey(SECRET, 'news'), { method: 'POST', path, body });
    const before = counting.queries;
    const response = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...identity, ...headers },
      body,
    });
    const text = await response.text();
    return {
      status: response.status,
      text,
      body: JSON.parse(text) as Answer['body'],
      headers: response.headers,
      queries: counting.queries - before,
    };
  }

  /**
   * Completes the job and fills the cache under its key, as the worker's completion does; resolves once the
   * entry's change notification has reached the copies, since a read that overlaps it is (rightly) not served from
   * memory and the tests' next requests count on being served.
   */
  async function complete(jobId: string, expiresIn = '7 days'): Promise<string> {
    const notified = hot.mark();
    const result = { news: [] };
    const { rows } = await pool.query<{ cache_key: string; tenant_id: string }>(
      "UPDATE jobs SET status = 'completed', progress = 100, result = $2, finished_at = now() WHERE id = $1 RETURNING cache_key, tenant_id",
      [jobId, JSON.stringify(result)],
    );
    const { cache_key: key, tenant_id: tenantId } = rows[0]!;
    await pool.query(
      `INSERT INTO result_cache (cache_key, job_type, tenant_id, job_id, result, expires_at) VALUES ($1, 'news', $2, $3, $4, now() + $5::interval)
       ON CONFLICT (cache_key) DO UPDATE SET job_id = EXCLUDED.job_id, result = EXCLUDED.result, created_at = now(), expires_at = EXCLUDED.expires_at`,
      [key, describeCacheKey(key).tenantScoped ? tenantId : null, jobId, JSON.stringify(result), expiresIn],
    );
    await waitFor(() => hot.mark() > notified, { what: 'the result_cache_changed notification' });
    return key;
  }

  /** A symbol with a completed, cached job behind it. */
  async function cached(expiresIn?: string): Promise<string> {
    const symbol = `S${randomUUID().slice(0, 6).toUpperCase()}`;
    const first = await ask(tenantA, symbol);
    expect(first.status).toBe(202);
    await complete(first.body.job_id, expiresIn);
    return symbol;
  }

  it('answers a warm hit without a database query, with the same body and headers', async () => {
    const symbol = await cached();
    const cold = await ask(tenantA, symbol);
    expect(cold.status).toBe(200);
    expect(cold.queries).toBeGreaterThan(0);
    const warm = await ask(tenantA, symbol);
    expect(warm.queries).toBe(0);
    expect(warm.status).toBe(200);
    expect(warm.text).toBe(cold.text);
    expect(warm.body).toMatchObject({ status: 'completed', from_cache: true });
    expect(warm.headers.get('cache-status')).toMatch(/^fin-api; hit; ttl=\d+$/);
    expect(warm.headers.get('age')).toMatch(/^\d+$/);
    expect(warm.headers.get('content-type')).toBe(cold.headers.get('content-type'));
  });

  it('never gives another tenant the copy: it is answered by the database, under a job of its own', async () => {
    const symbol = await cached();
    const a = await ask(tenantA, symbol);
    expect((await ask(tenantA, symbol)).queries).toBe(0);
    const b = await ask(tenantB, symbol);
    expect(b.queries).toBeGreaterThan(0);
    expect(b.status).toBe(200);
    expect(b.body.job_id).not.toBe(a.body.job_id);
    const { rows } = await pool.query('SELECT tenant_id FROM jobs WHERE id = $1', [b.body.job_id]);
    expect(rows[0]).toEqual({ tenant_id: tenantB });
  });

  it('does not serve a copy past its entry’s expiry', async () => {
    const symbol = await cached('1500 milliseconds');
    expect((await ask(tenantA, symbol)).status).toBe(200);
    expect((await ask(tenantA, symbol)).queries).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    const after = await ask(tenantA, symbol);
    expect(after.queries).toBeGreaterThan(0);
    expect(after.status).toBe(202);
  });

  it('asks the database again after a refresh replaced the entry, and serves the refreshed result', async () => {
    const symbol = await cached();
    await ask(tenantA, symbol);
    expect((await ask(tenantA, symbol)).queries).toBe(0);
    const refresh = await ask(tenantA, symbol, { 'Cache-Control': 'no-cache' });
    expect(refresh.status).toBe(202);
    const refreshJob = refresh.body.job_id;
    // Until the refresh completes the old entry is still what the database answers, and memory may answer it.
    expect((await ask(tenantA, symbol)).status).toBe(200);
    await complete(refreshJob);
    const after = await waitFor(
      async () => {
        const next = await ask(tenantA, symbol);
        return next.queries > 0 ? next : undefined;
      },
      { what: 'the notification of the new entry' },
    );
    expect(after.status).toBe(200);
    // The refresh filled the tenant's own entry, newer than the shared one: its result is the one answered.
    const { rows } = await pool.query('SELECT COALESCE(cached_from, id) AS source FROM jobs WHERE id = $1', [after.body.job_id]);
    expect(rows[0]).toEqual({ source: refreshJob });
  });

  it('asks the database again once the tenant’s customer tools change', async () => {
    const symbol = await cached();
    await ask(tenantA, symbol);
    expect((await ask(tenantA, symbol)).queries).toBe(0);
    await pool.query(
      `INSERT INTO customer_tools (tenant_id, name, description, endpoint, input_schema, products)
       VALUES ($1, $2, 'Our positions.', 'https://api.example.com/positions', '{"type":"object"}', '{news}')`,
      [tenantA, `positions_${randomUUID().slice(0, 8)}`],
    );
    // With a tool, the request is the tenant's own (a key with the tool set): a miss, which the database says.
    const after = await waitFor(
      async () => {
        const next = await ask(tenantA, symbol);
        return next.queries > 0 ? next : undefined;
      },
      { what: 'the notification of the tool change' },
    );
    expect(after.status).toBe(202);
    await pool.query('DELETE FROM customer_tools WHERE tenant_id = $1', [tenantA]);
  });

  it('keeps the copies within their byte budget, the least recently used going first', async () => {
    const small = createHotResults({ pool, logger, maxBytes: 3 * (512 + 1_000) });
    try {
      await waitFor(() => small.listening, { what: 'the LISTEN connection' });
      const answer = (n: number): HotAnswer => ({
        requestKey: `news:${'0'.repeat(31)}${n}:t:${tenantA}`,
        tenantId: tenantA,
        jobId: randomUUID(),
        sourceJobId: randomUUID(),
        producedAt: new Date(),
        expiresAt: new Date(Date.now() + 60_000),
        rest: Buffer.alloc(1_000, 'x'),
      });
      const answers = [answer(1), answer(2), answer(3), answer(4)];
      for (const held of answers.slice(0, 3)) small.remember(held, 60_000, performance.now(), small.mark());
      expect(small.servable(answers[0]!.requestKey)).toBeDefined();
      small.remember(answers[3]!, 60_000, performance.now(), small.mark());
      // The first was served last: the second was the least recently used.
      expect(answers.map(({ requestKey }) => small.servable(requestKey) !== undefined)).toEqual([true, false, true, true]);
      // One source's bytes are held once, however many copies name it.
      const shared = { ...answer(5), sourceJobId: answers[0]!.sourceJobId };
      small.remember(shared, 60_000, performance.now(), small.mark());
      expect(small.held(shared.requestKey)?.rest).toBe(answers[0]!.rest);
      expect(small.bytesOf(shared.sourceJobId)).toBe(answers[0]!.rest);
      // A read that started before a change is kept, but not served until the database confirms it.
      const mark = small.mark();
      await pool.query("SELECT pg_notify('result_cache_changed', 'news:unrelated')");
      await waitFor(() => small.mark() !== mark, { what: 'the notification' });
      small.remember(answer(6), 60_000, performance.now(), mark);
      expect(small.servable(answer(6).requestKey)).toBeUndefined();
    } finally {
      await small.close();
    }
  });
});
