import { type z } from 'zod';
import { NewsItem, NewsProductResponse, NewsRequest, NewsResponse, NewsResult, jobUrls } from '../src';
import { UUID, ok, rejected, symbols } from './helpers';

describe('NewsRequest', () => {
  it('applies the defaults n=5 and language=en and normalises symbols', () => {
    expect(ok(NewsRequest, { symbols: [' aapl ', 'AAPL', 'brk.b'] })).toEqual({ symbols: ['AAPL', 'BRK.B'], n: 5, language: 'en' });
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
      'unknown field "langauge" (allowed: symbols, n, language, data, callback_url)',
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
