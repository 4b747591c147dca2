import { offlineAnalyst } from '@fin/ai';
import { AsyncJobResponse, JobResultResponse, JobStatusResponse, NewsResponse, NewsResult } from '@fin/contracts';
import { startFakeAnthropic, startFakeFinnhub, type FakeAnthropic, type FakeFinnhub } from '@fin/fakes';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { UPSTREAM_MODES, sharedEnv, startSystem, type ServiceProcess, type System } from '../src/system';

/**
 * The first request that travels the whole system: gateway → news API → outbox → Kafka → news worker → job
 * events on Kafka → jobs service → client, every service a process of its own (http upstream) or every service a
 * unit of npm start's one process (in-process upstream).
 */
describe.each(UPSTREAM_MODES)('news through the whole system (%s upstream)', (upstream) => {
  let db: TestDatabase;
  let claude: FakeAnthropic;
  let finnhub: FakeFinnhub;
  let system: System;
  let gatewayUrl: string;
  let worker: ServiceProcess;
  let keyA: string;
  let keyB: string;
  /** Symbols whose model turns are held back until released, to catch a job mid-run. */
  const held = new Map<string, Promise<void>>();

  beforeAll(async () => {
    db = await createTestDatabase();
    const analyst = offlineAnalyst();
    claude = await startFakeAnthropic({
      handler: async (request, context) => {
        const text = JSON.stringify(request.body.messages);
        for (const [symbol, gate] of held) if (text.includes(symbol)) await gate;
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
    // Short lease and Kafka session, so a killed worker's job moves on within seconds. No drain time: a stopped worker
    // hands its job back at once (the drain itself is the fault suite's worker-drain test).
    system = await startSystem(
      env,
      { NEWS_LEASE_MS: '2000', KAFKA_SESSION_TIMEOUT_MS: '6000', WORKER_DRAIN_TIMEOUT_MS: '0' },
      { upstream },
    );
    gatewayUrl = system.gatewayUrl;
    if (upstream === 'http') worker = system.services.find((service) => service.name === 'news-worker')!;
    keyA = system.tenantKey('acme');
    keyB = system.tenantKey('globex');
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([claude?.close(), finnhub?.close()]);
    await db?.drop();
  });

  function api(path: string, init: RequestInit & { key?: string } = {}) {
    const { key = keyA, ...rest } = init;
    return fetch(`${gatewayUrl}${path}`, {
      ...rest,
      headers: { 'Content-Type': 'application/json', 'X-API-Key': key, ...(rest.headers as Record<string, string>) },
    });
  }

  async function postNews(body: unknown, key = keyA) {
    const res = await api('/api/products/news', { method: 'POST', body: JSON.stringify(body), key });
    return { res, body: await res.json() };
  }

  async function pollUntilFinished(
    statusUrl: string,
    seen: JobStatusResponse[] = [],
    key = keyA,
    timeoutMs = 30_000,
  ): Promise<JobStatusResponse> {
    return waitFor(
      async () => {
        const status = JobStatusResponse.parse(await (await api(statusUrl, { key })).json());
        if (seen.at(-1)?.progress !== status.progress || seen.at(-1)?.status !== status.status) seen.push(status);
        return (status.status === 'completed' || status.status === 'failed') && status;
      },
      { timeoutMs, intervalMs: 50, what: `job at ${statusUrl} to finish` },
    );
  }

  it('accepts with 202, walks pending → running → completed with rising progress, and serves spec-valid news', async () => {
    let release!: () => void;
    held.set('MSFT', new Promise<void>((resolve) => (release = resolve)));
    const { res, body } = await postNews({ symbols: ['AAPL', 'MSFT'], n: 4 });
    expect(res.status).toBe(202);
    const envelope = AsyncJobResponse.parse(body);

    const seen: JobStatusResponse[] = [];
    const first = JobStatusResponse.parse(await (await api(envelope.status_url)).json());
    seen.push(first);
    expect(['pending', 'running']).toContain(first.status);
    // While the model is held, the status shows the step being worked on.
    const working = await waitFor(async () => {
      const status = JobStatusResponse.parse(await (await api(envelope.status_url)).json());
      return status.status === 'running' && /news/i.test(status.currently_working_on) && status;
    });
    seen.push(working);
    const early = await api(envelope.result_url);
    expect(early.status).toBe(409);
    expect(early.headers.get('retry-after')).toBe('2');
    held.delete('MSFT');
    release();

    const final = await pollUntilFinished(envelope.status_url, seen);
    expect(final).toMatchObject({ status: 'completed', progress: 100 });
    const progress = seen.map((status) => status.progress);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));

    const result = JobResultResponse.parse(await (await api(envelope.result_url)).json());
    const news = NewsResult.parse(result.result);
    expect(news.news).toHaveLength(4);
    const scores = news.news.map((item) => item.relevance_score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    for (const item of news.news) for (const url of item.sources) expect(url).toMatch(/^https:\/\/news\.example\.com\//);
  });

  it('answers the same request again at once from the cache', async () => {
    const { res, body } = await postNews({ symbols: ['msft', 'aapl'], n: 4 });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-status')).toMatch(/hit/);
    const cached = NewsResponse.parse(body);
    expect(cached.from_cache).toBe(true);
    expect(cached.news).toHaveLength(4);
    // Its job id is the caller's own and can be polled.
    const status = JobStatusResponse.parse(await (await api(`/api/jobs/news/${cached.job_id}/status`)).json());
    expect(status.status).toBe('completed');
  });

  it('refuses a revoked key within moments, though its hit is answered from memory, and still answers other keys', async () => {
    const request = { symbols: ['msft', 'aapl'], n: 4 };
    const revoked = system.tenantKey('initech');
    // Warm: the first hit is the database's, the next ones the product API's copy.
    for (let i = 0; i < 3; i++) expect((await postNews(request, revoked)).res.status).toBe(200);
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query("UPDATE api_keys SET revoked_at = now() WHERE tenant_id = (SELECT id FROM tenants WHERE name = 'initech')");
    } finally {
      await client.end();
    }
    const revokedAt = Date.now();
    // The gateway's key cache is evicted by the api_key_changed notification (docs/gateway.md): well within 2 s.
    const refused = await waitFor(
      async () => {
        const { res, body } = await postNews(request, revoked);
        return res.status === 401 ? body : undefined;
      },
      { timeoutMs: 2_000, intervalMs: 20, what: 'the revoked key refused' },
    );
    expect(Date.now() - revokedAt).toBeLessThan(2_000);
    expect(refused).toMatchObject({ status_code: 401, type: 'unauthorized' });
    expect((await postNews(request)).res.status).toBe(200);
  });

  it('runs the model once for ten identical concurrent requests', async () => {
    const before = claude.requests.filter((request) => JSON.stringify(request.body).includes('GOOGL')).length;
    const responses = await Promise.all(Array.from({ length: 10 }, () => postNews({ symbols: ['GOOGL'], n: 2 })));
    const ids = new Set(responses.map(({ body }) => (body as { job_id: string }).job_id));
    expect(ids.size).toBe(1);
    await pollUntilFinished(`/api/jobs/news/${[...ids][0]}/status`);
    const runs = claude.requests.filter((request) => JSON.stringify(request.body).includes('GOOGL')).length - before;
    // One run = the analyst's two turns (tool call, then answer).
    expect(runs).toBe(2);
  });

  it('hides a job from another tenant behind the same 404 as a missing one', async () => {
    const { body } = await postNews({ symbols: ['AMZN'], n: 1 });
    const jobId = (body as { job_id: string }).job_id;
    const other = await api(`/api/jobs/news/${jobId}/status`, { key: keyB });
    const missing = await api('/api/jobs/news/00000000-0000-4000-8000-000000000000/status', { key: keyB });
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual(await missing.json());
  });

  it('rejects out-of-bounds requests with a 400 naming the field', async () => {
    for (const [body, field] of [
      [{ symbols: [] }, 'symbols'],
      [{ symbols: ['AAPL'], n: 21 }, 'n'],
      [{ symbols: ['AAPL'], language: 'xx' }, 'language'],
    ] as const) {
      const { res, body: error } = await postNews(body);
      expect(res.status).toBe(400);
      expect(error).toMatchObject({ status_code: 400, type: 'validation_error', detail: expect.stringContaining(field) });
    }
  });

  // A worker process of its own to kill or stop: as deployed only (in npm start, the worker is the one process).
  if (upstream === 'http') {
    it('finishes a job whose worker was killed with SIGKILL mid-run', async () => {
      let release!: () => void;
      held.set('NVDA', new Promise<void>((resolve) => (release = resolve)));
      const { body } = await postNews({ symbols: ['NVDA'], n: 2 });
      const statusUrl = AsyncJobResponse.parse(body).status_url;
      await waitFor(async () => {
        const { rows } = await withDb((client) =>
          client.query<{ lease_owner: string | null }>('SELECT lease_owner FROM jobs WHERE id = $1', [AsyncJobResponse.parse(body).job_id]),
        );
        return rows[0]?.lease_owner != null;
      });
      await worker.stop('SIGKILL');
      held.delete('NVDA');
      release();
      worker = system.startWorker();
      // The dead worker's partitions move to the new one once its Kafka session times out (6 s here).
      const final = await pollUntilFinished(statusUrl, [], keyA, 45_000);
      expect(final.status).toBe('completed');
      const { rows } = await withDb((client) =>
        client.query<{ attempts: number }>('SELECT attempts FROM jobs WHERE id = $1', [AsyncJobResponse.parse(body).job_id]),
      );
      expect(rows[0]?.attempts).toBe(2);
    });

    it('with no drain time, hands a job back when its worker is stopped with SIGTERM mid-run, and another worker finishes it', async () => {
      let release!: () => void;
      held.set('AMD', new Promise<void>((resolve) => (release = resolve)));
      const { body } = await postNews({ symbols: ['AMD'], n: 2 });
      const { job_id: jobId, status_url: statusUrl } = AsyncJobResponse.parse(body);
      await waitFor(async () => {
        const { rows } = await withDb((client) =>
          client.query<{ lease_owner: string | null }>('SELECT lease_owner FROM jobs WHERE id = $1', [jobId]),
        );
        return rows[0]?.lease_owner != null;
      });
      const stopping = worker;
      await stopping.stop('SIGTERM');
      // A clean exit, and the lease released at once rather than left to expire.
      expect(stopping.child.exitCode).toBe(0);
      const { rows: released } = await withDb((client) =>
        client.query<{ lease_owner: string | null; status: string }>('SELECT lease_owner, status FROM jobs WHERE id = $1', [jobId]),
      );
      expect(released[0]).toMatchObject({ lease_owner: null });
      expect(['pending', 'running']).toContain(released[0]?.status);
      held.delete('AMD');
      release();
      worker = system.startWorker();
      const final = await pollUntilFinished(statusUrl, [], keyA, 45_000);
      expect(final.status).toBe('completed');
    });
  }

  async function withDb<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client(db.url);
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  }
});
