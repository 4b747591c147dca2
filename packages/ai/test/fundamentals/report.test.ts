import type { Citation } from '@fin/contracts';
import type { FilingsSource } from '@fin/edgar';
import {
  checkReport,
  figureLine,
  figureQuickInsights,
  loadReportFigures,
  renderReportFigures,
  type DraftInsight,
  type ReportFigures,
} from '../../src/fundamentals/report';
import { K_2025, appleFacts } from './facts';

/** A FilingsSource over hand-built facts: AAPL known, anything else unknown; FAIL fails as EDGAR can. */
const source: FilingsSource = {
  sample: false,
  company: () => Promise.resolve(null),
  filings: () => Promise.resolve(null),
  document: () => Promise.resolve(null),
  facts: (symbol) =>
    symbol === 'FAIL' ? Promise.reject(new Error('EDGAR 503')) : Promise.resolve(symbol === 'AAPL' ? appleFacts() : null),
};

const marketQuote: Citation = {
  url: 'https://finnhub.io/api/v1/stock/metric?symbol=AAPL',
  title: 'AAPL metrics',
  publisher: 'finnhub.io',
  published_at: null,
  quote: '"peRatioTtm":35.2',
  source: 'market_data',
};

const insight = (over: Partial<DraftInsight>): DraftInsight => ({
  title: 'Margins',
  keyMetric: 'Gross margin 46.9% in fiscal year 2025',
  implications: ['Net margin of 26.9% funds buybacks.'],
  investmentThesis: 'High margins underpin earnings quality.',
  category: 'profitability',
  citations: [],
  claimed: 0,
  ...over,
});

