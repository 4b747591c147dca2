// The offline provider: the bundled sample through the same normaliser as the live adapter, marked as sample.
import { SAMPLE_MARKET_DATA, startFakeFinnhub } from '@fin/fakes';
import {
  CompanyNews,
  CompanyProfile,
  FinnhubProvider,
  KeyMetrics,
  Quote,
  SampleMarketDataProvider,
  UnknownSymbolError,
} from '../../src/market-data';

const sample = new SampleMarketDataProvider();
const window = { from: '2020-01-01', to: '2020-01-31' };

/** Quote, profile, metrics and news of `symbol`, each checked against its contract and marked as sample. */
async function everythingAbout(symbol: string) {
  const [quote, profile, metrics, news] = await Promise.all([
    sample.quote(symbol),
    sample.profile(symbol),
    sample.metrics(symbol),
    sample.companyNews(symbol, window),
  ]);
  for (const result of [Quote.parse(quote), CompanyProfile.parse(profile), KeyMetrics.parse(metrics), CompanyNews.parse(news)]) {
    expect(result).toMatchObject({ symbol, provider: 'sample', sample: true });
  }
  return { quote, profile, metrics, news };
}

describe('SampleMarketDataProvider', () => {
  it('covers the six sample symbols with contract-valid results marked as sample', async () => {
    expect(sample.symbols.sort()).toEqual(['AAPL', 'AMZN', 'GOOGL', 'MSFT', 'NVDA', 'TSLA']);
    expect(sample.asOf).toBe(SAMPLE_MARKET_DATA.as_of);
    for (const symbol of sample.symbols) {
      const { news } = await everythingAbout(symbol);
      expect(news.items.length).toBeGreaterThan(0);
    }
  });

  it('returns the snapshot news whatever the window, newest first', async () => {
    const news = await sample.companyNews('tsla', { ...window, limit: 2 });
    expect(news).toMatchObject({ symbol: 'TSLA', from: window.from, to: window.to });
    expect(news.items.map((item) => item.publishedAt)).toEqual(['2026-11-20T12:45:00.000Z', '2026-11-18T16:20:00.000Z']);
  });

  it('invents contract-valid sample data for any well-formed symbol outside the dataset, the same on every call', async () => {
    const other = new SampleMarketDataProvider();
    for (const symbol of ['META', 'ZZZZ', '7203.T', 'BRK.B']) {
      const { quote, profile, metrics, news } = await everythingAbout(symbol);
      // Nothing that passes for a real company's site or a real article.
      expect(profile.name).toMatch(new RegExp(`^${symbol.replace('.', '\\.')} `));
      expect(profile.website).toBeNull();
      for (const item of news.items) {
        expect(item.url).toMatch(/^https:\/\/news\.example\.com\/\d{4}\/\d{2}\/\d{2}\//);
        expect(item.source).toBe('Sample Newswire');
      }
      // Figures that hang together: EPS from price and P/E, 52-week range around the price, ordered margins.
      expect(metrics.epsTtm!).toBeCloseTo(quote.price / metrics.peRatioTtm!, 1);
      expect(metrics.week52Low!).toBeLessThan(quote.price);
      expect(metrics.week52High!).toBeGreaterThan(quote.price);
      expect(metrics.grossMarginTtmPercent!).toBeGreaterThan(metrics.netProfitMarginTtmPercent!);
      expect(quote.low).toBeLessThanOrEqual(Math.min(quote.open, quote.price));
      expect(quote.high).toBeGreaterThanOrEqual(Math.max(quote.open, quote.price));
      expect(profile.marketCap).toBe(metrics.marketCap);
      expect(await other.quote(symbol)).toEqual(quote);
      expect(await other.profile(symbol)).toEqual(profile);
      expect(await other.metrics(symbol)).toEqual(metrics);
      expect(await other.companyNews(symbol, window)).toEqual(news);
    }
    const [meta, zzzz] = await Promise.all([sample.profile('META'), sample.profile('ZZZZ')]);
    expect(meta.name).not.toBe(zzzz.name);
    expect((await sample.quote('META')).price).not.toBe((await sample.quote('ZZZZ')).price);
    const headlines = async (symbol: string) =>
      (await sample.companyNews(symbol, window)).items.map((item) => item.headline.replace(symbol, ''));
    expect(await headlines('META')).not.toEqual(await headlines('ZZZZ'));
  });

  it('returns exactly `limit` news items: the snapshot first, then older invented ones, the first k whatever the limit', async () => {
    const bundled = await sample.companyNews('NVDA', { ...window, limit: 3 });
    for (const [symbol, limit] of [
      ['NVDA', 10],
      ['NVDA', 4],
      ['META', 5],
      ['ZZZZ', 50],
    ] as const) {
      const news = await sample.companyNews(symbol, { ...window, limit });
      expect(news.items).toHaveLength(limit);
      expect(news.items.map((item) => item.publishedAt)).toEqual(
        news.items
          .map((item) => item.publishedAt)
          .sort()
          .reverse(),
      );
      for (const key of ['id', 'url', 'headline'] as const) expect(new Set(news.items.map((item) => item[key])).size).toBe(limit);
      if (symbol === 'NVDA') expect(news.items.slice(0, 3)).toEqual(bundled.items);
    }
    const ten = await sample.companyNews('ZZZZ', { ...window, limit: 10 });
    expect((await sample.companyNews('zzzz', { ...window, limit: 4 })).items).toEqual(ten.items.slice(0, 4));
  });

  it('still refuses malformed symbols, and says unknown symbol only when there is no company to invent from', async () => {
    await expect(sample.quote('^GSPC')).rejects.toMatchObject({ kind: 'invalid_request', provider: 'sample' });
    await expect(sample.companyNews('A..B', window)).rejects.toMatchObject({ kind: 'invalid_request' });
    const empty = new SampleMarketDataProvider({ ...SAMPLE_MARKET_DATA, symbols: {} });
    await expect(empty.quote('ZZZZ')).rejects.toBeInstanceOf(UnknownSymbolError);
    await expect(empty.metrics('IBM')).rejects.toMatchObject({ kind: 'unknown_symbol', retryable: false, provider: 'sample' });
    expect((await empty.companyNews('ZZZZ', window)).items).toEqual([]);
  });

  it('yields the same figures as the live adapter reading the same data, bar the provenance', async () => {
    const finnhub = await startFakeFinnhub({ token: 't' });
    try {
      const live = new FinnhubProvider({ token: 't', baseUrl: finnhub.apiBaseUrl });
      const relabel = <T extends object>(value: T) => ({ ...value, provider: 'sample', sample: true });
      expect(await sample.quote('GOOGL')).toEqual(relabel(await live.quote('GOOGL')));
      expect(await sample.profile('GOOGL')).toEqual(relabel(await live.profile('GOOGL')));
      expect(await sample.metrics('GOOGL')).toEqual(relabel(await live.metrics('GOOGL')));
    } finally {
      await finnhub.close();
    }
  });
});
