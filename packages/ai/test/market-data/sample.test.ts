// The offline provider: the bundled sample through the same normaliser as the live adapter, marked as sample.
import { SAMPLE_MARKET_DATA, startFakeFinnhub } from '@fin/fakes';
import { CompanyNews, CompanyProfile, FinnhubProvider, KeyMetrics, Quote, SampleMarketDataProvider, UnknownSymbolError } from '../../src/market-data';

const sample = new SampleMarketDataProvider();
const window = { from: '2020-01-01', to: '2020-01-31' };

describe('SampleMarketDataProvider', () => {
  it('covers the six sample symbols with contract-valid results marked as sample', async () => {
    expect(sample.symbols.sort()).toEqual(['AAPL', 'AMZN', 'GOOGL', 'MSFT', 'NVDA', 'TSLA']);
    expect(sample.asOf).toBe(SAMPLE_MARKET_DATA.as_of);
    for (const symbol of sample.symbols) {
      const [quote, profile, metrics, news] = await Promise.all([
        sample.quote(symbol),
        sample.profile(symbol),
        sample.metrics(symbol),
        sample.companyNews(symbol, window),
      ]);
      for (const result of [Quote.parse(quote), CompanyProfile.parse(profile), KeyMetrics.parse(metrics), CompanyNews.parse(news)]) {
        expect(result).toMatchObject({ symbol, provider: 'sample', sample: true });
      }
      expect(news.items.length).toBeGreaterThan(0);
    }
  });

  it('returns the snapshot news whatever the window, newest first and up to the limit', async () => {
    const news = await sample.companyNews('tsla', { ...window, limit: 2 });
    expect(news).toMatchObject({ symbol: 'TSLA', from: window.from, to: window.to });
    expect(news.items.map((item) => item.publishedAt)).toEqual(['2026-11-20T12:45:00.000Z', '2026-11-18T16:20:00.000Z']);
  });

  it('rejects unknown symbols like the live provider, and has no news for them', async () => {
    await expect(sample.quote('ZZZZ')).rejects.toBeInstanceOf(UnknownSymbolError);
    await expect(sample.metrics('IBM')).rejects.toMatchObject({ kind: 'unknown_symbol', retryable: false, provider: 'sample' });
    expect((await sample.companyNews('ZZZZ', window)).items).toEqual([]);
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
