import ISO6391 from 'iso-639-1';
import {
  AsyncJobResponse,
  CUSTOM_DATA_MAX_BYTES,
  CustomData,
  JobResultUrl,
  JobStatus,
  JobStatusUrl,
  JobType,
  Language,
  STOCK_SYMBOL_PATTERN,
  StockSymbol,
  jobUrls,
  symbolList,
} from '../src';
import { UUID, ok, rejected, symbols } from './helpers';

describe('StockSymbol', () => {
  it('trims and upper-cases before checking', () => {
    expect(ok(StockSymbol, ' aapl ')).toBe('AAPL');
    expect(ok(StockSymbol, 'brk.b')).toBe('BRK.B');
  });

  it.each(['A', 'AAPL', 'BRK.B', 'RDS-A', '7203.T', '0700.HK', 'ABCDEFGHIJ', 'ABCDEFGH.I'])('accepts %s', (symbol) => {
    expect(ok(StockSymbol, symbol)).toBe(symbol);
  });

  it.each(['^GSPC', '', '   ', 'ABCDEFGHIJK', 'ABCDEFGH.IJ', 'A.B.C', 'A.B-C', '.A', 'A.', 'A..B', 'EUR/USD', 'BRK B', 'AAPL$'])(
    'rejects %j naming the input',
    (symbol) => {
      expect(rejected(StockSymbol, symbol)).toBe(
        `${JSON.stringify(symbol.trim().toUpperCase())} is not a valid ticker symbol (1 to 10 letters or digits, optionally one "." or "-" class/exchange suffix, e.g. BRK.B)`,
      );
    },
  );

  it('rejects non-strings', () => {
    expect(rejected(StockSymbol, 42)).toBe('must be a string');
  });

  it('documents the same pattern it enforces', () => {
    expect(STOCK_SYMBOL_PATTERN.test('BRK.B')).toBe(true);
    expect(STOCK_SYMBOL_PATTERN.test('brk.b')).toBe(false);
  });
});

describe('symbolList', () => {
  const list = symbolList({ min: 1, max: 10 });

  it('accepts 1 and 10 symbols', () => {
    expect(ok(list, ['AAPL'])).toEqual(['AAPL']);
    expect(ok(list, symbols(10))).toHaveLength(10);
  });

  it('rejects 0 and 11 symbols with the count', () => {
    expect(rejected(list, [])).toBe('expected 1 to 10 distinct symbols, got 0');
    expect(rejected(list, symbols(11))).toBe('expected 1 to 10 distinct symbols, got 11');
  });

  it('normalises, then removes repeats keeping the first occurrence order', () => {
    expect(ok(list, ['msft', 'AAPL', 'aapl', ' MSFT ', 'tsla'])).toEqual(['MSFT', 'AAPL', 'TSLA']);
  });

  it('counts after de-duplication', () => {
    expect(ok(list, [...symbols(10), 's0', ' s1 '])).toEqual(symbols(10));
    expect(rejected(list, [...symbols(11), 's0'])).toBe('expected 1 to 10 distinct symbols, got 11');
  });

  it('points at the offending element', () => {
    expect(rejected(list, ['AAPL', '^GSPC'])).toMatch(/^\[1\]: "\^GSPC" is not a valid ticker symbol/);
  });

  it('allows an empty list when min is 0', () => {
    const optional = symbolList({ min: 0, max: 2 });
    expect(ok(optional, [])).toEqual([]);
    expect(rejected(optional, symbols(3))).toBe('expected at most 2 distinct symbols, got 3');
  });

  it('rejects a non-array', () => {
    expect(rejected(list, 'AAPL')).toBe('must be an array of ticker symbols');
  });
});

describe('Language', () => {
  it('lower-cases and trims', () => {
    expect(ok(Language, 'EN')).toBe('en');
    expect(ok(Language, ' De ')).toBe('de');
  });

  it('accepts every ISO 639-1 code and nothing it does not know', () => {
    const codes = ISO6391.getAllCodes();
    expect(codes.length).toBeGreaterThan(180);
    for (const code of codes) expect(ok(Language, code)).toBe(code);
  });

  it.each(['xx', 'eng', 'en-US', 'e', ''])('rejects %j asking for a two-letter code', (code) => {
    expect(rejected(Language, code)).toBe(
      `expected an ISO 639-1 two-letter language code such as "en" or "de", got ${JSON.stringify(code.trim().toLowerCase())}`,
    );
  });

  it('rejects non-strings', () => {
    expect(rejected(Language, 1)).toMatch(/ISO 639-1 two-letter language code/);
  });
});

describe('CustomData', () => {
  it('accepts a nested JSON object', () => {
    const data = { eps: 1.64, quarters: [{ q: 'Q3' }], note: null };
    expect(ok(CustomData, data)).toEqual(data);
  });

  it.each([[[1, 2]], ['text'], [5], [null], [true]])('rejects %j', (value) => {
    expect(rejected(CustomData, value)).toBe('must be a JSON object (not an array, string or number)');
  });

  it('accepts exactly the cap and rejects one byte more', () => {
    const overhead = JSON.stringify({ x: '' }).length;
    expect(CUSTOM_DATA_MAX_BYTES).toBe(64 * 1024);
    ok(CustomData, { x: 'a'.repeat(CUSTOM_DATA_MAX_BYTES - overhead) });
    expect(rejected(CustomData, { x: 'a'.repeat(CUSTOM_DATA_MAX_BYTES - overhead + 1) })).toBe(
      'must be at most 65536 bytes (64 KiB) when serialised as JSON, got 65537 bytes',
    );
  });

  it('counts UTF-8 bytes, not characters', () => {
    const twoByteChars = 'é'.repeat(40_000); // 40 000 characters, 80 000 bytes
    expect(rejected(CustomData, { x: twoByteChars })).toBe('must be at most 65536 bytes (64 KiB) when serialised as JSON, got 80008 bytes');
  });
});

describe('jobs: identity and envelope', () => {
  it('has the four statuses and three job types', () => {
    expect(JobStatus.options).toEqual(['pending', 'running', 'completed', 'failed']);
    expect(JobType.options).toEqual(['news', 'stock-report', 'analysis']);
  });

  it('builds the relative polling URLs', () => {
    expect(jobUrls('stock-report', UUID)).toEqual({
      status_url: `/api/jobs/stock-report/${UUID}/status`,
      result_url: `/api/jobs/stock-report/${UUID}/result`,
    });
  });

  it('accepts an envelope built with jobUrls and nothing else', () => {
    const envelope = { job_id: UUID, status: 'pending', from_cache: false, ...jobUrls('news', UUID) };
    expect(ok(AsyncJobResponse, envelope)).toEqual(envelope);
    rejected(AsyncJobResponse, { ...envelope, from_cache: true });
    rejected(AsyncJobResponse, { ...envelope, status: 'running' });
    rejected(AsyncJobResponse, { ...envelope, status_url: envelope.result_url });
  });

  it('only accepts relative job URLs of a known job type', () => {
    ok(JobStatusUrl, `/api/jobs/analysis/${UUID}/status`);
    rejected(JobStatusUrl, `https://api.example.com/api/jobs/analysis/${UUID}/status`);
    rejected(JobStatusUrl, `/api/jobs/chat/${UUID}/status`);
    rejected(JobResultUrl, `/api/jobs/news/${UUID}/status`);
  });
});
