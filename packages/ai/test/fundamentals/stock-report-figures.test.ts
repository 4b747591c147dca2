// Issue 38's "done when": a stock report of a bundled symbol shows figures each traced to an accession number and
// concept. Offline mode, end to end through the engine: the bundled EDGAR sample, the offline analyst answering in
// the Messages API's wire format, the figure check after the answer.
import { parseConfig } from '@fin/config';
import { StockReportRequest, StockReportResult, type StockReportResult as Report } from '@fin/contracts';
import { aiConfigShape, createAiEngine, type AiEngine } from '../../src';
import { silentLogger } from '../helpers';

describe('a stock report of a bundled symbol, offline', () => {
  let engine: AiEngine;
  let report: Report;

  beforeAll(async () => {
    engine = await createAiEngine({ config: parseConfig(aiConfigShape, {}), logger: silentLogger });
    report = (await engine.stockReport(StockReportRequest.parse({ symbols: ['AAPL'] }))).result;
  });
  afterAll(() => engine.close());

  it('carries figures each traced to an accession number, a concept and a filing a reader can open', () => {
    expect(StockReportResult.parse(report)).toEqual(report);
    expect(report.figures.map((figure) => figure.name)).toEqual(
      expect.arrayContaining(['revenue', 'net_income', 'eps_diluted', 'total_assets', 'operating_cash_flow', 'shares_outstanding']),
    );
    for (const figure of report.figures) {
      expect(figure.symbol).toBe('AAPL');
      expect(figure.accession).toMatch(/^0000320193-\d{2}-\d{6}$/);
      expect(figure.concept).toMatch(/^(us-gaap|dei):\w+$/);
      // The sample's filings live under a reserved host; EDGAR's under www.sec.gov, in the same folders.
      expect(figure.url).toMatch(/^https:\/\/[\w.-]+\/Archives\/edgar\/data\/320193\/\d{18}\//);
      expect(figure.form).toMatch(/^10-[KQ]$/);
    }
    expect(report.figures.find((figure) => figure.name === 'revenue')?.period.fiscal_period).toBe('FY');
    expect(report.figure_notes).toEqual([expect.stringMatching(/^AAPL: figures from the bundled sample of SEC EDGAR data/)]);
  });

  it('carries the ratios computed from them, each naming figures of the report', () => {
    const names = new Set(report.figures.map((figure) => figure.name));
    expect(report.ratios.map((ratio) => ratio.name)).toEqual(
      expect.arrayContaining(['gross_margin', 'net_margin', 'free_cash_flow', 'revenue_growth_yoy']),
    );
    for (const ratio of report.ratios) for (const input of ratio.inputs) expect(names.has(input)).toBe(true);
    const revenue = report.figures.find((figure) => figure.name === 'revenue')!.value;
    const gross = report.figures.find((figure) => figure.name === 'gross_profit')!.value;
    expect(report.ratios.find((ratio) => ratio.name === 'gross_margin')?.value).toBeCloseTo((gross / revenue) * 100, 3);
  });

  it('writes insights on the figures and cites their filings; every stated figure is one it was given', () => {
    const reported = report.detailed_analysis.filter((item) => item.citations.some((citation) => citation.source === 'sec_filing'));
    expect(reported.length).toBeGreaterThanOrEqual(2);
    const accessions = new Set(report.figures.map((figure) => figure.accession));
    for (const item of reported) {
      for (const citation of item.citations.filter((cited) => cited.source === 'sec_filing')) {
        expect(accessions.has(citation.filing!.accession)).toBe(true);
        expect(citation.filing?.concept).toMatch(/^us-gaap:/);
        expect(citation.quote).toContain(citation.filing!.accession);
      }
    }
    const margins = report.detailed_analysis.find((item) => item.title.startsWith('Reported margins'));
    const grossMargin = report.ratios.find((ratio) => ratio.name === 'gross_margin')!.value;
    expect(margins?.keyMetric).toContain(`gross margin ${grossMargin.toFixed(1)}%`);
    expect(report.detailed_analysis.every((item) => item.citations.length > 0)).toBe(true);
  });

  it('cites each quick insight, in the order of the quick insights', () => {
    expect(report.quick_insight_citations).toHaveLength(report.quick_insights.length);
    const fromFilings = report.quick_insights.findIndex((text) => text.includes('in its latest annual report'));
    expect(fromFilings).toBeGreaterThanOrEqual(0);
    expect(report.quick_insight_citations[fromFilings]?.map((citation) => citation.source)).toContain('sec_filing');
  });

  it('gives a symbol without SEC filings no figures and a clear note, not an error', async () => {
    const { result } = await engine.stockReport(StockReportRequest.parse({ symbols: ['7203.T'] }));
    expect(result.figures).toEqual([]);
    expect(result.ratios).toEqual([]);
    expect(result.figure_notes).toEqual([expect.stringMatching(/^No SEC filings for 7203\.T/)]);
    expect(result.detailed_analysis.length).toBeGreaterThan(0);
  });

  it('compares the figures of two bundled symbols', async () => {
    const { result } = await engine.stockReport(StockReportRequest.parse({ symbols: ['NVDA', 'MSFT'] }));
    expect(new Set(result.figures.map((figure) => figure.symbol))).toEqual(new Set(['NVDA', 'MSFT']));
    const margins = result.detailed_analysis.find((item) => item.title.startsWith('Reported margins'));
    expect(margins?.keyMetric).toMatch(/net margin: NVDA \d+\.\d% vs MSFT \d+\.\d%/);
    expect(new Set(margins?.citations.map((citation) => citation.filing?.cik))).toEqual(new Set(['0001045810', '0000789019']));
  });
});
