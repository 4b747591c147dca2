import { type z } from 'zod';
import {
  NewsItem,
  NewsProductResponse,
  NewsRequest,
  NewsResponse,
  NewsResult,
  jobUrls,
  newsToolInput,
  newsWindow,
  sentimentLabel,
} from '../src';
import { UUID, ok, rejected, symbols } from './helpers';

describe('NewsRequest', () => {
  it('applies the defaults n=5 and language=en and normalises symbols', () => {
    expect(ok(NewsRequest, { symbols: [' aapl ', 'AAPL', 'brk.b'] })).toEqual({
      symbols: ['AAPL', 'BRK.B'],
      n: 5,
      language: 'en',
      sort: 'relevance',
    });
  });

  it('accepts 1 and 10 symbols, rejects 0, 11 and a missing list', () => {
    ok(NewsRequest, { symbols: symbols(1) });
    ok(NewsRequest, { symbols: symbols(10) });
    expect(rejected(NewsRequest, { symbols: [] })).toBe('symbols: expected 1 to 10 distinct symbols, got 0');
    expect(rejected(NewsRequest, { symbols: symbols(11) })).toBe('symbols: expected 1 to 10 distinct symbols, got 11');
    expect(rejected(NewsRequest, {})).toBe('symbols: is required');
  });

  it('accepts n from 1 to 20', () => {
    expect(ok(NewsRequest, { symbols: ['A'], n: 1 }).n).toBe(1);
    expect(ok(NewsRequest, { symbols: ['A'], n: 20 }).n).toBe(20);
  });

  it.each([
    [0, 'n: must be at least 1'],
    [21, 'n: must be at most 20'],
    [2.5, 'n: must be an integer'],
    ['5', 'n: must be an integer'],
    [null, 'n: must be an integer'],
  ])('rejects n=%j', (n, detail) => {
    expect(rejected(NewsRequest, { symbols: ['A'], n })).toBe(detail);
  });

  it('normalises the language and rejects unknown codes', () => {
    expect(ok(NewsRequest, { symbols: ['A'], language: 'EN' }).language).toBe('en');
    expect(ok(NewsRequest, { symbols: ['A'], language: 'ja' }).language).toBe('ja');
    expect(rejected(NewsRequest, { symbols: ['A'], language: 'xx' })).toMatch(/^language: expected an ISO 639-1 two-letter language code/);
  });

  it('keeps data as given and rejects a non-object', () => {
    expect(ok(NewsRequest, { symbols: ['A'], data: { k: [1] } }).data).toEqual({ k: [1] });
    expect(ok(NewsRequest, { symbols: ['A'] })).not.toHaveProperty('data');
    expect(rejected(NewsRequest, { symbols: ['A'], data: [1] })).toMatch(/^data: must be a JSON object/);
  });

  it('rejects unknown fields by name, listing the allowed ones', () => {
    expect(rejected(NewsRequest, { symbols: ['A'], langauge: 'de' })).toBe(
      'unknown field "langauge" (allowed: symbols, n, language, time_from, time_to, topics, sort, sources, data, callback_url)',
    );
  });

  it('rejects a body that is not an object', () => {
    expect(rejected(NewsRequest, ['AAPL'])).toBe('expected a JSON object');
  });

  it('reports several problems at once', () => {
    expect(rejected(NewsRequest, { symbols: symbols(12), n: 21 })).toBe(
      'symbols: expected 1 to 10 distinct symbols, got 12; n: must be at most 20',
    );
  });

  it('types the input with optional defaults and the output without', () => {
    const input: z.input<typeof NewsRequest> = { symbols: ['aapl'] };
    const output: NewsRequest = ok(NewsRequest, input);
    expect(output.n).toBe(5);
  });
});

const item = {
  title: 'Apple beats estimates',
  content: 'Revenue above expectations.',
  sources: ['https://example.com/a'],
  further_reading: ['http://example.org/b'],
  citations: [],
  relevance_score: 0.9,
};

describe('NewsItem', () => {
  it('accepts relevance 0 and 1 and rejects values outside', () => {
    ok(NewsItem, { ...item, relevance_score: 0 });
    ok(NewsItem, { ...item, relevance_score: 1 });
    rejected(NewsItem, { ...item, relevance_score: -0.01 });
    rejected(NewsItem, { ...item, relevance_score: 1.01 });
  });

  it('requires http(s) URLs in sources and further_reading', () => {
    expect(rejected(NewsItem, { ...item, sources: ['not a url'] })).toMatch(/^sources\[0\]: /);
    expect(rejected(NewsItem, { ...item, further_reading: ['ftp://example.com/x'] })).toMatch(/^further_reading\[0\]: /);
  });
});

