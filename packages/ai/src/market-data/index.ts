// Market data behind one interface: the live Finnhub adapter and the bundled sample for offline mode.
export { MarketDataError, UnknownSymbolError } from './errors';
export { FinnhubProvider } from './finnhub';
export { SampleMarketDataProvider } from './sample';
export { CompanyNews, CompanyProfile, KeyMetrics, Quote, type MarketDataProvider } from './types';
