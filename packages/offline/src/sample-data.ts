// The bundled sample market dataset: six well-known symbols with plausible but invented figures, in Finnhub's
// response shapes. It backs the offline mode of the AI engine, which must label everything it derives from it as
// sample data, and the fake Finnhub server of the tests (@fin/fakes). News links point at news.example.com, which
// is not a news site.
import { type FinnhubMetrics, type FinnhubNewsItem, type SampleMarketData, type SampleSymbolData } from './sample-data-types';

const AS_OF = '2026-11-20';

/** Unix seconds of a UTC date-time. */
function unix(isoDateTime: string): number {
  return Math.floor(Date.parse(isoDateTime) / 1000);
}

function quote(current: number, previousClose: number, open: number, high: number, low: number): SampleSymbolData['quote'] {
  const change = Math.round((current - previousClose) * 100) / 100;
  return {
    c: current,
    d: change,
    dp: Math.round((change / previousClose) * 1_000_000) / 10_000,
    h: high,
    l: low,
    o: open,
    pc: previousClose,
    t: unix(`${AS_OF}T21:00:00Z`),
  };
}

interface MetricFigures {
  high52: number;
  low52: number;
  pe: number;
  eps: number;
  revenueGrowth: number;
  netMargin: number;
  grossMargin: number;
  operatingMargin: number;
  roe: number;
  debtToEquity: number;
  currentRatio: number;
  beta: number;
  dividendYield: number | null;
  marketCap: number;
  ps: number;
  pb: number;
  epsGrowth: number;
  avgVolume10d: number;
  annualEps: [number, number, number];
  annualNetMargin: [number, number, number];
}

const FISCAL_PERIODS = ['2025-12-31', '2024-12-31', '2023-12-31'];

function metrics(symbol: string, figures: MetricFigures, fiscalPeriods: string[] = FISCAL_PERIODS): FinnhubMetrics {
  return {
    metric: {
      '10DayAverageTradingVolume': figures.avgVolume10d,
      '52WeekHigh': figures.high52,
      '52WeekLow': figures.low52,
      '52WeekHighDate': '2026-10-29',
      '52WeekLowDate': '2026-04-08',
      beta: figures.beta,
      currentRatioQuarterly: figures.currentRatio,
      dividendYieldIndicatedAnnual: figures.dividendYield,
      epsGrowthTTMYoy: figures.epsGrowth,
      epsTTM: figures.eps,
      grossMarginTTM: figures.grossMargin,
      marketCapitalization: figures.marketCap,
      netProfitMarginTTM: figures.netMargin,
      operatingMarginTTM: figures.operatingMargin,
      pbQuarterly: figures.pb,
      peTTM: figures.pe,
      psTTM: figures.ps,
      revenueGrowthTTMYoy: figures.revenueGrowth,
      roeTTM: figures.roe,
      'totalDebt/totalEquityQuarterly': figures.debtToEquity,
    },
    metricType: 'all',
    series: {
      annual: {
        eps: fiscalPeriods.map((period, index) => ({ period, v: figures.annualEps[index] ?? 0 })),
        // Finnhub's series hold margins as fractions, unlike the percentages in `metric`.
        netMargin: fiscalPeriods.map((period, index) => ({ period, v: figures.annualNetMargin[index] ?? 0 })),
      },
    },
    symbol,
  };
}

function news(
  symbol: string,
  firstId: number,
  items: Array<{ at: string; slug: string; headline: string; summary: string; category?: string }>,
): FinnhubNewsItem[] {
  return items.map((item, index) => ({
    category: item.category ?? 'company',
    datetime: unix(item.at),
    headline: item.headline,
    id: firstId + index,
    image: `https://news.example.com/images/${item.slug}.jpg`,
    related: symbol,
    source: 'Sample Newswire',
    summary: item.summary,
    url: `https://news.example.com/${item.at.slice(0, 10).replaceAll('-', '/')}/${item.slug}`,
  }));
}

