import {
  DetailedAnalysisItem,
  StockReportProductResponse,
  StockReportRequest,
  StockReportResponse,
  StockReportResult,
  jobUrls,
} from '../src';
import { UUID, ok, rejected } from './helpers';

describe('StockReportRequest', () => {
  it('accepts one or two symbols with language defaulting to en', () => {
    expect(ok(StockReportRequest, { symbols: ['aapl'] })).toEqual({ symbols: ['AAPL'], language: 'en' });
    expect(ok(StockReportRequest, { symbols: ['AAPL', 'MSFT'], language: 'DE' })).toEqual({ symbols: ['AAPL', 'MSFT'], language: 'de' });
  });

  it('rejects 0 and 3 symbols', () => {
    expect(rejected(StockReportRequest, { symbols: [] })).toBe('symbols: expected 1 to 2 distinct symbols, got 0');
    expect(rejected(StockReportRequest, { symbols: ['A', 'B', 'C'] })).toBe('symbols: expected 1 to 2 distinct symbols, got 3');
  });

  it('counts symbols after removing repeats', () => {
    expect(ok(StockReportRequest, { symbols: ['aapl', 'AAPL', 'msft'] }).symbols).toEqual(['AAPL', 'MSFT']);
  });

  it('rejects n, which belongs to news only', () => {
    expect(rejected(StockReportRequest, { symbols: ['A'], n: 3 })).toBe(
      'unknown field "n" (allowed: symbols, language, data, callback_url)',
    );
  });

  it('rejects an unknown language', () => {
    expect(rejected(StockReportRequest, { symbols: ['A'], language: 'eng' })).toMatch(/^language: expected an ISO 639-1/);
  });
});

const analysis = {
  title: 'Services drive margins',
  keyMetric: 'Services gross margin 74%',
  implications: ['Earnings can outgrow revenue'],
  investmentThesis: 'High-margin services underpin the valuation.',
  category: 'profitability',
  citations: [],
};

describe('StockReportResult', () => {
  const result = {
    detailed_analysis: [analysis],
    quick_insights: ['One.', 'Two.'],
    quick_insight_citations: [[], []],
    figures: [],
    ratios: [],
    figure_notes: [],
  };

  it('accepts 2 and 4 quick insights, rejects 1 and 5', () => {
    ok(StockReportResult, result);
    ok(StockReportResult, { ...result, quick_insights: ['1', '2', '3', '4'] });
    expect(rejected(StockReportResult, { ...result, quick_insights: ['1'] })).toBe('quick_insights: expected 2 to 4 quick insights');
    expect(rejected(StockReportResult, { ...result, quick_insights: ['1', '2', '3', '4', '5'] })).toBe(
      'quick_insights: expected 2 to 4 quick insights',
    );
  });

  it('requires at least one detailed analysis item', () => {
    expect(rejected(StockReportResult, { ...result, detailed_analysis: [] })).toMatch(/^detailed_analysis: /);
  });

  it('accepts the five categories only', () => {
    for (const category of ['growth', 'profitability', 'risk', 'valuation', 'competitive'])
      ok(DetailedAnalysisItem, { ...analysis, category });
    expect(rejected(DetailedAnalysisItem, { ...analysis, category: 'momentum' })).toMatch(/^category: /);
  });

  it('is what the completed response carries next to the job fields', () => {
    const completed = { job_id: UUID, status: 'completed', from_cache: false, ...result };
    expect(ok(StockReportResponse, completed)).toEqual(completed);
    expect(ok(StockReportProductResponse, completed).status).toBe('completed');
    expect(
      ok(StockReportProductResponse, { job_id: UUID, status: 'pending', from_cache: false, ...jobUrls('stock-report', UUID) }).status,
    ).toBe('pending');
  });
});
