import type { FinancialFigure } from '@fin/contracts';
import { computeRatios } from '../../src/fundamentals/ratios';

/** A figure of the latest fiscal year with just what the ratios read. */
function figure(name: string, value: number, symbol = 'XYZ'): FinancialFigure {
  return {
    symbol,
    name,
    label: name,
    value,
    unit: name.startsWith('eps') ? 'USD/shares' : 'USD',
    period: { fiscal_year: 2025, fiscal_period: 'FY', start: '2024-01-01', end: '2024-12-31' },
    form: '10-K',
    filed: '2025-02-01',
    accession: '0000000001-25-000001',
    cik: '0000000001',
    concept: `us-gaap:${name}`,
    url: 'https://www.sec.gov/Archives/edgar/data/1/000000000125000001/',
    note: null,
  };
}

const values = (figures: FinancialFigure[]) => Object.fromEntries(computeRatios(figures).map((ratio) => [ratio.name, ratio.value]));

describe('ratios computed from figures', () => {
  const figures = [
    figure('revenue', 400),
    figure('revenue_prior_year', 320),
    figure('gross_profit', 180),
    figure('operating_income', 120),
    figure('net_income', 90),
    figure('net_income_prior_year', 60),
    figure('eps_diluted', 6.6),
    figure('eps_diluted_prior_year', 6),
    figure('stockholders_equity', 500),
    figure('stockholders_equity_prior_year', 400),
    figure('current_assets', 150),
    figure('current_liabilities', 120),
    figure('long_term_debt', 250),
    figure('operating_cash_flow', 110),
    figure('capital_expenditure', 30),
  ];

  it('computes each ratio from its stated formula', () => {
    expect(values(figures)).toEqual({
      gross_margin: 45,
      operating_margin: 30,
      net_margin: 22.5,
      return_on_equity: 20, // 90 / ((500 + 400) / 2)
      current_ratio: 1.25,
      debt_to_equity: 0.5,
      free_cash_flow: 80,
      revenue_growth_yoy: 25,
      net_income_growth_yoy: 50,
      eps_growth_yoy: 10,
    });
  });

  it('states each formula, unit and input, and the fiscal year', () => {
    const ratios = computeRatios(figures);
    expect(ratios.find((ratio) => ratio.name === 'gross_margin')).toEqual({
      symbol: 'XYZ',
      name: 'gross_margin',
      label: 'Gross margin, fiscal year 2025',
      value: 45,
      unit: 'percent',
      formula: 'gross_profit / revenue × 100',
      inputs: ['gross_profit', 'revenue'],
    });
    expect(ratios.find((ratio) => ratio.name === 'free_cash_flow')).toMatchObject({
      unit: 'USD',
      inputs: ['operating_cash_flow', 'capital_expenditure'],
    });
    expect(ratios.find((ratio) => ratio.name === 'current_ratio')?.unit).toBe('ratio');
  });

  it('takes ROE over average equity when the opening equity is reported, over ending equity otherwise, and says which', () => {
    const average = computeRatios(figures).find((ratio) => ratio.name === 'return_on_equity');
    expect(average?.formula).toContain('(stockholders_equity + stockholders_equity_prior_year) / 2');
    const ending = computeRatios(figures.filter((item) => item.name !== 'stockholders_equity_prior_year')).find(
      (ratio) => ratio.name === 'return_on_equity',
    );
    expect(ending).toMatchObject({
      value: 18,
      label: 'Return on equity (ending equity), fiscal year 2025',
      inputs: ['net_income', 'stockholders_equity'],
    });
  });

  it('computes a trailing twelve months from the latest year, this year to date and the same months a year before', () => {
    const toDate = {
      ...figure('revenue_year_to_date', 120),
      period: { fiscal_year: 2026, fiscal_period: 'Q1' as const, start: '2025-01-01', end: '2025-03-31' },
    };
    const ttm = computeRatios([figure('revenue', 400), toDate, figure('revenue_year_to_date_prior_year', 100)]).find(
      (ratio) => ratio.name === 'revenue_ttm',
    );
    expect(ttm).toMatchObject({
      value: 420,
      unit: 'USD',
      label: 'Revenue, trailing twelve months to 2025-03-31',
      inputs: ['revenue', 'revenue_year_to_date', 'revenue_year_to_date_prior_year'],
    });
  });

  it('rounds to 4 decimals', () => {
    expect(values([figure('revenue', 3), figure('net_income', 1)]).net_margin).toBe(33.3333);
  });

  it('leaves out ratios without their inputs or on a meaningless base: negative equity, growth from a loss, no revenue', () => {
    const troubled = values([
      figure('revenue', 0),
      figure('net_income', -50),
      figure('net_income_prior_year', -80),
      figure('stockholders_equity', -10),
      figure('long_term_debt', 40),
      figure('operating_cash_flow', -5),
      figure('capital_expenditure', 10),
    ]);
    expect(troubled).toEqual({ free_cash_flow: -15 });
  });

  it('keeps growth negative when revenue shrank, and the companies of a comparison apart', () => {
    const two = computeRatios([
      figure('revenue', 90, 'A'),
      figure('revenue_prior_year', 100, 'A'),
      figure('revenue', 200, 'B'),
      figure('revenue_prior_year', 100, 'B'),
    ]);
    expect(two.map((ratio) => [ratio.symbol, ratio.name, ratio.value])).toEqual([
      ['A', 'revenue_growth_yoy', -10],
      ['B', 'revenue_growth_yoy', 100],
    ]);
  });
});
