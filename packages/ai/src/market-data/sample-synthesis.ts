// Sample data for what the bundled snapshot does not hold: symbols outside it, and news beyond its few items per
// symbol. Offline mode must answer for any well-formed ticker, so these are invented here, deterministically: a
// hash of the symbol seeds a small generator, figures are those of a bundled company scaled, and news follows
// story templates in the style and categories of the bundled news. The result is in Finnhub's shapes like the
// bundled data, so it goes through the same normaliser and comes out marked `provider: 'sample', sample: true`.
// Nothing passes for real: names are the ticker with a generic suffix, there is no company website, and links
// point at news.example.com as the bundled ones do.
import { type FinnhubMetrics, type FinnhubNewsItem, type SampleMarketData, type SampleSymbolData } from '@fin/offline';

const NEWS_HOST = 'https://news.example.com';
const NAME_SUFFIXES = ['Inc', 'Corp', 'Holdings Inc', 'Group Inc', 'Technologies Inc', 'Industries Inc', 'Systems Corp', 'Brands Inc'];
const INDUSTRIES = [
  'Technology',
  'Semiconductors',
  'Media',
  'Retail',
  'Automobiles',
  'Banking',
  'Pharmaceuticals',
  'Machinery',
  'Energy',
  'Telecommunication',
  'Insurance',
  'Utilities',
];
const EXCHANGES = ['NASDAQ NMS - GLOBAL MARKET', 'NEW YORK STOCK EXCHANGE, INC.'];
/** Ids of invented news items start here, far from the bundled items' ids. */
const NEWS_ID_BASE = 900_000_000;
const MINUTE = 60;

/** FNV-1a, 32 bits: a stable hash of a string, the same on every machine and run. */
function hash(text: string): number {
  let value = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    value ^= text.charCodeAt(index);
    value = Math.imul(value, 0x01000193);
  }
  return value >>> 0;
}

interface Draw {
  /** A number in [low, high). */
  between(low: number, high: number): number;
  pick<T>(list: readonly T[]): T;
}

/** A deterministic generator (mulberry32) seeded with the hash of `seed`. */
function draw(seed: string): Draw {
  let state = hash(seed);
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    between: (low, high) => low + (high - low) * next(),
    pick: (list) => {
      // next() is below 1, so the index is in range for any list that is not empty.
      const item = list[Math.floor(next() * list.length)];
      if (item === undefined) throw new RangeError('Nothing to pick from an empty list.');
      return item;
    },
  };
}

const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;

/**
 * A company for a symbol outside the snapshot: figures of a bundled company (chosen by the symbol's hash) scaled
 * and varied so that they stay consistent with each other (EPS = price / P/E, market cap = price x shares, gross
 * above operating above net margin). Undefined when the dataset holds no company to start from.
 */
