// Ratios computed by the service from reported figures, each with its formula and the figures it is made of: the
// model is given them and writes about them, it never computes one (docs/ai.md#ratios).
import type { FinancialFigure, FinancialRatio } from '@fin/contracts';

interface RatioSpec {
  name: string;
  label: string;
  unit: FinancialRatio['unit'];
  formula: string;
  inputs: readonly string[];
  /** The value from the inputs' values (in `inputs` order); undefined when it means nothing (a zero or negative base). */
  compute(values: readonly number[]): number | undefined;
  /** The period the label names, from the inputs; the latest fiscal year when absent. */
  period?: (inputs: readonly FinancialFigure[]) => string;
}

const percentOf = (part: number, whole: number) => (whole > 0 ? (part / whole) * 100 : undefined);
/** Growth over a positive base only: from a loss or zero, a percentage says nothing. */
const growth = (now: number, before: number) => (before > 0 ? (now / before - 1) * 100 : undefined);

const RATIOS: readonly RatioSpec[] = [
  {
    name: 'gross_margin',
    label: 'Gross margin',
    unit: 'percent',
    formula: 'gross_profit / revenue × 100',
    inputs: ['gross_profit', 'revenue'],
    compute: ([profit = 0, revenue = 0]) => percentOf(profit, revenue),
  },
  {
    name: 'operating_margin',
    label: 'Operating margin',
    unit: 'percent',
    formula: 'operating_income / revenue × 100',
    inputs: ['operating_income', 'revenue'],
    compute: ([income = 0, revenue = 0]) => percentOf(income, revenue),
  },
  {
    name: 'net_margin',
    label: 'Net margin',
    unit: 'percent',
    formula: 'net_income / revenue × 100',
    inputs: ['net_income', 'revenue'],
    compute: ([income = 0, revenue = 0]) => percentOf(income, revenue),
  },
  {
    name: 'current_ratio',
    label: 'Current ratio',
    unit: 'ratio',
    formula: 'current_assets / current_liabilities',
    inputs: ['current_assets', 'current_liabilities'],
    compute: ([assets = 0, liabilities = 0]) => (liabilities > 0 ? assets / liabilities : undefined),
  },
  {
    name: 'debt_to_equity',
    label: 'Long-term debt to equity',
    unit: 'ratio',
    formula: "long_term_debt / stockholders_equity (non-current long-term debt; equity at the year's end)",
    inputs: ['long_term_debt', 'stockholders_equity'],
    compute: ([debt = 0, equity = 0]) => (equity > 0 ? debt / equity : undefined),
  },
  {
    name: 'free_cash_flow',
    label: 'Free cash flow',
    unit: 'USD',
    formula: 'operating_cash_flow − capital_expenditure',
    inputs: ['operating_cash_flow', 'capital_expenditure'],
    compute: ([operating = 0, capex = 0]) => operating - capex,
  },
  {
    name: 'revenue_growth_yoy',
    label: 'Revenue growth, year on year',
    unit: 'percent',
    formula: '(revenue / revenue_prior_year − 1) × 100',
    inputs: ['revenue', 'revenue_prior_year'],
    compute: ([now = 0, before = 0]) => growth(now, before),
  },
  {
    name: 'net_income_growth_yoy',
    label: 'Net income growth, year on year',
    unit: 'percent',
    formula: '(net_income / net_income_prior_year − 1) × 100',
    inputs: ['net_income', 'net_income_prior_year'],
    compute: ([now = 0, before = 0]) => growth(now, before),
  },
  {
    name: 'eps_growth_yoy',
    label: 'Diluted EPS growth, year on year',
    unit: 'percent',
    formula: '(eps_diluted / eps_diluted_prior_year − 1) × 100',
    inputs: ['eps_diluted', 'eps_diluted_prior_year'],
    compute: ([now = 0, before = 0]) => growth(now, before),
  },
  ...(['revenue', 'net_income'] as const).map((name): RatioSpec => ({
    name: `${name}_ttm`,
    label: `${name === 'revenue' ? 'Revenue' : 'Net income'}, trailing twelve months`,
    unit: 'USD',
    formula: `${name} + ${name}_year_to_date − ${name}_year_to_date_prior_year (the latest fiscal year, plus this year to date, less the same months a year before)`,
    inputs: [name, `${name}_year_to_date`, `${name}_year_to_date_prior_year`],
    compute: ([year = 0, toDate = 0, before = 0]) => year + toDate - before,
    period: (inputs) => `to ${inputs[1]?.period.end ?? ''}`,
  })),
];

/** Return on equity: over the average of the opening and closing equity when both are reported, else the closing. */
const ROE_AVERAGE: RatioSpec = {
  name: 'return_on_equity',
  label: 'Return on equity (average equity)',
  unit: 'percent',
  formula: 'net_income / ((stockholders_equity + stockholders_equity_prior_year) / 2) × 100',
  inputs: ['net_income', 'stockholders_equity', 'stockholders_equity_prior_year'],
  compute: ([income = 0, closing = 0, opening = 0]) => percentOf(income, (closing + opening) / 2),
};
const ROE_ENDING: RatioSpec = {
  name: 'return_on_equity',
  label: 'Return on equity (ending equity)',
  unit: 'percent',
  formula: 'net_income / stockholders_equity × 100 (equity at the year end: the opening equity is not reported)',
  inputs: ['net_income', 'stockholders_equity'],
  compute: ([income = 0, closing = 0]) => percentOf(income, closing),
};

/** Ratios carry 4 decimals: more than any text states, few enough to read. */
const round4 = (value: number) => Math.round(value * 10_000) / 10_000;

/**
 * The ratios of one company's figures (of the latest fiscal year, so a ratio never mixes periods; a trailing twelve
 * months adds the year to date and takes away the same months a year before, as its formula says). A ratio whose
 * inputs are not all reported, or whose base is zero or negative (a margin on no revenue, growth from a loss, ROE or
 * debt/equity on negative equity), is left out rather than shown as a meaningless number.
 */
export function computeRatios(figures: readonly FinancialFigure[]): FinancialRatio[] {
  const bySymbol = new Map<string, Map<string, FinancialFigure>>();
  for (const figure of figures) {
    const named = bySymbol.get(figure.symbol) ?? new Map<string, FinancialFigure>();
    named.set(figure.name, figure);
    bySymbol.set(figure.symbol, named);
  }
  const ratios: FinancialRatio[] = [];
  for (const [symbol, named] of bySymbol) {
    const year = named.get('revenue')?.period.fiscal_year ?? named.get('net_income')?.period.fiscal_year;
    const roe = named.has('stockholders_equity_prior_year') ? ROE_AVERAGE : ROE_ENDING;
    for (const spec of [...RATIOS.slice(0, 3), roe, ...RATIOS.slice(3)]) {
      const inputs = spec.inputs.map((name) => named.get(name));
      if (!inputs.every((input): input is FinancialFigure => input !== undefined)) continue;
      const value = spec.compute(inputs.map((input) => input.value));
      if (value === undefined || !Number.isFinite(value)) continue;
      ratios.push({
        symbol,
        name: spec.name,
        label: spec.period
          ? `${spec.label} ${spec.period(inputs)}`
          : year === undefined
            ? spec.label
            : `${spec.label}, fiscal year ${year}`,
        value: round4(value),
        unit: spec.unit,
        formula: spec.formula,
        inputs: [...spec.inputs],
      });
    }
  }
  return ratios;
}
