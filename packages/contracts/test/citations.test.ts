import { AnalysisResult, Citation, NewsItem, NewsResult, StockReportResult } from '../src';
import { ok, rejected } from './helpers';

const citation = {
  url: 'https://news.example.com/2026/11/18/apple-services',
  title: 'Apple services revenue hits a record',
  publisher: 'Example News',
  published_at: '2026-11-18',
  quote: 'Services revenue rose 14%.',
  source: 'market_data',
};

describe('Citation', () => {
  it('accepts a complete citation and a null publication date', () => {
    expect(ok(Citation, citation)).toEqual(citation);
    expect(ok(Citation, { ...citation, published_at: null }).published_at).toBeNull();
  });

  it('names the filing of a sec_filing citation: CIK, accession number, form, date, and the item or XBRL concept', () => {
    const filing = {
      cik: '0000320193',
      accession: '0000320193-25-000079',
      form: '10-K',
      filed: '2025-10-31',
      item: null,
      concept: 'us-gaap:Revenues',
    };
    const fromFiling = { ...citation, source: 'sec_filing', filing };
    expect(ok(Citation, fromFiling)).toEqual(fromFiling);
    expect(rejected(Citation, { ...fromFiling, filing: { ...filing, accession: '320193-25-79' } })).toMatch(/^filing\.accession: /);
    expect(rejected(Citation, { ...fromFiling, filing: { ...filing, cik: '320193' } })).toMatch(/^filing\.cik: /);
  });

  it('rejects a non-http URL, an empty quote, an unknown source and a date-time as the date', () => {
    expect(rejected(Citation, { ...citation, url: 'ftp://example.com/a' })).toMatch(/^url: /);
    expect(rejected(Citation, { ...citation, quote: '' })).toMatch(/^quote: /);
    expect(rejected(Citation, { ...citation, source: 'memory' })).toMatch(/^source: /);
    expect(rejected(Citation, { ...citation, published_at: '2026-11-18T10:00:00Z' })).toMatch(/^published_at: /);
  });
});

describe('citations on results', () => {
  const newsItem = { title: 't', content: 'c', sources: ['https://a.example.com/x'], further_reading: [], relevance_score: 0.5 };
  const insight = { title: 't', keyMetric: 'k', implications: [], investmentThesis: 'i', category: 'growth' };

  it('carries the citations of each news item, insight and analysis', () => {
    expect(ok(NewsItem, { ...newsItem, citations: [citation] }).citations).toEqual([citation]);
    const report = ok(StockReportResult, { detailed_analysis: [{ ...insight, citations: [citation] }], quick_insights: ['a', 'b'] });
    expect(report.detailed_analysis[0]?.citations).toEqual([citation]);
    expect(ok(AnalysisResult, { format: 'markdown', content: 'x', citations: [citation] }).citations).toEqual([citation]);
  });

  it('reads a result stored before citations existed with empty citations', () => {
    expect(ok(NewsResult, { news: [newsItem] }).news[0]?.citations).toEqual([]);
    expect(ok(StockReportResult, { detailed_analysis: [insight], quick_insights: ['a', 'b'] }).detailed_analysis[0]?.citations).toEqual([]);
    // Before figures: no quick insight citations, figures, ratios or notes.
    expect(ok(StockReportResult, { detailed_analysis: [insight], quick_insights: ['a', 'b'] })).toMatchObject({
      quick_insight_citations: [],
      figures: [],
      ratios: [],
      figure_notes: [],
    });
    expect(ok(AnalysisResult, { format: 'json', content: { a: 1 } }).citations).toEqual([]);
  });

  it('rejects a citation without a quote inside a result', () => {
    const { quote: _quote, ...unquoted } = citation;
    expect(rejected(NewsItem, { ...newsItem, citations: [unquoted] })).toMatch(/^citations\[0\]\.quote: /);
  });
});
