// The request every target of the gateway-overhead scenario gets, and the answer they all give: a news cache
// hit (200, status completed, from_cache true, five items), the same bytes whichever way it travels.
import type { NewsRequestInput, NewsResponse } from '@fin/contracts';

export const NEWS_PATH = '/api/products/news';

export const NEWS_REQUEST: NewsRequestInput = { symbols: ['AAPL', 'MSFT'], n: 5, language: 'en' };

const item = (index: number, symbol: string): NewsResponse['news'][number] => ({
  title: `${symbol} item ${index}: quarterly revenue above analyst estimates as services keep growing`,
  content:
    `${symbol} reported quarterly revenue above the consensus estimate, driven by its services segment, while ` +
    'hardware sales were flat year over year. Management guided to continued margin expansion and announced a ' +
    'larger buyback programme; analysts raised their price targets after the call.',
  sources: [
    `https://example.com/news/${symbol.toLowerCase()}-earnings-${index}`,
    `https://example.org/markets/${symbol.toLowerCase()}/${index}`,
  ],
  further_reading: [`https://example.net/analysis/${symbol.toLowerCase()}-services-${index}`],
  citations: [],
  relevance_score: Math.round((0.95 - index * 0.05) * 100) / 100,
});

export const NEWS_RESPONSE: NewsResponse = {
  job_id: '3fa85f64-5717-4562-b3fc-2c963f66afa6',
  status: 'completed',
  from_cache: true,
  news: [item(1, 'AAPL'), item(2, 'MSFT'), item(3, 'AAPL'), item(4, 'MSFT'), item(5, 'AAPL')],
};

/** What express's res.json() sends for NEWS_RESPONSE. */
export const NEWS_RESPONSE_BODY = JSON.stringify(NEWS_RESPONSE);
