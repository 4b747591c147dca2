// News that traders can use (issue 30), checked by a client nobody here wrote: Ajv validates the results against the
// OpenAPI document the gateway serves. Items carry their publication time (inside the requested range), the
// topics they are about and a sentiment per requested symbol; bad ranges, topics and domains are 400s naming the
// field; the cache keeps requests apart that differ only in these fields. Offline analyst over the sample data.
import { offlineAnalyst } from '@fin/ai';
import { AsyncJobResponse, JobStatusResponse, NEWS_TOPICS, SENTIMENT_LABELS, sentimentLabel } from '@fin/contracts';
import { startFakeAnthropic, startFakeFinnhub, type FakeAnthropic, type FakeFinnhub } from '@fin/fakes';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { Ajv2020 } from 'ajv/dist/2020';
import { sharedEnv, startSystem, type System } from '../src/system';

interface Item {
  published_at: string | null;
  topics: string[];
  tickers: Array<{ symbol: string; relevance_score: number; sentiment_score: number; sentiment_label: string; reasoning: string }>;
  sources: string[];
}

describe('news with publication times, topics and sentiment (in-process upstream)', () => {
  let db: TestDatabase;
  let claude: FakeAnthropic;
  let finnhub: FakeFinnhub;
  let system: System;
  let key: string;

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
    system = await startSystem(env, {}, { upstream: 'in-process' });
    key = system.tenantKey('acme');
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([claude?.close(), finnhub?.close()]);
    await db?.drop();
  });

  function api(path: string, init: RequestInit = {}) {
    return fetch(`${system.gatewayUrl}${path}`, { ...init, headers: { 'Content-Type': 'application/json', 'X-API-Key': key } });
  }

  async function postNews(body: unknown) {
    const res = await api('/api/products/news', { method: 'POST', body: JSON.stringify(body) });
    return { res, body: await res.json() };
  }

  async function resultOf(body: unknown): Promise<{ result: unknown; response: unknown }> {
    const { res, body: accepted } = await postNews(body);
    expect(res.status).toBe(202);
    const envelope = AsyncJobResponse.parse(accepted);
    await waitFor(
      async () => {
        const status = JobStatusResponse.parse(await (await api(envelope.status_url)).json());
        if (status.status === 'failed') throw new Error(`the news job failed: ${JSON.stringify(status)}`);
        return status.status === 'completed';
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'the news job to complete' },
    );
    const response = (await (await api(envelope.result_url)).json()) as { result: unknown };
    return { result: response.result, response };
  }

  const window = { time_from: '2026-10-01T00:00:00Z', time_to: '2026-11-21T00:00:00Z' };

  it('gives items inside the requested range, with topics and per-symbol sentiment, valid against the served OpenAPI', async () => {
    const document = (await (await api('/api/openapi.json')).json()) as Record<string, unknown>;
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    ajv.addSchema(document, 'openapi');
    const validate = ajv.getSchema('openapi#/components/schemas/NewsJobResultResponse');
    if (!validate) throw new Error('the served OpenAPI has no NewsJobResultResponse');

    const { result, response } = await resultOf({ symbols: ['AAPL', 'MSFT'], n: 6, ...window, sort: 'latest' });
    expect(validate(response)).toBe(true);
    const { news, ticker_sentiment } = result as {
      news: Item[];
      ticker_sentiment: Array<{ symbol: string; sentiment_score: number; sentiment_label: string; items: number }>;
    };
    expect(news.length).toBeGreaterThan(0);
    for (const item of news) {
      expect(item.published_at).not.toBeNull();
      const published = Date.parse(item.published_at as string);
      expect(published).toBeGreaterThanOrEqual(Date.parse(window.time_from));
      expect(published).toBeLessThanOrEqual(Date.parse(window.time_to));
      expect(item.topics.length).toBeGreaterThan(0);
      for (const topic of item.topics) expect(NEWS_TOPICS).toContain(topic);
      expect(item.tickers.length).toBeGreaterThan(0);
      for (const ticker of item.tickers) {
        expect(['AAPL', 'MSFT']).toContain(ticker.symbol);
        expect(ticker.relevance_score).toBeGreaterThanOrEqual(0);
        expect(ticker.relevance_score).toBeLessThanOrEqual(1);
        expect(ticker.sentiment_score).toBeGreaterThanOrEqual(-1);
        expect(ticker.sentiment_score).toBeLessThanOrEqual(1);
        expect(SENTIMENT_LABELS).toContain(ticker.sentiment_label);
        expect(ticker.sentiment_label).toBe(sentimentLabel(ticker.sentiment_score));
        expect(ticker.reasoning.length).toBeGreaterThan(10);
      }
    }
    // Newest first, as asked.
    const times = news.map((item) => Date.parse(item.published_at as string));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    // The per-symbol summary counts the items that concern each symbol.
    for (const summary of ticker_sentiment) {
      expect(summary.items).toBe(news.filter((item) => item.tickers.some((ticker) => ticker.symbol === summary.symbol)).length);
      expect(summary.sentiment_label).toBe(sentimentLabel(summary.sentiment_score));
    }
  });

  it('keeps only items about the requested topics', async () => {
    const { result } = await resultOf({ symbols: ['AAPL', 'MSFT'], n: 4, ...window, topics: ['technology'] });
    const { news } = result as { news: Item[] };
    for (const item of news) expect(item.topics).toContain('technology');
  });

  it('honours source lists: excluding the only source there is leaves no item', async () => {
    const { result } = await resultOf({ symbols: ['AAPL'], n: 3, sources: { exclude: ['news.example.com'] } });
    expect((result as { news: Item[] }).news).toEqual([]);
    const { result: kept } = await resultOf({ symbols: ['AAPL'], n: 3, sources: { include: ['example.com'] } });
    for (const item of (kept as { news: Item[] }).news)
      for (const url of item.sources) expect(new URL(url).hostname).toMatch(/(^|\.)example\.com$/);
  });

  it('rejects bad ranges, topics and domains with a 400 naming the field', async () => {
    const future = new Date(Date.now() + 2 * 24 * 60 * 60_000).toISOString();
    for (const [body, field] of [
      [{ symbols: ['AAPL'], time_from: '2026-11-20T00:00:00Z', time_to: '2026-11-01T00:00:00Z' }, 'time_from'],
      [{ symbols: ['AAPL'], time_to: future }, 'time_to'],
      [{ symbols: ['AAPL'], time_from: '2026-01-01T00:00:00Z', time_to: '2026-11-01T00:00:00Z' }, 'time_from'],
      [{ symbols: ['AAPL'], time_from: 'last tuesday' }, 'time_from'],
      [{ symbols: ['AAPL'], topics: ['gossip'] }, 'topics[0]'],
      [{ symbols: ['AAPL'], sort: 'oldest' }, 'sort'],
      [{ symbols: ['AAPL'], sources: { include: ['https://reuters.com/markets'] } }, 'sources.include[0]'],
      [{ symbols: ['AAPL'], sources: { include: ['reuters.com'], exclude: ['x.com'] } }, 'sources'],
      [{ symbols: ['AAPL'], sources: { exclude: Array.from({ length: 21 }, (_, index) => `site${index}.com`) } }, 'sources.exclude'],
    ] as const) {
      const { res, body: error } = await postNews(body);
      expect(res.status).toBe(400);
      expect(error).toMatchObject({ status_code: 400, type: 'validation_error', detail: expect.stringContaining(field) });
    }
  });

  it('caches requests apart that differ only in range, topics, order or sources', async () => {
    const base = { symbols: ['NVDA'], n: 2, ...window };
    await resultOf(base);
    expect((await postNews(base)).res.status).toBe(200);
    for (const variant of [
      { ...base, time_from: '2026-10-02T00:00:00Z' },
      { ...base, topics: ['earnings'] },
      { ...base, sort: 'latest' },
      { ...base, sources: { exclude: ['example-blog.com'] } },
    ]) {
      const { res } = await postNews(variant);
      expect(res.status).toBe(202);
    }
    // A topic list in another order is the same request.
    await resultOf({ ...base, topics: ['earnings', 'technology'] });
    expect((await postNews({ ...base, topics: ['technology', 'earnings'] })).res.status).toBe(200);
  });
});
