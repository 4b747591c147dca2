// Market data behind one interface: the live Finnhub adapter and the bundled sample for offline mode.
export { MarketDataError, UnknownSymbolError, type MarketDataErrorKind } from './errors';
export { FINNHUB_DEFAULT_BASE_URL, FinnhubProvider, type FinnhubProviderOptions } from './finnhub';
export { SampleMarketDataProvider } from './sample';
export {
  CompanyNews,
  CompanyProfile,
  KeyMetrics,
  MetricPoint,
  NewsItem,
  Quote,
  type MarketDataCallOptions,
  type MarketDataProvider,
  type NewsQuery,
} from './types';