describe('figures in the stock report', () => {
  let report: ReportFigures;
  beforeAll(async () => {
    report = await loadReportFigures(source, ['AAPL', '7203.T']);
  });

  it('loads figures and ratios for a company with filings, and a note for one without', async () => {
    expect(report.figures.every((figure) => figure.symbol === 'AAPL')).toBe(true);
    expect(report.figures.find((figure) => figure.name === 'revenue')?.accession).toBe(K_2025);
    expect(report.ratios.find((ratio) => ratio.name === 'gross_margin')?.value).toBe(46.9052);
    expect(report.notes).toEqual([
      'No SEC filings for 7203.T: figures from filings cover companies that file with the SEC (US listings), so this report has no reported figures for it.',
    ]);
    const failed = await loadReportFigures(source, ['FAIL']);
    expect(failed.figures).toEqual([]);
    expect(failed.notes[0]).toMatch(/^SEC EDGAR could not be read for FAIL/);
    expect((await loadReportFigures(undefined, ['AAPL'])).notes[0]).toMatch(/^SEC EDGAR is not configured/);
  });

  it('gives the model each figure with its provenance and each ratio with its formula, as data', () => {
    const text = renderReportFigures(report);
    expect(text).toContain('<sec_figures symbol="AAPL" company="Apple Inc." cik="0000320193">');
    expect(text).toContain(
      `- revenue = 416,161,000,000 USD (416.16 billion); Revenue, fiscal year 2025 (2024-09-29 to 2025-09-27); 10-K filed 2025-10-31, accession ${K_2025}, us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax`,
    );
    expect(text).toContain('- gross_margin = 46.91%; Gross margin, fiscal year 2025; gross_profit / revenue × 100');
    expect(text).toMatch(/<sec_figures symbol="7203.T">\nNotes:\n- No SEC filings for 7203.T/);
  });

  it('keeps figures that match, and cites each to its filing, accession and concept', () => {
    const checked = checkReport({ detailed: [insight({})], quick: [] }, report, undefined);
    expect(checked.removed).toEqual({ insights: 0, implications: 0, quickInsights: 0 });
    const [kept] = checked.detailed;
    // Gross margin cites gross profit and revenue; net margin adds net income.
    expect(kept?.citations.map((citation) => citation.filing?.concept)).toEqual([
      'us-gaap:GrossProfit',
      'us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax',
      'us-gaap:NetIncomeLoss',
    ]);
    const revenue = report.figures.find((figure) => figure.name === 'revenue')!;
    expect(kept?.citations[1]).toEqual({
      url: revenue.url,
      title: 'Apple Inc. 10-K filed 2025-10-31',
      publisher: 'U.S. Securities and Exchange Commission (EDGAR)',
      published_at: '2025-10-31',
      quote: figureLine(revenue),
      source: 'sec_filing',
      filing: { cik: '0000320193', accession: K_2025, form: '10-K', filed: '2025-10-31', item: null, concept: revenue.concept },
    });
  });

  it('removes an implication with a figure that matches none, and drops an insight whose key metric has one', () => {
    const checked = checkReport(
      {
        detailed: [
          insight({ implications: ['Net margin of 26.9% funds buybacks.', 'Buybacks of $110 billion a year shrink the share count.'] }),
          insight({ keyMetric: 'Services gross margin 74%' }),
        ],
        quick: [],
      },
      report,
      undefined,
    );
    expect(checked.detailed).toHaveLength(1);
    expect(checked.detailed[0]?.implications).toEqual(['Net margin of 26.9% funds buybacks.']);
    expect(checked.removed).toEqual({ insights: 1, implications: 1, quickInsights: 0 });
  });

  it('drops an insight left without implications', () => {
    const checked = checkReport({ detailed: [insight({ implications: ['Margins of 80% are ahead.'] })], quick: [] }, report, undefined);
    expect(checked.detailed).toEqual([]);
  });

  it("accepts a figure of a passage the insight cites, or of the caller's data, and nothing else", () => {
    const valuation = insight({
      title: 'Valuation',
      keyMetric: 'P/E 35.2 (TTM)',
      implications: ['The multiple is demanding.'],
      category: 'valuation',
    });
    expect(
      checkReport({ detailed: [{ ...valuation, citations: [marketQuote], claimed: 1 }], quick: [] }, report, undefined).detailed[0]
        ?.citations,
    ).toEqual([marketQuote]);
    expect(checkReport({ detailed: [valuation], quick: [] }, report, undefined).detailed).toEqual([]);
    // The caller's own figures need no citation: the caller gave them.
    expect(checkReport({ detailed: [valuation], quick: [] }, report, { pe: 35.2 }).detailed).toHaveLength(1);
    const fromData = insight({ keyMetric: 'Guidance of $450 billion (client data)', implications: ['The client expects growth.'] });
    expect(checkReport({ detailed: [fromData], quick: [] }, report, { guidance: '$450 billion' }).detailed).toHaveLength(1);
    expect(checkReport({ detailed: [fromData], quick: [] }, report, { guidance: '$400 billion' }).detailed).toEqual([]);
  });

  it('drops an insight whose citations were all dropped, never shipping it uncited', () => {
    const unverified = insight({ keyMetric: 'Services lead the mix', implications: ['The mix keeps shifting to services.'], claimed: 2 });
    expect(checkReport({ detailed: [unverified], quick: [] }, report, undefined).detailed).toEqual([]);
    // An insight that states no figure and claimed no citation says nothing to trace: it stays.
    const plain = insight({ keyMetric: 'Services lead the mix', implications: ['The mix keeps shifting to services.'], claimed: 0 });
    expect(checkReport({ detailed: [plain], quick: [] }, report, undefined).detailed).toHaveLength(1);
  });

  it('checks and cites quick insights like insights', () => {
    const checked = checkReport(
      {
        detailed: [insight({})],
        quick: [
          { text: 'Revenue reached $416.2 billion in fiscal year 2025.', citations: [], claimed: 0 },
          { text: 'Services revenue will pass $120 billion.', citations: [], claimed: 0 },
          { text: 'Offline mode: generated from bundled sample data.', citations: [], claimed: 0 },
        ],
      },
      report,
      undefined,
    );
    expect(checked.quick.map((item) => item.text)).toEqual([
      'Revenue reached $416.2 billion in fiscal year 2025.',
      'Offline mode: generated from bundled sample data.',
    ]);
    expect(checked.quick[0]?.citations.map((citation) => citation.filing?.accession)).toEqual([K_2025]);
    expect(checked.removed.quickInsights).toBe(1);
  });

  it("in a comparison, refuses one company's figure stated as the other's", async () => {
    // MSFT: Apple's facts with a higher gross profit, so the two gross margins differ (46.9% and 70.4%).
    const msft = appleFacts();
    msft.company = { ...msft.company, symbol: 'MSFT', name: 'MICROSOFT CORP', cik: '0000789019' };
    msft.facts = msft.facts.map((item) => (item.concept === 'us-gaap:GrossProfit' ? { ...item, value: item.value * 1.5 } : item));
    const two: FilingsSource = { ...source, facts: (symbol) => Promise.resolve(symbol === 'MSFT' ? msft : appleFacts()) };
    const compared = await loadReportFigures(two, ['AAPL', 'MSFT']);
    const keep = (text: string) =>
      checkReport({ detailed: [insight({ keyMetric: text, implications: ['Margins differ.'] })], quick: [] }, compared, undefined).detailed
        .length;
    expect(keep('Gross margin: AAPL 46.9% vs MSFT 70.4%')).toBe(1);
    expect(keep("Microsoft's gross margin of 70.4% and Apple's 46.9%")).toBe(1);
    expect(keep('Gross margin: MSFT 46.9%')).toBe(0);
    expect(keep('Gross margin: AAPL 70.4% vs MSFT 46.9%')).toBe(0);
    // A clause naming neither (or both) attributes nothing: the figure only has to be one given.
    expect(keep('The gross margins (46.9% and 70.4%) differ widely.')).toBe(1);
  });

  it('writes quick insights from the figures, each of which passes the check', () => {
    const sentences = figureQuickInsights(report);
    expect(sentences.map((item) => item.text)).toEqual([
      'AAPL reported revenue of $416.16 billion for fiscal year 2025, up 6.4% year on year (10-K filed 2025-10-31).',
      "AAPL's net margin was 26.9% in fiscal year 2025 (net income $112.01 billion).",
    ]);
    const checked = checkReport({ detailed: [], quick: sentences.map((item) => ({ ...item, claimed: 0 })) }, report, undefined);
    expect(checked.quick).toHaveLength(2);
    expect(sentences[0]?.citations.map((citation) => citation.filing?.concept)).toEqual([
      'us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax',
      'us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax',
    ]);
  });
});
