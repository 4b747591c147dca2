import type { FinancialFigure } from '@fin/contracts';
import { noFilings, selectFigures } from '../../src/fundamentals/figures';
import { APPLE_CIK, K_2024, K_2025, Q1_2026, appleFacts, fact } from './facts';

const byName = (figures: FinancialFigure[]) => new Map(figures.map((figure) => [figure.name, figure]));

describe('selecting figures from XBRL facts', () => {
  const { figures, notes, company } = selectFigures('AAPL', appleFacts());
  const named = byName(figures);

  it("takes the latest fiscal year's annual values from the latest 10-K, with their provenance", () => {
    expect(company).toEqual({ name: 'Apple Inc.', cik: APPLE_CIK });
    expect(named.get('revenue')).toEqual({
      symbol: 'AAPL',
      name: 'revenue',
      label: 'Revenue, fiscal year 2025',
      value: 416_161_000_000,
      unit: 'USD',
      period: { fiscal_year: 2025, fiscal_period: 'FY', start: '2024-09-29', end: '2025-09-27' },
      form: '10-K',
      filed: '2025-10-31',
      accession: K_2025,
      cik: APPLE_CIK,
      concept: 'us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax',
      url: 'https://www.sec.gov/Archives/edgar/data/320193/000032019325000079/',
      note: null,
    });
    expect(named.get('net_income')?.value).toBe(112_010_000_000);
    expect(named.get('eps_diluted')).toMatchObject({ value: 7.46, unit: 'USD/shares' });
    expect(named.get('capital_expenditure')?.value).toBe(12_715_000_000);
    expect(notes).toEqual([]);
  });

  it("leaves out a quarter's value that a 10-K states: annual figures last 350 to 380 days", () => {
    expect(figures.map((figure) => figure.value)).not.toContain(102_466_000_000);
    // Even from a later annual filing, which would otherwise be preferred.
    const amended = appleFacts([
      fact({
        start: '2025-06-29',
        end: '2025-09-27',
        value: 102_000_000_000,
        form: '10-K/A',
        filed: '2025-12-01',
        accession: '0000320193-25-000099',
      }),
    ]);
    expect(byName(selectFigures('AAPL', amended).figures).get('revenue')?.value).toBe(416_161_000_000);
  });

  it("gives a comparative its own period's fiscal year, not the filing's", () => {
    // Reported in the FY2025 10-K (fy 2025) but covering FY2024.
    expect(named.get('revenue_prior_year')?.period).toEqual({
      fiscal_year: 2024,
      fiscal_period: 'FY',
      start: '2023-10-01',
      end: '2024-09-28',
    });
    expect(named.get('stockholders_equity_prior_year')).toMatchObject({
      value: 56_950_000_000,
      period: { fiscal_year: 2024, start: null },
    });
  });

  it('takes a period stated by several filings from the latest filed, and says what the earlier one reported', () => {
    const prior = named.get('revenue_prior_year');
    expect(prior).toMatchObject({ value: 391_035_000_000, accession: K_2025, filed: '2025-10-31' });
    expect(prior?.note).toBe(
      `Restated: the 10-K filed 2024-11-01 (${K_2024}) reported 390,000,000,000. The latest filing's value is used.`,
    );
  });

  it('notes a period that an earlier filing stated with the same value', () => {
    const facts = appleFacts();
    facts.facts = facts.facts.map((item) =>
      item.accession === K_2024 && item.end === '2024-09-28' ? { ...item, value: 391_035_000_000 } : item,
    );
    const prior = byName(selectFigures('AAPL', facts).figures).get('revenue_prior_year');
    expect(prior?.accession).toBe(K_2025);
    expect(prior?.note).toBe(`Also reported in the 10-K filed 2024-11-01 (${K_2024}); the latest filing is used.`);
  });

  it('prefers Revenues where a period reports it, and takes the alternative concept where it does not', () => {
    const withTotal = appleFacts([fact({ concept: 'us-gaap:Revenues', value: 420_000_000_000 })]);
    expect(byName(selectFigures('AAPL', withTotal).figures).get('revenue')).toMatchObject({
      concept: 'us-gaap:Revenues',
      value: 420_000_000_000,
    });
    expect(named.get('revenue')?.concept).toBe('us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax');
  });

  it('takes balances at the fiscal year end from the 10-K', () => {
    expect(named.get('total_assets')).toMatchObject({
      value: 359_241_000_000,
      period: { start: null, end: '2025-09-27', fiscal_year: 2025 },
    });
    expect(named.get('long_term_debt')?.concept).toBe('us-gaap:LongTermDebtNoncurrent');
    expect(named.get('cash')?.value).toBe(35_934_000_000);
  });

  it("takes the latest quarter's three months from the 10-Q filed after the 10-K, not its year to date", () => {
    const withYearToDate = appleFacts([
      fact({
        start: '2025-09-28',
        end: '2025-12-27',
        value: 0,
        form: '10-Q',
        filed: '2026-01-30',
        fiscalYear: 2026,
        fiscalPeriod: 'Q1',
        accession: Q1_2026,
        concept: 'us-gaap:NetIncomeLoss',
      }),
      // A six-month value ending at the same date is no quarter.
      fact({
        start: '2025-06-29',
        end: '2025-12-27',
        value: 999,
        form: '10-Q',
        filed: '2026-01-30',
        fiscalYear: 2026,
        fiscalPeriod: 'Q1',
        accession: Q1_2026,
      }),
    ]);
    const quarter = byName(selectFigures('AAPL', withYearToDate).figures);
    expect(quarter.get('revenue_latest_quarter')).toMatchObject({
      value: 140_000_000_000,
      label: 'Revenue, Q1 of fiscal year 2026',
      period: { fiscal_year: 2026, fiscal_period: 'Q1', start: '2025-09-28', end: '2025-12-27' },
      form: '10-Q',
      accession: Q1_2026,
    });
    expect(quarter.get('net_income_latest_quarter')?.value).toBe(0);
  });

  it("takes the year to date of that 10-Q and the same months a year before, of the annual figure's concept", () => {
    expect(named.get('revenue_year_to_date')).toMatchObject({
      value: 140_000_000_000,
      label: 'Revenue, fiscal year 2026 to date (through Q1)',
      period: { fiscal_year: 2026, fiscal_period: 'Q1', start: '2025-09-28', end: '2025-12-27' },
      accession: Q1_2026,
    });
    expect(named.get('revenue_year_to_date_prior_year')).toMatchObject({
      value: 124_300_000_000,
      label: 'Revenue, fiscal year 2025 to date (through Q1)',
      period: { fiscal_year: 2025, fiscal_period: 'Q1', start: '2024-09-29', end: '2024-12-28' },
    });
    // The 10-Q states no net income for the months a year before: no year to date for it.
    expect(named.has('net_income_year_to_date')).toBe(false);
    // A year to date of another concept than the annual figure's is not added to it.
    const facts = appleFacts();
    facts.facts = facts.facts.map((item) =>
      item.form === '10-Q' && item.unit === 'USD' ? { ...item, concept: 'us-gaap:Revenues' } : item,
    );
    expect(byName(selectFigures('AAPL', facts).figures).has('revenue_year_to_date')).toBe(false);
  });

  it("takes shares outstanding from the latest filing's cover page", () => {
    expect(named.get('shares_outstanding')).toMatchObject({
      value: 14_700_000_000,
      unit: 'shares',
      concept: 'dei:EntityCommonStockSharesOutstanding',
      accession: Q1_2026,
      label: 'Shares outstanding on 2026-01-16',
    });
  });

  it('never fills a figure the latest year lacks with an older year', () => {
    const facts = appleFacts();
    facts.facts = facts.facts.filter((item) => item.concept !== 'us-gaap:GrossProfit');
    facts.facts.push(fact({ start: '2023-10-01', end: '2024-09-28', concept: 'us-gaap:GrossProfit', value: 180_683_000_000 }));
    expect(byName(selectFigures('AAPL', facts).figures).has('gross_profit')).toBe(false);
  });

  it('labels sample facts, and says when a company reports none of the figures', () => {
    const sample = { ...appleFacts(), sample: true, facts: [] };
    const selected = selectFigures('AAPL', sample);
    expect(selected.figures).toEqual([]);
    expect(selected.notes).toEqual([
      'AAPL: figures from the bundled sample of SEC EDGAR data (offline mode), illustrative and not current.',
      "AAPL: the company's XBRL facts on SEC EDGAR hold none of the figures this report uses.",
    ]);
  });

  it('gives a symbol without SEC filings a note, not an error', () => {
    expect(noFilings('7203.T', 'unknown')).toEqual({
      symbol: '7203.T',
      company: null,
      figures: [],
      notes: [
        'No SEC filings for 7203.T: figures from filings cover companies that file with the SEC (US listings), so this report has no reported figures for it.',
      ],
      sample: false,
    });
  });
});