describe('NewsResponse', () => {
  const completed = { job_id: UUID, status: 'completed', from_cache: true, news: [item] };

  it('accepts a completed response and exposes the result part alone', () => {
    expect(ok(NewsResponse, completed)).toEqual(completed);
    expect(ok(NewsResult, { news: [item] })).toEqual({ news: [item] });
  });

  it('rejects a pending status or a missing from_cache', () => {
    rejected(NewsResponse, { ...completed, status: 'pending' });
    rejected(NewsResponse, { ...completed, from_cache: undefined });
  });

  it('accepts either product answer', () => {
    expect(ok(NewsProductResponse, completed).status).toBe('completed');
    const pending = { job_id: UUID, status: 'pending', from_cache: false, ...jobUrls('news', UUID) };
    expect(ok(NewsProductResponse, pending).status).toBe('pending');
    rejected(NewsProductResponse, { ...pending, status: 'failed' });
  });
});

describe('NewsRequest: time range, topics, order and sources', () => {
  const day = 24 * 60 * 60_000;

  it('normalises times to UTC, a date to its midnight, and sorts, topics and domains as given', () => {
    const request = ok(NewsRequest, {
      symbols: ['AAPL'],
      time_from: '2026-11-01',
      time_to: '2026-11-20T10:00:00+02:00',
      topics: ['earnings', 'earnings', 'technology'],
      sort: 'latest',
      sources: { include: [' Reuters.com ', 'bloomberg.com'] },
    });
    expect(request).toMatchObject({
      time_from: '2026-11-01T00:00:00.000Z',
      time_to: '2026-11-20T08:00:00.000Z',
      topics: ['earnings', 'technology'],
      sort: 'latest',
      sources: { include: ['reuters.com', 'bloomberg.com'] },
    });
  });

  it('defaults the window to the 14 days before time_to (or now)', () => {
    expect(newsWindow({ time_to: '2026-11-20T00:00:00.000Z' })).toEqual({
      from: '2026-11-06T00:00:00.000Z',
      to: '2026-11-20T00:00:00.000Z',
    });
    const now = Date.parse('2026-11-28T12:00:00Z');
    expect(newsWindow({}, now)).toEqual({ from: new Date(now - 14 * day).toISOString(), to: new Date(now).toISOString() });
  });

  it('refuses a window that is backwards, in the future, longer than 90 days, or not a time, naming the field', () => {
    expect(rejected(NewsRequest, { symbols: ['A'], time_from: '2026-11-20', time_to: '2026-11-01' })).toBe(
      'time_from: must be before time_to',
    );
    expect(rejected(NewsRequest, { symbols: ['A'], time_to: new Date(Date.now() + day).toISOString() })).toBe(
      'time_to: must not be in the future',
    );
    expect(rejected(NewsRequest, { symbols: ['A'], time_from: '2026-01-01', time_to: '2026-11-01' })).toBe(
      'time_from: must be at most 90 days before time_to',
    );
    expect(rejected(NewsRequest, { symbols: ['A'], time_from: '2026-11-01T10:00' })).toMatch(/^time_from: expected an ISO 8601 date-time/);
    // 90 days exactly is allowed.
    ok(NewsRequest, { symbols: ['A'], time_from: '2026-08-01T00:00:00Z', time_to: '2026-10-30T00:00:00Z' });
  });

  it('refuses unknown topics and orders, and sources that are not 1 to 20 domain names of one list', () => {
    expect(rejected(NewsRequest, { symbols: ['A'], topics: ['gossip'] })).toMatch(/^topics\[0\]: expected one of earnings, ipo, /);
    expect(rejected(NewsRequest, { symbols: ['A'], sort: 'oldest' })).toBe('sort: expected relevance or latest, got "oldest"');
    expect(rejected(NewsRequest, { symbols: ['A'], sources: { include: ['https://reuters.com'] } })).toMatch(
      /^sources\.include\[0\]: must be a domain name/,
    );
    expect(rejected(NewsRequest, { symbols: ['A'], sources: { include: ['*.reuters.com'] } })).toMatch(/^sources\.include\[0\]/);
    expect(rejected(NewsRequest, { symbols: ['A'], sources: { include: ['a.com'], exclude: ['b.com'] } })).toBe(
      'sources: give either include or exclude (not both, not neither)',
    );
    expect(rejected(NewsRequest, { symbols: ['A'], sources: {} })).toBe('sources: give either include or exclude (not both, not neither)');
    const many = Array.from({ length: 21 }, (_, index) => `site${index}.com`);
    expect(rejected(NewsRequest, { symbols: ['A'], sources: { exclude: many } })).toBe('sources.exclude: must list at most 20 domains');
  });

  it('checks the MCP tool input the same way, without callback_url', () => {
    expect(rejected(newsToolInput(), { symbols: ['A'], time_from: '2026-11-20', time_to: '2026-11-01' })).toBe(
      'time_from: must be before time_to',
    );
    expect(rejected(newsToolInput(), { symbols: ['A'], callback_url: 'https://example.com/hook' })).toMatch(/unknown field "callback_url"/);
  });

  it('labels sentiment by the documented bands', () => {
    expect([-1, -0.35, -0.2, -0.15, 0, 0.149, 0.15, 0.349, 0.35, 1].map(sentimentLabel)).toEqual([
      'bearish',
      'bearish',
      'somewhat-bearish',
      'somewhat-bearish',
      'neutral',
      'neutral',
      'somewhat-bullish',
      'somewhat-bullish',
      'bullish',
      'bullish',
    ]);
  });
});