export function synthesiseCompany(symbol: string, data: SampleMarketData): SampleSymbolData | undefined {
  // In the order of their symbols, as sorting the symbols would put them.
  const bundled = Object.entries(data.symbols).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (bundled.length === 0) return undefined;
  const random = draw(`company:${symbol}`);
  const [, template] = random.pick(bundled);
  const base = (key: string, fallback: number): number => {
    const value = template.metrics.metric[key];
    return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
  };

  const price = round(template.quote.c * random.between(0.15, 1.6), 2);
  const previousClose = round(price / (1 + random.between(-3.5, 3.5) / 100), 2);
  const change = round(price - previousClose, 2);
  const open = round(previousClose + (price - previousClose) * random.between(0, 0.6), 2);
  // Market capitalisation from 5bn to 800bn (in millions, as Finnhub states it), log-uniform.
  const marketCap = round(10 ** random.between(Math.log10(5_000), Math.log10(800_000)), 1);
  const pe = round(base('peTTM', 25) * random.between(0.45, 1.3), 1);
  const eps = round(price / pe, 2);
  const marginScale = random.between(0.55, 1.1);
  const netMargin = round(base('netProfitMarginTTM', 15) * marginScale, 1);
  const latestEps = round(eps * random.between(0.85, 1), 2);
  const epsSeries = [latestEps, round(latestEps * random.between(0.75, 1.05), 2), round(latestEps * random.between(0.55, 0.95), 2)];
  const periods = template.metrics.series.annual?.eps?.map((point) => point.period) ?? [];

  const metrics: FinnhubMetrics = {
    metric: {
      '10DayAverageTradingVolume': round(random.between(2, 80), 1),
      '52WeekHigh': round(Math.max(price, open) * random.between(1.03, 1.35), 2),
      '52WeekLow': round(Math.min(price, open) * random.between(0.6, 0.95), 2),
      '52WeekHighDate': template.metrics.metric['52WeekHighDate'] ?? null,
      '52WeekLowDate': template.metrics.metric['52WeekLowDate'] ?? null,
      beta: round(base('beta', 1) * random.between(0.7, 1.2), 2),
      currentRatioQuarterly: round(base('currentRatioQuarterly', 1.2) * random.between(0.7, 1.3), 2),
      dividendYieldIndicatedAnnual: random.between(0, 1) < 0.6 ? round(random.between(0.3, 3.5), 2) : null,
      epsGrowthTTMYoy: round(base('epsGrowthTTMYoy', 8) * random.between(0.3, 1.2), 1),
      epsTTM: eps,
      grossMarginTTM: round(base('grossMarginTTM', 40) * marginScale, 1),
      marketCapitalization: marketCap,
      netProfitMarginTTM: netMargin,
      operatingMarginTTM: round(base('operatingMarginTTM', 20) * marginScale, 1),
      pbQuarterly: round(base('pbQuarterly', 5) * random.between(0.3, 1.1), 1),
      peTTM: pe,
      psTTM: round(base('psTTM', 4) * random.between(0.4, 1.2), 1),
      revenueGrowthTTMYoy: round(base('revenueGrowthTTMYoy', 8) * random.between(0.3, 1.2), 1),
      roeTTM: round(base('roeTTM', 20) * random.between(0.4, 1.1), 1),
      'totalDebt/totalEquityQuarterly': round(base('totalDebt/totalEquityQuarterly', 0.5) * random.between(0.5, 2), 2),
    },
    metricType: 'all',
    series: {
      annual: {
        eps: periods.map((period, index) => ({ period, v: epsSeries[index] ?? eps })),
        // Fractions, as Finnhub's series state margins.
        netMargin: periods.map((period) => ({ period, v: round((netMargin / 100) * random.between(0.85, 1.05), 4) })),
      },
    },
    symbol,
  };

  const ipoYear = Math.floor(random.between(1980, 2022));
  const ipoMonth = Math.floor(random.between(1, 13));
  const ipoDay = Math.floor(random.between(1, 29));
  return {
    quote: {
      c: price,
      d: change,
      dp: round((change / previousClose) * 100, 4),
      h: round(Math.max(open, price) * random.between(1.001, 1.012), 2),
      l: round(Math.min(open, price) * random.between(0.988, 0.999), 2),
      o: open,
      pc: previousClose,
      t: template.quote.t,
    },
    profile: {
      country: 'US',
      currency: 'USD',
      exchange: random.pick(EXCHANGES),
      finnhubIndustry: random.pick(INDUSTRIES),
      ipo: `${ipoYear}-${String(ipoMonth).padStart(2, '0')}-${String(ipoDay).padStart(2, '0')}`,
      logo: `https://static.example.com/logos/${symbol}.png`,
      marketCapitalization: marketCap,
      name: `${symbol} ${random.pick(NAME_SUFFIXES)}`,
      phone: '',
      shareOutstanding: round(marketCap / price, 1),
      ticker: symbol,
      weburl: '',
    },
    metrics,
    news: [],
  };
}

interface StoryContext {
  name: string;
  /** Lower-case, for use inside a sentence ("the retail sector"). */
  sector: string;
  revenueGrowth: number;
  random: Draw;
}

interface Story {
  slug: string;
  category: 'company' | 'earnings' | 'regulation';
  headline(context: StoryContext): string;
  summary(context: StoryContext): string;
}

