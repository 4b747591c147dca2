// FinnhubProvider against the fake Finnhub server: real fetch, real HTTP, Finnhub's documented responses.
import { createServer } from 'node:net';
import { inspect } from 'node:util';
import { SAMPLE_MARKET_DATA, startFakeFinnhub, type FakeFinnhub } from '@fin/fakes';
import {
  CompanyNews,
  CompanyProfile,
  FinnhubProvider,
  KeyMetrics,
  MarketDataError,
  Quote,
  UnknownSymbolError,
} from '../../src/market-data';

import { createHttpFetch } from '../../src/transport';

// Every case runs over the platform's fetch (the default) and over the engine's node:http transport, which the
// engine hands the provider.
const transport = createHttpFetch();
afterAll(() => transport.close());

describe.each([
  ['the platform fetch', undefined],
  ['the node:http transport', transport.fetch],
] as const)('FinnhubProvider over %s', (_over, fetchImpl) => {
  const TOKEN = 'fh-secret-7f3a9c2e51';
  let finnhub: FakeFinnhub;
  let provider: FinnhubProvider;

  beforeAll(async () => {
    finnhub = await startFakeFinnhub({ token: TOKEN });
    provider = new FinnhubProvider({ fetch: fetchImpl, token: TOKEN, baseUrl: finnhub.apiBaseUrl, timeoutMs: 2_000 });
  });
  afterEach(() => finnhub.reset());
  afterAll(() => finnhub.close());

  /** Runs the call, expects a MarketDataError, and checks the key appears nowhere in it (message, stack, causes). */
  async function failure(call: Promise<unknown>): Promise<MarketDataError> {
    const error = await call.then(
      () => {
        throw new Error('expected the call to fail');
      },
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(MarketDataError);
    expect(String(error)).not.toContain(TOKEN);
    expect(inspect(error, { depth: 10 })).not.toContain(TOKEN);
    return error as MarketDataError;
  }

  describe('endpoints', () => {
    it('maps a quote, sending the key in the header and never in the URL', async () => {
      const quote = await provider.quote(' aapl ');
      const raw = SAMPLE_MARKET_DATA.symbols.AAPL!.quote;

      expect(Quote.parse(quote)).toEqual(quote);
      expect(quote).toEqual({
        symbol: 'AAPL',
        price: raw.c,
        change: raw.d,
        changePercent: raw.dp,
        open: raw.o,
        high: raw.h,
        low: raw.l,
        previousClose: raw.pc,
        asOf: '2026-11-20T21:00:00.000Z',
        provider: 'finnhub',
        sample: false,
      });
      expect(finnhub.requests).toEqual([
        expect.objectContaining({ endpoint: '/quote', query: { symbol: 'AAPL' }, tokenVia: 'header', status: 200 }),
      ]);
    });

    it('maps a company profile, turning millions into units', async () => {
      const profile = await provider.profile('MSFT');
      expect(CompanyProfile.parse(profile)).toEqual(profile);
      expect(profile).toMatchObject({
        symbol: 'MSFT',
        name: 'Microsoft Corp',
        country: 'US',
        currency: 'USD',
        industry: 'Technology',
        ipoDate: '1986-03-13',
        marketCap: 3_361_450_300_000,
        sharesOutstanding: 7_435_100_000,
        website: 'https://www.microsoft.com/',
        provider: 'finnhub',
        sample: false,
      });
    });

    it('maps key metrics with explicit units and the annual history newest first', async () => {
      const metrics = await provider.metrics('NVDA');
      expect(KeyMetrics.parse(metrics)).toEqual(metrics);
      expect(metrics).toMatchObject({
        symbol: 'NVDA',
        week52High: 195.6,
        peRatioTtm: 48.7,
        epsTtm: 3.85,
        revenueGrowthTtmYoyPercent: 62.4,
        netProfitMarginTtmPercent: 53.1,
        returnOnEquityTtmPercent: 104.2,
        debtToEquity: 0.09,
        beta: 1.74,
        marketCap: 4_562_830_500_000,
      });
      expect(metrics.annual.eps.map((point) => point.period)).toEqual(['2026-01-25', '2025-01-26', '2024-01-28']);
      // Finnhub's series hold fractions; ours are percentages like the TTM figures.
      expect(metrics.annual.netMarginPercent[0]).toEqual({ period: '2026-01-25', value: 55.85 });
      expect(finnhub.requests[0]?.query).toEqual({ symbol: 'NVDA', metric: 'all' });
    });

    it('maps company news for a window, newest first, capped at the limit', async () => {
      const news = await provider.companyNews('AAPL', { from: '2026-11-01', to: new Date('2026-11-20T12:00:00Z'), limit: 2 });
      expect(CompanyNews.parse(news)).toEqual(news);
      expect(news).toMatchObject({ symbol: 'AAPL', from: '2026-11-01', to: '2026-11-20', provider: 'finnhub', sample: false });
      expect(news.items).toHaveLength(2);
      expect(news.items[0]).toEqual({
        id: '136900001',
        headline: 'Apple services revenue sets another quarterly record as device sales hold steady',
        summary: expect.stringContaining('Subscription'),
        source: 'Sample Newswire',
        url: 'https://news.example.com/2026/11/19/apple-services-revenue-record-quarter',
        imageUrl: 'https://news.example.com/images/apple-services-revenue-record-quarter.jpg',
        publishedAt: '2026-11-19T14:30:00.000Z',
        category: 'company',
        relatedSymbols: ['AAPL'],
      });
      expect(news.items[0]!.publishedAt > news.items[1]!.publishedAt).toBe(true);
      expect(finnhub.requests[0]?.query).toEqual({ symbol: 'AAPL', from: '2026-11-01', to: '2026-11-20' });
    });

    it('drops news items that are malformed or link anywhere but http(s)', async () => {
      const good = SAMPLE_MARKET_DATA.symbols.TSLA!.news[0]!;
      finnhub.addFault({
        endpoint: '/company-news',
        body: JSON.stringify([
          good,
          { ...good, id: 2, url: 'javascript:alert(1)' },
          { headline: 'no url or date' },
          { ...good, id: 3, datetime: 0 },
        ]),
      });
      const news = await provider.companyNews('TSLA', { from: '2026-11-01', to: '2026-11-20' });
      expect(news.items.map((item) => item.id)).toEqual([String(good.id)]);
    });

    it('rejects malformed symbols and news windows before sending anything', async () => {
      expect((await failure(provider.quote('^GSPC'))).kind).toBe('invalid_request');
      expect((await failure(provider.companyNews('AAPL', { from: '2026-11-20', to: '2026-11-01' }))).kind).toBe('invalid_request');
      expect((await failure(provider.companyNews('AAPL', { from: 'last week', to: '2026-11-01' }))).kind).toBe('invalid_request');
      expect((await failure(provider.companyNews('AAPL', { from: '2026-11-01', to: '2026-11-20', limit: 500 }))).kind).toBe(
        'invalid_request',
      );
      expect(finnhub.requests).toHaveLength(0);
    });
  });

  describe('unknown symbols', () => {
    it.each([
      ['quote', () => provider.quote('ZZZZ')],
      ['profile', () => provider.profile('ZZZZ')],
      ['metrics', () => provider.metrics('ZZZZ')],
    ])('%s rejects with UnknownSymbolError instead of passing on zeros', async (_name, call) => {
      const error = await failure(call());
      expect(error).toBeInstanceOf(UnknownSymbolError);
      expect(error).toMatchObject({ kind: 'unknown_symbol', retryable: false, symbol: 'ZZZZ' });
    });

    it('company news is an empty list', async () => {
      const news = await provider.companyNews('ZZZZ', { from: '2026-11-01', to: '2026-11-20' });
      expect(news.items).toEqual([]);
    });
  });

  describe('failures', () => {
    it('maps 401 to unauthorized, not retryable, without the key in the error', async () => {
      const wrongKey = 'fh-wrong-key-000111';
      const other = new FinnhubProvider({ fetch: fetchImpl, token: wrongKey, baseUrl: finnhub.apiBaseUrl });
      const error = await failure(other.quote('AAPL'));
      expect(error).toMatchObject({ kind: 'unauthorized', status: 401, retryable: false, provider: 'finnhub' });
      expect(error.message).toContain('Invalid API key.');
      expect(error.message).not.toContain(wrongKey);
    });

    it('redacts the key if the server echoes it back', async () => {
      finnhub.addFault({ status: 401, body: JSON.stringify({ error: `Invalid API key ${TOKEN}.` }) });
      const error = await failure(provider.quote('AAPL'));
      expect(error.message).toContain('[redacted]');
    });

    it('maps 403 to forbidden', async () => {
      finnhub.addFault({ endpoint: '/stock/metric', status: 403 });
      expect(await failure(provider.metrics('AAPL'))).toMatchObject({ kind: 'forbidden', status: 403, retryable: false });
    });

    it('maps 429 to rate_limited, retryable, with the wait from X-Ratelimit-Reset', async () => {
      finnhub.addFault({ status: 429 });
      const error = await failure(provider.quote('AAPL'));
      expect(error).toMatchObject({ kind: 'rate_limited', status: 429, retryable: true });
      expect(error.retryAfterSeconds).toBeGreaterThanOrEqual(0);
      // The fake's window is a minute, its reset header rounded up to the next whole second.
      expect(error.retryAfterSeconds).toBeLessThanOrEqual(61);
      expect(error.message).toContain('API limit reached');
    });

    it('maps 5xx (JSON or an HTML edge page) to unavailable, retryable', async () => {
      finnhub.addFault({ status: 502, times: 1 });
      finnhub.addFault({ status: 500, times: 1 });
      expect(await failure(provider.quote('AAPL'))).toMatchObject({ kind: 'unavailable', status: 502, retryable: true });
      expect(await failure(provider.quote('AAPL'))).toMatchObject({ kind: 'unavailable', status: 500, retryable: true });
    });

    it('times out a hanging request, retryable', async () => {
      finnhub.addFault({ hang: true });
      const impatient = new FinnhubProvider({ fetch: fetchImpl, token: TOKEN, baseUrl: finnhub.apiBaseUrl, timeoutMs: 150 });
      const started = Date.now();
      const error = await failure(impatient.profile('AAPL'));
      expect(error).toMatchObject({ kind: 'timeout', retryable: true });
      expect(Date.now() - started).toBeLessThan(1_500);
    });

    it('stops when the caller aborts, not retryable', async () => {
      finnhub.addFault({ hang: true });
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      expect(await failure(provider.quote('AAPL', { signal: controller.signal }))).toMatchObject({ kind: 'aborted', retryable: false });
    });

    it('enforces the response-size cap, declared or streamed', async () => {
      const capped = new FinnhubProvider({ fetch: fetchImpl, token: TOKEN, baseUrl: finnhub.apiBaseUrl, maxResponseBytes: 10_000 });
      const big = JSON.stringify(Array.from({ length: 200 }, (_, index) => ({ ...SAMPLE_MARKET_DATA.symbols.AAPL!.news[0]!, id: index })));
      expect(big.length).toBeGreaterThan(10_000);
      const window = { from: '2026-11-01', to: '2026-11-20' };

      finnhub.addFault({ endpoint: '/company-news', body: big, times: 1 });
      expect(await failure(capped.companyNews('AAPL', window))).toMatchObject({ kind: 'response_too_large', retryable: false });

      finnhub.addFault({ endpoint: '/company-news', body: big, chunked: true, times: 1 });
      expect(await failure(capped.companyNews('AAPL', window))).toMatchObject({ kind: 'response_too_large' });

      // Under the cap, the same provider is fine.
      expect((await capped.companyNews('AAPL', window)).items.length).toBeGreaterThan(0);
    });

    it('refuses a redirect: the key is never sent on to another address', async () => {
      finnhub.addFault({ status: 302, times: 1 });
      expect(await failure(provider.quote('AAPL'))).toMatchObject({ kind: 'connection' });
      expect(finnhub.requests).toHaveLength(1);
    });

    it('maps a body that is not JSON, or not the documented shape, to invalid_response', async () => {
      finnhub.addFault({ endpoint: '/quote', body: '{"c": 1', times: 1 });
      expect(await failure(provider.quote('AAPL'))).toMatchObject({ kind: 'invalid_response', retryable: false });
      finnhub.addFault({ endpoint: '/quote', body: '{"c": "a lot"}', times: 1 });
      expect(await failure(provider.quote('AAPL'))).toMatchObject({ kind: 'invalid_response' });
    });

    it('maps an unreachable API to connection, retryable', async () => {
      const port = await new Promise<number>((resolve) => {
        const probe = createServer().listen(0, '127.0.0.1', () => {
          const address = probe.address();
          probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
        });
      });
      const unreachable = new FinnhubProvider({ fetch: fetchImpl, token: TOKEN, baseUrl: `http://127.0.0.1:${port}/api/v1` });
      expect(await failure(unreachable.quote('AAPL'))).toMatchObject({ kind: 'connection', retryable: true });
    });
  });
});