export const SAMPLE_MARKET_DATA: SampleMarketData = {
  sample: true,
  as_of: AS_OF,
  format: 'finnhub',
  disclaimer:
    'Sample data for offline use and tests. Figures are illustrative approximations, not real quotes or filings; news items are invented and link to news.example.com.',
  symbols: {
    AAPL: {
      quote: quote(238.4, 236.54, 236.3, 239.12, 235.9),
      profile: {
        country: 'US',
        currency: 'USD',
        exchange: 'NASDAQ NMS - GLOBAL MARKET',
        finnhubIndustry: 'Technology',
        ipo: '1980-12-12',
        logo: 'https://static.example.com/logos/AAPL.png',
        marketCapitalization: 3540212.6,
        name: 'Apple Inc',
        phone: '14089961010',
        shareOutstanding: 14850.2,
        ticker: 'AAPL',
        weburl: 'https://www.apple.com/',
      },
      metrics: metrics(
        'AAPL',
        {
          high52: 247.8,
          low52: 189.6,
          pe: 33.9,
          eps: 7.03,
          revenueGrowth: 6.2,
          netMargin: 24.9,
          grossMargin: 46.8,
          operatingMargin: 31.9,
          roe: 151.3,
          debtToEquity: 1.45,
          currentRatio: 0.92,
          beta: 1.21,
          dividendYield: 0.44,
          marketCap: 3540212.6,
          ps: 8.6,
          pb: 52.1,
          epsGrowth: 9.4,
          avgVolume10d: 51.2,
          annualEps: [6.95, 6.11, 6.16],
          annualNetMargin: [0.2461, 0.2397, 0.2531],
        },
        ['2025-09-27', '2024-09-28', '2023-09-30'],
      ),
      news: news('AAPL', 136900001, [
        {
          at: '2026-11-19T14:30:00Z',
          slug: 'apple-services-revenue-record-quarter',
          headline: 'Apple services revenue sets another quarterly record as device sales hold steady',
          summary:
            'Subscription and App Store revenue grew at a double-digit pace, offsetting flat hardware unit sales and lifting gross margin.',
        },
        {
          at: '2026-11-17T11:05:00Z',
          slug: 'apple-on-device-ai-rollout',
          headline: 'Apple widens on-device AI features to older iPhone models',
          summary:
            'The update extends local language-model features to two prior hardware generations, a move analysts tie to upgrade-cycle expectations.',
        },
        {
          at: '2026-11-14T16:45:00Z',
          slug: 'apple-eu-app-store-ruling',
          headline: 'EU regulators open review of Apple app store fee changes',
          summary: 'The review concerns revised developer fees introduced earlier in the year; a decision is not expected before mid-2027.',
          category: 'regulation',
        },
      ]),
    },
    MSFT: {
      quote: quote(452.1, 448.77, 449.05, 454.3, 447.6),
      profile: {
        country: 'US',
        currency: 'USD',
        exchange: 'NASDAQ NMS - GLOBAL MARKET',
        finnhubIndustry: 'Technology',
        ipo: '1986-03-13',
        logo: 'https://static.example.com/logos/MSFT.png',
        marketCapitalization: 3361450.3,
        name: 'Microsoft Corp',
        phone: '14258828080',
        shareOutstanding: 7435.1,
        ticker: 'MSFT',
        weburl: 'https://www.microsoft.com/',
      },
      metrics: metrics(
        'MSFT',
        {
          high52: 468.4,
          low52: 366.5,
          pe: 36.2,
          eps: 12.49,
          revenueGrowth: 15.1,
          netMargin: 35.8,
          grossMargin: 69.4,
          operatingMargin: 45.2,
          roe: 33.4,
          debtToEquity: 0.21,
          currentRatio: 1.31,
          beta: 0.9,
          dividendYield: 0.74,
          marketCap: 3361450.3,
          ps: 12.9,
          pb: 10.8,
          epsGrowth: 13.7,
          avgVolume10d: 19.8,
          annualEps: [12.1, 11.8, 9.68],
          annualNetMargin: [0.3579, 0.3604, 0.3415],
        },
        ['2025-06-30', '2024-06-30', '2023-06-30'],
      ),
      news: news('MSFT', 136900101, [
        {
          at: '2026-11-20T13:10:00Z',
          slug: 'microsoft-azure-capacity-expansion',
          headline: 'Microsoft details new Azure data-center capacity for AI workloads',
          summary:
            'The company said added capacity in three regions should ease supply constraints that weighed on cloud growth last quarter.',
        },
        {
          at: '2026-11-18T09:40:00Z',
          slug: 'microsoft-copilot-enterprise-seats',
          headline: 'Copilot enterprise seat count climbs, Microsoft says at investor event',
          summary: 'Management pointed to higher attach rates among large customers but did not break out revenue contribution.',
        },
        {
          at: '2026-11-15T15:00:00Z',
          slug: 'microsoft-gaming-division-restructure',
          headline: 'Microsoft reorganises gaming division around subscription service',
          summary: 'The restructuring consolidates studios under the subscription business and includes a modest reduction in headcount.',
        },
      ]),
    },
    NVDA: {
      quote: quote(187.35, 182.91, 183.4, 188.2, 182.1),
      profile: {
        country: 'US',
        currency: 'USD',
        exchange: 'NASDAQ NMS - GLOBAL MARKET',
        finnhubIndustry: 'Semiconductors',
        ipo: '1999-01-22',
        logo: 'https://static.example.com/logos/NVDA.png',
        marketCapitalization: 4562830.5,
        name: 'NVIDIA Corp',
        phone: '14084862000',
        shareOutstanding: 24354.3,
        ticker: 'NVDA',
        weburl: 'https://www.nvidia.com/',
      },
      metrics: metrics(
        'NVDA',
        {
          high52: 195.6,
          low52: 102.4,
          pe: 48.7,
          eps: 3.85,
          revenueGrowth: 62.4,
          netMargin: 53.1,
          grossMargin: 72.6,
          operatingMargin: 61.8,
          roe: 104.2,
          debtToEquity: 0.09,
          currentRatio: 4.1,
          beta: 1.74,
          dividendYield: 0.02,
          marketCap: 4562830.5,
          ps: 25.3,
          pb: 41.6,
          epsGrowth: 58.9,
          avgVolume10d: 176.4,
          annualEps: [2.94, 1.19, 0.17],
          annualNetMargin: [0.5585, 0.4885, 0.1619],
        },
        ['2026-01-25', '2025-01-26', '2024-01-28'],
      ),
      news: news('NVDA', 136900201, [
        {
          at: '2026-11-19T21:20:00Z',
          slug: 'nvidia-quarterly-results-data-center',
          headline: 'NVIDIA quarterly revenue beats guidance on data-center demand',
          summary:
            'Data-center revenue rose sharply year over year; the company guided next quarter above consensus and flagged supply of advanced packaging as the main constraint.',
          category: 'earnings',
        },
        {
          at: '2026-11-16T12:00:00Z',
          slug: 'nvidia-export-rules-update',
          headline: 'New export rules add licensing step for some NVIDIA accelerators',
          summary:
            'The rules affect a subset of shipments to certain regions; the company said it expects limited impact on the current quarter.',
          category: 'regulation',
        },
        {
          at: '2026-11-14T10:15:00Z',
          slug: 'nvidia-networking-growth',
          headline: 'Networking emerges as NVIDIA fastest-growing segment',
          summary: 'Sales of switches and interconnects grew faster than compute, as customers build larger training clusters.',
        },
      ]),
    },
    GOOGL: {
      quote: quote(178.62, 179.88, 179.5, 180.4, 177.95),
      profile: {
        country: 'US',
        currency: 'USD',
        exchange: 'NASDAQ NMS - GLOBAL MARKET',
        finnhubIndustry: 'Media',
        ipo: '2004-08-19',
        logo: 'https://static.example.com/logos/GOOGL.png',
        marketCapitalization: 2178904.1,
        name: 'Alphabet Inc',
        phone: '16502530000',
        shareOutstanding: 12198.4,
        ticker: 'GOOGL',
        weburl: 'https://abc.xyz/',
      },
      metrics: metrics('GOOGL', {
        high52: 191.75,
        low52: 140.53,
        pe: 20.4,
        eps: 8.76,
        revenueGrowth: 13.2,
        netMargin: 30.1,
        grossMargin: 58.9,
        operatingMargin: 33.4,
        roe: 32.6,
        debtToEquity: 0.08,
        currentRatio: 1.9,
        beta: 1.03,
        dividendYield: 0.47,
        marketCap: 2178904.1,
        ps: 5.9,
        pb: 6.4,
        epsGrowth: 24.8,
        avgVolume10d: 28.7,
        annualEps: [8.04, 8.04, 5.8],
        annualNetMargin: [0.3012, 0.2862, 0.2401],
      }),
      news: news('GOOGL', 136900301, [
        {
          at: '2026-11-20T10:30:00Z',
          slug: 'alphabet-search-ai-ad-pricing',
          headline: 'Alphabet says AI answers in search are not diluting ad pricing',
          summary: 'Executives said paid clicks and cost per click held up in markets where AI-generated summaries are widely shown.',
        },
        {
          at: '2026-11-18T17:25:00Z',
          slug: 'alphabet-cloud-backlog',
          headline: 'Google Cloud backlog grows as enterprise AI contracts lengthen',
          summary:
            'Multi-year commitments lifted reported backlog; operating margin in the cloud segment improved for a fourth straight quarter.',
        },
        {
          at: '2026-11-13T08:50:00Z',
          slug: 'alphabet-antitrust-remedy-hearing',
          headline: 'Court schedules hearing on remedies in search antitrust case',
          summary: 'The hearing will consider proposed changes to default-search agreements; the outcome may affect distribution payments.',
          category: 'regulation',
        },
      ]),
    },
    AMZN: {
      quote: quote(214.77, 211.02, 211.8, 215.6, 210.4),
      profile: {
        country: 'US',
        currency: 'USD',
        exchange: 'NASDAQ NMS - GLOBAL MARKET',
        finnhubIndustry: 'Retail',
        ipo: '1997-05-15',
        logo: 'https://static.example.com/logos/AMZN.png',
        marketCapitalization: 2281533.8,
        name: 'Amazon.com Inc',
        phone: '12062661000',
        shareOutstanding: 10623.1,
        ticker: 'AMZN',
        weburl: 'https://www.amazon.com/',
      },
      metrics: metrics('AMZN', {
        high52: 232.6,
        low52: 161.4,
        pe: 35.1,
        eps: 6.12,
        revenueGrowth: 10.8,
        netMargin: 10.4,
        grossMargin: 49.6,
        operatingMargin: 11.3,
        roe: 23.9,
        debtToEquity: 0.38,
        currentRatio: 1.06,
        beta: 1.31,
        dividendYield: null,
        marketCap: 2281533.8,
        ps: 3.5,
        pb: 7.6,
        epsGrowth: 41.2,
        avgVolume10d: 43.9,
        annualEps: [5.53, 5.53, 2.9],
        annualNetMargin: [0.1029, 0.0929, 0.0529],
      }),
      news: news('AMZN', 136900401, [
        {
          at: '2026-11-19T13:00:00Z',
          slug: 'amazon-aws-custom-chips',
          headline: 'AWS expands availability of in-house AI training chips',
          summary:
            'The company said its custom accelerators now back a larger share of internal and customer training jobs, lowering unit costs.',
        },
        {
          at: '2026-11-17T15:35:00Z',
          slug: 'amazon-holiday-logistics',
          headline: 'Amazon adds regional delivery hubs ahead of holiday season',
          summary: 'Faster regional fulfilment has cut average delivery times, which management credits for higher purchase frequency.',
        },
        {
          at: '2026-11-12T18:10:00Z',
          slug: 'amazon-advertising-growth',
          headline: 'Amazon advertising revenue grows faster than retail sales',
          summary:
            'Sponsored listings and streaming ads drove the increase, making advertising the second-largest profit contributor after AWS.',
        },
      ]),
    },
    TSLA: {
      quote: quote(341.2, 349.85, 348.9, 351.3, 338.75),
      profile: {
        country: 'US',
        currency: 'USD',
        exchange: 'NASDAQ NMS - GLOBAL MARKET',
        finnhubIndustry: 'Automobiles',
        ipo: '2010-06-29',
        logo: 'https://static.example.com/logos/TSLA.png',
        marketCapitalization: 1098740.2,
        name: 'Tesla Inc',
        phone: '15125168177',
        shareOutstanding: 3220.2,
        ticker: 'TSLA',
        weburl: 'https://www.tesla.com/',
      },
      metrics: metrics('TSLA', {
        high52: 488.5,
        low52: 214.3,
        pe: 171.5,
        eps: 1.99,
        revenueGrowth: -1.6,
        netMargin: 6.4,
        grossMargin: 17.2,
        operatingMargin: 6.9,
        roe: 8.7,
        debtToEquity: 0.17,
        currentRatio: 2.0,
        beta: 2.31,
        dividendYield: null,
        marketCap: 1098740.2,
        ps: 11.4,
        pb: 14.2,
        epsGrowth: -28.4,
        avgVolume10d: 98.6,
        annualEps: [2.04, 4.3, 4.73],
        annualNetMargin: [0.0721, 0.1541, 0.1551],
      }),
      news: news('TSLA', 136900501, [
        {
          at: '2026-11-20T12:45:00Z',
          slug: 'tesla-deliveries-outlook',
          headline: 'Tesla trims delivery outlook citing softer demand in Europe',
          summary:
            'The company now expects full-year deliveries slightly below last year; price cuts in several markets weighed on automotive margin.',
        },
        {
          at: '2026-11-18T16:20:00Z',
          slug: 'tesla-energy-storage-record',
          headline: 'Tesla energy storage deployments reach a quarterly record',
          summary:
            'Utility-scale battery installations more than offset weaker vehicle sales in the energy segment, which carries higher margins.',
        },
        {
          at: '2026-11-15T07:55:00Z',
          slug: 'tesla-robotaxi-permit',
          headline: 'Tesla receives limited driverless testing permit in a second state',
          summary:
            'The permit allows testing without a safety driver in a restricted area; commercial service still requires further approvals.',
        },
      ]),
    },
  },
};