/** Story templates in the bundled news' style: earnings, products and capacity, deals, people, regulation. */
const STORIES: readonly Story[] = [
  {
    slug: 'quarterly-results',
    category: 'earnings',
    headline: ({ name }) => `${name} quarterly revenue comes in ahead of guidance`,
    summary: ({ revenueGrowth }) =>
      `Revenue grew ${revenueGrowth.toFixed(1)}% from a year earlier on trailing figures; management kept its full-year outlook and pointed to steady order intake.`,
  },
  {
    slug: 'margin-pressure',
    category: 'earnings',
    headline: ({ name }) => `${name} flags margin pressure from higher input costs`,
    summary: ({ random }) =>
      `Gross margin narrowed by about ${Math.round(random.between(40, 180))} basis points year over year; the company expects price increases to recover part of it next quarter.`,
  },
  {
    slug: 'guidance-update',
    category: 'earnings',
    headline: ({ name }) => `${name} guides next quarter slightly below consensus`,
    summary: () =>
      'Management cited slower orders from large customers and said it is holding its full-year target while it watches demand.',
  },
  {
    slug: 'share-buyback',
    category: 'company',
    headline: ({ name, random }) => `${name} announces ${random.between(1, 12).toFixed(1)} billion dollar share buyback`,
    summary: () => 'The programme runs over two years and is funded from free cash flow; the dividend policy is unchanged.',
  },
  {
    slug: 'capacity-expansion',
    category: 'company',
    headline: ({ name }) => `${name} expands capacity as demand in its markets holds up`,
    summary: ({ sector }) =>
      `The investment adds production and service capacity over the next 18 months; management expects it to support revenue growth as the ${sector} sector recovers.`,
  },
  {
    slug: 'finance-chief',
    category: 'company',
    headline: ({ name }) => `${name} names a new chief financial officer`,
    summary: () => 'The incoming finance chief joins from a larger peer; the company said its medium-term financial targets are unchanged.',
  },
  {
    slug: 'supply-agreement',
    category: 'company',
    headline: ({ name }) => `${name} signs multi-year agreement with a major customer`,
    summary: () => 'The agreement spans several product lines and lengthens order visibility; financial terms were not disclosed.',
  },
  {
    slug: 'acquisition',
    category: 'company',
    headline: ({ name }) => `${name} agrees to buy a smaller rival`,
    summary: ({ sector }) =>
      `The deal adds complementary products and customers in the ${sector} sector; the company expects it to add to earnings within two years of closing.`,
  },
  {
    slug: 'analyst-targets',
    category: 'company',
    headline: ({ name }) => `Analysts raise price targets on ${name} after investor day`,
    summary: ({ random }) =>
      `Brokers pointed to the medium-term margin targets presented at the event; the shares rose ${random.between(1, 6).toFixed(1)}% on the day.`,
  },
  {
    slug: 'peer-warning',
    category: 'company',
    headline: ({ name, sector }) => `${name} shares slip after a peer in the ${sector} sector warns on demand`,
    summary: ({ name }) =>
      `A competitor's profit warning weighed on the sector; analysts said ${name}'s order book looks more resilient than the peer's.`,
  },
  {
    slug: 'pricing-review',
    category: 'regulation',
    headline: ({ name }) => `Regulators open review of ${name} pricing practices`,
    summary: () =>
      'The review concerns fees charged to business customers; the company said it is cooperating and a decision is not expected before next year.',
  },
  {
    slug: 'patent-settlement',
    category: 'regulation',
    headline: ({ name }) => `${name} settles patent dispute with a competitor`,
    summary: () =>
      'The settlement ends litigation over a set of product patents; the company said the one-off payment involved is not material.',
  },
];

/**
 * `count` invented news items for a company, newest first, all published before `before` (unix seconds). The
 * order of stories and their figures follow from the symbol, and the first k items are the same whatever
 * `count` is, so a larger limit only adds older items. Past the templates, stories come back as numbered updates.
 */
export function synthesiseNews(symbol: string, company: SampleSymbolData, count: number, before: number): FinnhubNewsItem[] {
  const random = draw(`news:${symbol}`);
  const order = STORIES.map((story) => ({ story, key: random.between(0, 1) }))
    .sort((a, b) => a.key - b.key)
    .map(({ story }) => story);
  const growth = company.metrics.metric.revenueGrowthTTMYoy;
  const context: StoryContext = {
    name: company.profile.name,
    sector: (company.profile.finnhubIndustry || 'market').toLowerCase(),
    revenueGrowth: typeof growth === 'number' ? growth : 0,
    random,
  };
  const idBase = NEWS_ID_BASE + (hash(symbol) % 1_000_000) * 100;
  const items: FinnhubNewsItem[] = [];
  let time = before;
  for (let index = 0; index < count; index++) {
    const story = order[index % order.length];
    if (story === undefined) throw new RangeError('There are no story templates.');
    const cycle = Math.floor(index / order.length);
    time -= Math.round(random.between(10, 40) * 60) * MINUTE;
    const day = new Date(time * 1000).toISOString().slice(0, 10).replaceAll('-', '/');
    const slug = `${symbol.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-${story.slug}${cycle > 0 ? `-${cycle + 1}` : ''}`;
    const headline = story.headline(context);
    items.push({
      category: story.category,
      datetime: time,
      headline: cycle > 0 ? `${headline} (update ${cycle})` : headline,
      id: idBase + index,
      image: `${NEWS_HOST}/images/${slug}.jpg`,
      related: symbol,
      source: 'Sample Newswire',
      summary: story.summary(context),
      url: `${NEWS_HOST}/${day}/${slug}`,
    });
  }
  return items;
}
