// The fake Finnhub speaks Finnhub's documented wire format; the adapter's own tests live in packages/ai.
import { SAMPLE_MARKET_DATA, startFakeFinnhub, type FakeFinnhub } from '../src';

const TOKEN = 'fake-finnhub-token';
let finnhub: FakeFinnhub;

beforeAll(async () => {
  finnhub = await startFakeFinnhub({ token: TOKEN });
});
afterEach(() => finnhub.reset());
afterAll(() => finnhub.close());

async function get(
  path: string,
  init: { token?: string | null; signal?: AbortSignal } = {},
): Promise<{ status: number; body: unknown; headers: Headers }> {
  const token = init.token === undefined ? TOKEN : init.token;
  const response = await fetch(`${finnhub.apiBaseUrl}${path}`, { headers: token ? { 'X-Finnhub-Token': token } : {}, signal: init.signal });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not every Finnhub error body is JSON.
  }
  return { status: response.status, body, headers: response.headers };
}

describe('authentication', () => {
  it('refuses a request without a key and one with a wrong key, as Finnhub words it', async () => {
    expect(await get('/quote?symbol=AAPL', { token: null })).toMatchObject({ status: 401, body: { error: 'Please use an API key.' } });
    expect(await get('/quote?symbol=AAPL', { token: 'nope' })).toMatchObject({ status: 401, body: { error: 'Invalid API key.' } });
  });

  it('accepts the key as a query parameter and records where it came from', async () => {
    const response = await get(`/quote?symbol=AAPL&token=${TOKEN}`, { token: null });
    expect(response.status).toBe(200);
    expect(finnhub.requests.at(-1)).toMatchObject({ endpoint: '/quote', tokenVia: 'query', status: 200 });
  });
});

describe('endpoints', () => {
  it('serves a quote from the sample dataset with rate-limit headers', async () => {
    const { status, body, headers } = await get('/quote?symbol=NVDA');
    expect(status).toBe(200);
    expect(body).toEqual(SAMPLE_MARKET_DATA.symbols.NVDA!.quote);
    expect(headers.get('x-ratelimit-limit')).toBe('60');
    expect(Number(headers.get('x-ratelimit-remaining'))).toBeLessThan(60);
  });

  it('answers unknown symbols the way Finnhub does: zeros, an empty profile, empty metrics, no news', async () => {
    expect((await get('/quote?symbol=ZZZZ')).body).toEqual({ c: 0, d: null, dp: null, h: 0, l: 0, o: 0, pc: 0, t: 0 });
    expect((await get('/stock/profile2?symbol=ZZZZ')).body).toEqual({});
    expect((await get('/stock/metric?symbol=ZZZZ&metric=all')).body).toEqual({ metric: {}, metricType: 'all', series: {}, symbol: 'ZZZZ' });
    expect((await get('/company-news?symbol=ZZZZ&from=2026-01-01&to=2026-12-31')).body).toEqual([]);
  });

  it('is case-sensitive about symbols, like Finnhub', async () => {
    expect((await get('/quote?symbol=aapl')).body).toMatchObject({ c: 0, t: 0 });
  });

  it('filters company news by the from/to dates (inclusive, UTC) and sorts newest first', async () => {
    const { body } = await get('/company-news?symbol=AAPL&from=2026-11-17&to=2026-11-19');
    const items = body as Array<{ datetime: number; url: string }>;
    expect(items.map((item) => item.url)).toEqual([
      'https://news.example.com/2026/11/19/apple-services-revenue-record-quarter',
      'https://news.example.com/2026/11/17/apple-on-device-ai-rollout',
    ]);
    expect(await get('/company-news?symbol=AAPL&from=yesterday&to=2026-11-19')).toMatchObject({ status: 422 });
  });

  it('refuses premium endpoints with 403 and unknown paths with 404', async () => {
    expect(await get('/stock/price-target?symbol=AAPL')).toMatchObject({
      status: 403,
      body: { error: "You don't have access to this resource." },
    });
    expect(await get('/nothing-here?symbol=AAPL')).toMatchObject({ status: 404, body: '404 page not found' });
  });
});

describe('faults', () => {
  it('answers a scripted 429 with Finnhub body, for as many requests as asked', async () => {
    finnhub.addFault({ endpoint: '/quote', status: 429, times: 1 });
    expect(await get('/quote?symbol=AAPL')).toMatchObject({
      status: 429,
      body: { error: 'API limit reached. Please try again later. Remaining Limit: 0' },
    });
    expect((await get('/quote?symbol=AAPL')).status).toBe(200);
  });

  it('limits requests per minute when configured', async () => {
    const limited = await startFakeFinnhub({ token: TOKEN, rateLimitPerMinute: 2 });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await fetch(`${limited.apiBaseUrl}/quote?symbol=AAPL&token=${TOKEN}`)).status);
      expect(statuses).toEqual([200, 200, 429]);
    } finally {
      await limited.close();
    }
  });

  it('hangs until the client gives up, and only for the matching symbol', async () => {
    finnhub.addFault({ symbol: 'TSLA', hang: true });
    await expect(get('/quote?symbol=TSLA', { signal: AbortSignal.timeout(150) })).rejects.toThrow(/abort|timeout/i);
    expect((await get('/quote?symbol=MSFT')).status).toBe(200);
  });

  it('sends a raw body, chunked without content-length when asked', async () => {
    finnhub.addFault({ endpoint: '/company-news', body: '[' + '"x",'.repeat(1000) + '"x"]', chunked: true });
    const response = await fetch(`${finnhub.apiBaseUrl}/company-news?symbol=AAPL&from=2026-11-01&to=2026-11-20&token=${TOKEN}`);
    expect(response.headers.get('content-length')).toBeNull();
    expect(((await response.json()) as unknown[]).length).toBe(1001);
  });
});

describe('SAMPLE_MARKET_DATA', () => {
  const entries = Object.entries(SAMPLE_MARKET_DATA.symbols);

  it('is labelled as sample data with an as-of date', () => {
    expect(SAMPLE_MARKET_DATA.sample).toBe(true);
    expect(SAMPLE_MARKET_DATA.as_of).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(SAMPLE_MARKET_DATA.disclaimer).toMatch(/sample/i);
    expect(entries.map(([symbol]) => symbol).sort()).toEqual(['AAPL', 'AMZN', 'GOOGL', 'MSFT', 'NVDA', 'TSLA']);
  });

  it('is internally consistent: tickers, changes, news links and dates', () => {
    const asOfEnd = Date.parse(`${SAMPLE_MARKET_DATA.as_of}T23:59:59Z`) / 1000;
    for (const [symbol, data] of entries) {
      expect(data.profile.ticker).toBe(symbol);
      expect(data.metrics.symbol).toBe(symbol);
      expect(data.quote.d).toBeCloseTo(data.quote.c - data.quote.pc, 2);
      expect(data.quote.l).toBeLessThanOrEqual(Math.min(data.quote.c, data.quote.o));
      expect(data.quote.h).toBeGreaterThanOrEqual(Math.max(data.quote.c, data.quote.o));
      expect(data.news.length).toBeGreaterThanOrEqual(3);
      for (const item of data.news) {
        expect(item.url).toMatch(/^https:\/\/news\.example\.com\//);
        expect(item.related).toBe(symbol);
        expect(item.datetime).toBeLessThanOrEqual(asOfEnd);
      }
    }
  });
});
