// Offline mode's EDGAR: the bundled sample read through the live parsers, consistent with the sample market data.
import { SAMPLE_MARKET_DATA } from '@fin/offline';
import { CompanyFacts, type Fact, FilingDocument, sampleFilingsSource } from '../src';

const source = sampleFilingsSource();
const SYMBOLS = ['AAPL', 'MSFT', 'NVDA', 'GOOGL', 'AMZN', 'TSLA'] as const;

/** The value of a concept for a fiscal year's duration, as the latest 10-K states it. */
function annual(facts: Fact[], concept: string, end: string): number | undefined {
  return facts.find((fact) => fact.concept === concept && fact.form === '10-K' && fact.end === end && fact.start !== null)?.value;
}

describe('the bundled EDGAR sample', () => {
  it('is labelled as sample data and links to a reserved host, not to www.sec.gov', async () => {
    expect(source.sample).toBe(true);
    const found = await source.filings('AAPL');
    expect(found?.company).toEqual({ cik: '0000320193', symbol: 'AAPL', name: 'Apple Inc.', sample: true });
    for (const filing of found!.filings) {
      expect(filing.sample).toBe(true);
      expect(filing.url).toMatch(/^https:\/\/sample-edgar\.example\.com\/Archives\/edgar\/data\/320193\/\d{18}\/[\w.-]+\.htm$/);
    }
  });

  it.each(SYMBOLS)('%s has a 10-K, two 10-Qs and 8-Ks with items 2.02, 5.02, 1.01, 8.01 and 9.01, newest first', async (symbol) => {
    const { filings } = (await source.filings(symbol))!;
    const forms = filings.map((filing) => filing.form);
    expect(forms.filter((form) => form === '10-K').length).toBeGreaterThanOrEqual(1);
    expect(forms.filter((form) => form === '10-Q')).toHaveLength(2);
    const items = new Set(filings.flatMap((filing) => filing.items));
    for (const item of ['2.02', '5.02', '1.01', '8.01', '9.01']) expect(items).toContain(item);
    expect(filings.filter((filing) => filing.form !== '8-K').every((filing) => filing.items.length === 0)).toBe(true);
    expect(filings.map((filing) => filing.filed)).toEqual([...filings.map((filing) => filing.filed)].sort().reverse());
  });

  it('filters by form, date and count', async () => {
    const all = (await source.filings('MSFT'))!.filings;
    const tenKs = (await source.filings('MSFT', { forms: ['10-K'] }))!.filings;
    expect(tenKs.length).toBeGreaterThan(0);
    expect(tenKs.every((filing) => filing.form === '10-K')).toBe(true);
    const since = all[2]!.filed;
    const recent = (await source.filings('MSFT', { since }))!.filings;
    expect(recent.every((filing) => filing.filed >= since)).toBe(true);
    expect(recent.length).toBeLessThan(all.length);
    expect((await source.filings('MSFT', { limit: 3 }))!.filings).toEqual(all.slice(0, 3));
  });

  it.each(SYMBOLS)('%s: every filing has a document whose sections parse, 10-K Items 1A and 7 among them', async (symbol) => {
    const { filings } = (await source.filings(symbol))!;
    for (const filing of filings) {
      const document = FilingDocument.parse(await source.document(symbol, filing.accession));
      const items = document.sections.map((section) => section.item);
      if (filing.form === '10-K') expect(items).toEqual(expect.arrayContaining(['1', '1A', '7', '7A', '8']));
      if (filing.form === '10-Q') expect(items).toEqual(expect.arrayContaining(['I-2', 'II-1A']));
      if (filing.form === '8-K') expect(items).toEqual(filing.items);
      // The sample banner precedes the first Item and the signatures follow the last: neither is in a section.
      expect(document.sections.some((section) => /SAMPLE DOCUMENT|SIGNATURES|window\./.test(section.text))).toBe(false);
    }
  });

  it('states in MD&A the figures its XBRL facts hold', async () => {
    const { filings } = (await source.filings('AAPL', { forms: ['10-K'], limit: 1 }))!;
    const tenK = filings[0]!;
    const mdna = (await source.document('AAPL', tenK.accession))!.sections.find((section) => section.item === '7')!;
    const facts = (await source.facts('AAPL'))!.facts;
    const end = tenK.reportDate!;
    const revenue = annual(facts, 'us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax', end)!;
    const eps = annual(facts, 'us-gaap:EarningsPerShareDiluted', end)!;
    expect(mdna.text).toContain(`Total net sales were $${(revenue / 1e9).toFixed(1)} billion in fiscal 2025`);
    expect(mdna.text).toContain(`$${eps.toFixed(2)} per diluted share`);
    expect(facts.find((fact) => fact.concept === 'us-gaap:EarningsPerShareDiluted' && fact.end === end)?.accession).toBe(tenK.accession);
  });

  it.each(SYMBOLS)('%s: annual EPS and net margin agree with the sample market data', async (symbol) => {
    const companyFacts = CompanyFacts.parse(await source.facts(symbol));
    const series = SAMPLE_MARKET_DATA.symbols[symbol]!.metrics.series.annual as Record<string, Array<{ period: string; v: number }>>;
    const revenueConcept = companyFacts.facts.some((fact) => fact.concept === 'us-gaap:Revenues')
      ? 'us-gaap:Revenues'
      : 'us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax';
    for (const { period, v } of series.eps!) expect(annual(companyFacts.facts, 'us-gaap:EarningsPerShareDiluted', period)).toBe(v);
    for (const { period, v } of series.netMargin!) {
      const margin = annual(companyFacts.facts, 'us-gaap:NetIncomeLoss', period)! / annual(companyFacts.facts, revenueConcept, period)!;
      expect(margin).toBeCloseTo(v, 3);
    }
    const shares = companyFacts.facts.find((fact) => fact.concept === 'dei:EntityCommonStockSharesOutstanding')!;
    expect(shares.value / 1e6).toBeCloseTo(SAMPLE_MARKET_DATA.symbols[symbol]!.profile.shareOutstanding, 1);
    // The latest balance sheet's current ratio, and the latest year's gross margin, are the metrics' too.
    const metric = SAMPLE_MARKET_DATA.symbols[symbol]!.metrics.metric as Record<string, number>;
    const latest = (concept: string) =>
      companyFacts.facts.filter((fact) => fact.concept === concept).sort((a, b) => b.end.localeCompare(a.end))[0]!.value;
    expect(latest('us-gaap:AssetsCurrent') / latest('us-gaap:LiabilitiesCurrent')).toBeCloseTo(metric.currentRatioQuarterly!, 1);
    const lastYear = series.eps![0]!.period;
    const grossMargin =
      annual(companyFacts.facts, 'us-gaap:GrossProfit', lastYear)! / annual(companyFacts.facts, revenueConcept, lastYear)!;
    expect(grossMargin * 100).toBeCloseTo(metric.grossMarginTTM!, 1);
  });

  it('holds the core concepts for three fiscal years and the latest quarters, with EDGAR provenance', async () => {
    const { facts, company, sample } = (await source.facts('NVDA'))!;
    expect(sample).toBe(true);
    expect(company.cik).toBe('0001045810');
    const concepts = new Set(facts.map((fact) => fact.concept));
    for (const concept of [
      'us-gaap:Revenues',
      'us-gaap:CostOfRevenue',
      'us-gaap:GrossProfit',
      'us-gaap:OperatingIncomeLoss',
      'us-gaap:NetIncomeLoss',
      'us-gaap:EarningsPerShareDiluted',
      'us-gaap:Assets',
      'us-gaap:Liabilities',
      'us-gaap:StockholdersEquity',
      'us-gaap:AssetsCurrent',
      'us-gaap:LiabilitiesCurrent',
      'us-gaap:CashAndCashEquivalentsAtCarryingValue',
      'us-gaap:LongTermDebtNoncurrent',
      'us-gaap:NetCashProvidedByUsedInOperatingActivities',
      'us-gaap:PaymentsToAcquirePropertyPlantAndEquipment',
      'dei:EntityCommonStockSharesOutstanding',
    ])
      expect(concepts).toContain(concept);
    const revenue = facts.filter((fact) => fact.concept === 'us-gaap:Revenues');
    expect(new Set(revenue.filter((fact) => fact.fiscalPeriod === 'FY').map((fact) => fact.end)).size).toBe(3);
    expect(new Set(revenue.map((fact) => fact.fiscalPeriod))).toEqual(new Set(['FY', 'Q1', 'Q2']));
    const assets = facts.find((fact) => fact.concept === 'us-gaap:Assets')!;
    expect(assets.start).toBeNull();
    expect(assets.url).toBe(
      `https://sample-edgar.example.com/Archives/edgar/data/1045810/${assets.accession.replaceAll('-', '')}/${assets.accession}-index.htm`,
    );
  });

  it('answers null for symbols outside the sample, non-US listings included', async () => {
    for (const symbol of ['VOD.L', 'SAP.DE', 'ZZZZ', '']) {
      expect(await source.company(symbol)).toBeNull();
      expect(await source.filings(symbol)).toBeNull();
      expect(await source.facts(symbol)).toBeNull();
      expect(await source.document(symbol, '0000320193-25-900114')).toBeNull();
    }
    expect(await source.document('AAPL', '0000320193-25-000001')).toBeNull();
    // Symbols are matched as EDGAR spells them, whatever the case.
    expect((await source.company('aapl'))?.symbol).toBe('AAPL');
  });
});
