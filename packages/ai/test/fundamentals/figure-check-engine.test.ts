// The figure check through the engine, the real SDK and the fake Messages API: the model is given the sample's
// reported figures, answers with some it was given and some it was not, and only what matches comes back, cited
// to its filings.
import { StockReportRequest } from '@fin/contracts';
import { sampleFilingsSource } from '@fin/edgar';
import { jsonReply, lastUserText, type FakeAnthropic } from '@fin/fakes';
import { figureChecks } from '@fin/metrics';
import type { AiEngine } from '../../src';
import { scriptedEngine } from '../helpers';

/** The counter's value for one part and outcome. */
async function counted(part: string, outcome: string): Promise<number> {
  const { values } = await figureChecks.get();
  return values.find((value) => value.labels.part === part && value.labels.outcome === outcome)?.value ?? 0;
}

describe('the figure check of a stock report, through the engine', () => {
  let fake: FakeAnthropic;
  let engine: AiEngine;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ fake, engine, close } = await scriptedEngine({ AI_TIMEOUT_MS: '2000' }, { filings: sampleFilingsSource() }));
  });
  afterAll(() => close());
  afterEach(() => fake.reset());

  it('removes what matches no figure given, drops insights that lost theirs or their citations, and cites the rest to the filings', async () => {
    const before = { removed: await counted('insight', 'removed'), written: await counted('quick_insight', 'service_written') };
    let brief = '';
    fake.reply((request) => {
      brief = JSON.stringify(request.body.messages[0]);
      return jsonReply({
        detailed_analysis: [
          {
            title: 'Revenue keeps growing',
            keyMetric: 'Revenue $422.2 billion in fiscal year 2025, up 7.5% year on year',
            implications: ['A gross margin of 46.8% funds investment.', 'Buybacks of $110 billion a year shrink the share count.'],
            investmentThesis: 'Growth and margins support the valuation.',
            category: 'growth',
          },
          {
            title: 'Services margin',
            keyMetric: 'Services gross margin 74%',
            implications: ['Services lift the mix.'],
            investmentThesis: 'Mix shift helps.',
            category: 'profitability',
          },
          {
            title: 'Leverage',
            keyMetric: 'Debt is manageable',
            implications: ['Rates matter less.'],
            investmentThesis: 'Low risk.',
            category: 'risk',
            citations: [{ url: 'https://invented.example.org/apple-debt', quote: 'Apple has almost no debt at all.' }],
          },
          {
            title: 'Liquidity',
            keyMetric: 'Current ratio 0.92x at the fiscal year end',
            implications: ['Short-term obligations exceed current assets.'],
            investmentThesis: 'Liquidity rests on cash generation.',
            category: 'risk',
          },
        ],
        quick_insights: [{ text: "AAPL's net margin was 24.6% in fiscal year 2025." }, { text: 'AAPL will earn $150 billion next year.' }],
      });
    });
    const { result } = await engine.stockReport(StockReportRequest.parse({ symbols: ['AAPL'] }));

    // The model was given the figures as data in the request's first turn.
    expect(brief).toContain('<sec_figures symbol=\\"AAPL\\" company=\\"Apple Inc.\\" cik=\\"0000320193\\">');
    expect(lastUserText(fake.requests[0]!.body!)).toContain('- gross_margin = 46.80%');

    expect(result.detailed_analysis.map((item) => item.title)).toEqual(['Revenue keeps growing', 'Liquidity']);
    const [growth, liquidity] = result.detailed_analysis;
    expect(growth?.implications).toEqual(['A gross margin of 46.8% funds investment.']);
    expect(new Set(growth?.citations.map((citation) => citation.filing?.concept))).toEqual(
      new Set(['us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax', 'us-gaap:GrossProfit']),
    );
    expect(
      growth?.citations.every(
        (citation) => citation.source === 'sec_filing' && /^0000320193-\d{2}-\d{6}$/.test(citation.filing!.accession),
      ),
    ).toBe(true);
    expect(liquidity?.citations.map((citation) => citation.filing?.concept)).toEqual([
      'us-gaap:AssetsCurrent',
      'us-gaap:LiabilitiesCurrent',
    ]);

    // The unfounded quick insight is gone; the service's sentence from the figures makes up the minimum of two.
    expect(result.quick_insights).toEqual([
      "AAPL's net margin was 24.6% in fiscal year 2025.",
      'AAPL reported revenue of $422.20 billion for fiscal year 2025, up 7.5% year on year (10-K filed 2025-10-30).',
    ]);
    expect(result.quick_insight_citations.map((citations) => citations.map((citation) => citation.filing?.concept))).toEqual([
      ['us-gaap:NetIncomeLoss', 'us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax'],
      ['us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax', 'us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax'],
    ]);
    expect(await counted('insight', 'removed')).toBe(before.removed + 2);
    expect(await counted('quick_insight', 'service_written')).toBe(before.written + 1);
  });

  it('fails the run rather than ship a report whose every insight states figures that match none', async () => {
    const unfounded = (category: string) => ({
      title: 'Made up',
      keyMetric: 'Revenue $999 billion',
      implications: ['Margins of 90% ahead.'],
      investmentThesis: 'Unfounded.',
      category,
    });
    const answer = {
      detailed_analysis: ['growth', 'risk', 'valuation'].map(unfounded),
      quick_insights: [{ text: 'One.' }, { text: 'Two.' }],
    };
    fake.reply(jsonReply(answer));
    await expect(engine.stockReport(StockReportRequest.parse({ symbols: ['AAPL'] }))).rejects.toMatchObject({ kind: 'invalid_output' });
  });
});
