// Figures with provenance: a company's financial figures picked from its XBRL company facts (SEC EDGAR) by stated
// rules, each traced to the filing, concept and period it comes from. Pure: facts in, figures out. The rules are
// documented in docs/ai.md#figures-from-sec-filings; each is named where it is applied.
import type { FinancialFigure } from '@fin/contracts';
import type { CompanyFacts, Fact } from '@fin/edgar';

/** How a figure is reported: over a period (income statement, cash flow) or at a date (balance sheet). */
type Kind = 'duration' | 'instant';

interface FigureSpec {
  name: string;
  /** What it is, in words ("Revenue"); the period is added to make the label. */
  label: string;
  /** The concepts that report it, preferred first: the first one the company reported for the period is used. */
  concepts: readonly string[];
  kind: Kind;
  unit: 'USD' | 'USD/shares' | 'shares';
  /** Also taken for the year before the latest (growth, average equity). */
  priorYear?: boolean;
  /** Also taken for the latest quarter when a 10-Q was filed after the latest annual report. */
  quarter?: boolean;
  /** Also taken for the year to date of that 10-Q and the same months a year before: the inputs of a trailing twelve months. */
  trailing?: boolean;
}

const gaap = (...names: string[]) => names.map((name) => `us-gaap:${name}`);

/** The figures of a report, in the order they are shown. */
const FIGURE_SPECS: readonly FigureSpec[] = [
  {
    name: 'revenue',
    label: 'Revenue',
    // Revenues is total revenue where a company reports it; many report only revenue from contracts with customers
    // (ASC 606, since 2018), excluding or including the taxes they collect; SalesRevenueNet before 2018.
    concepts: gaap(
      'Revenues',
      'RevenueFromContractWithCustomerExcludingAssessedTax',
      'RevenueFromContractWithCustomerIncludingAssessedTax',
      'SalesRevenueNet',
    ),
    kind: 'duration',
    unit: 'USD',
    priorYear: true,
    quarter: true,
    trailing: true,
  },
  { name: 'gross_profit', label: 'Gross profit', concepts: gaap('GrossProfit'), kind: 'duration', unit: 'USD', quarter: true },
  {
    name: 'operating_income',
    label: 'Operating income',
    concepts: gaap('OperatingIncomeLoss'),
    kind: 'duration',
    unit: 'USD',
    quarter: true,
  },
  {
    name: 'net_income',
    label: 'Net income',
    concepts: gaap('NetIncomeLoss', 'ProfitLoss'),
    kind: 'duration',
    unit: 'USD',
    priorYear: true,
    quarter: true,
    trailing: true,
  },
  {
    name: 'eps_diluted',
    label: 'Diluted earnings per share',
    concepts: gaap('EarningsPerShareDiluted'),
    kind: 'duration',
    unit: 'USD/shares',
    priorYear: true,
    quarter: true,
  },
  { name: 'total_assets', label: 'Total assets', concepts: gaap('Assets'), kind: 'instant', unit: 'USD' },
  { name: 'total_liabilities', label: 'Total liabilities', concepts: gaap('Liabilities'), kind: 'instant', unit: 'USD' },
  {
    name: 'stockholders_equity',
    label: "Stockholders' equity",
    concepts: gaap('StockholdersEquity', 'StockholdersEquityIncludingPortionAttributableToNoncontrollingInterest'),
    kind: 'instant',
    unit: 'USD',
    priorYear: true,
  },
  { name: 'current_assets', label: 'Current assets', concepts: gaap('AssetsCurrent'), kind: 'instant', unit: 'USD' },
  { name: 'current_liabilities', label: 'Current liabilities', concepts: gaap('LiabilitiesCurrent'), kind: 'instant', unit: 'USD' },
  {
    name: 'cash',
    label: 'Cash and cash equivalents',
    concepts: gaap('CashAndCashEquivalentsAtCarryingValue', 'CashCashEquivalentsRestrictedCashAndRestrictedCashEquivalents'),
    kind: 'instant',
    unit: 'USD',
  },
  {
    name: 'long_term_debt',
    label: 'Long-term debt (non-current)',
    concepts: gaap('LongTermDebtNoncurrent', 'LongTermDebt'),
    kind: 'instant',
    unit: 'USD',
  },
  {
    name: 'operating_cash_flow',
    label: 'Cash from operating activities',
    concepts: gaap('NetCashProvidedByUsedInOperatingActivities'),
    kind: 'duration',
    unit: 'USD',
  },
  {
    name: 'capital_expenditure',
    label: 'Capital expenditure (payments for property, plant and equipment)',
    concepts: gaap('PaymentsToAcquirePropertyPlantAndEquipment', 'PaymentsToAcquireProductiveAssets'),
    kind: 'duration',
    unit: 'USD',
  },
];

/** Shares outstanding: the cover page's count (dei) of the latest filing, else the balance sheet's. */
const SHARES_CONCEPTS = ['dei:EntityCommonStockSharesOutstanding', 'us-gaap:CommonStockSharesOutstanding'];

/** Annual reports: 10-K (and its amendments and transition reports), and the foreign filers' 20-F and 40-F. */
const ANNUAL_FORM = /^(?:10-K|10-KT|20-F|40-F)(?:\/A)?$/;
const QUARTERLY_FORM = /^10-Q(?:\/A)?$/;

const DAY_MS = 86_400_000;
/** A fiscal year lasts 52 or 53 weeks, or a calendar year: 350–380 days takes all of them and no quarter or half. */
const YEAR_DAYS = { min: 350, max: 380 };
/** A fiscal quarter lasts 13 or 14 weeks, or three calendar months. */
const QUARTER_DAYS = { min: 80, max: 100 };

function lengthInDays(fact: Fact): number | null {
  return fact.start === null ? null : (Date.parse(fact.end) - Date.parse(fact.start)) / DAY_MS;
}

const isAnnualDuration = (fact: Fact) => {
  const days = lengthInDays(fact);
  return days !== null && days >= YEAR_DAYS.min && days <= YEAR_DAYS.max;
};
const isQuarterDuration = (fact: Fact) => {
  const days = lengthInDays(fact);
  return days !== null && days >= QUARTER_DAYS.min && days <= QUARTER_DAYS.max;
};

/** Whether two dates are within a week: the same day of a 52/53-week calendar, a year apart or not. */
const near = (a: string, b: string) => Math.abs(Date.parse(a) - Date.parse(b)) <= 7 * DAY_MS;
const dayAfter = (date: string) => new Date(Date.parse(date) + DAY_MS).toISOString().slice(0, 10);
const yearBefore = (date: string) => `${Number(date.slice(0, 4)) - 1}${date.slice(4)}`;

/** Newest filing first; at the same date the higher accession number (filed later that day) first. */
const byFiledDesc = (a: Fact, b: Fact) => b.filed.localeCompare(a.filed) || b.accession.localeCompare(a.accession);

/** A company's figures, the notes on them and what cites them. */
export interface Fundamentals {
  symbol: string;
  company: { name: string; cik: string } | null;
  figures: FinancialFigure[];
  /** Sentences the reader and the model are given about these figures (sample data, no filings, restatements). */
  notes: string[];
  /** Whether the facts came from the bundled sample (offline mode). */
  sample: boolean;
}

/**
 * The fiscal years of a company's annual periods. An XBRL fact's fiscal year (EDGAR's `fy`) is the year of the filing
 * that reported it, not of its period: the FY2025 10-K reports FY2023 and FY2024 as comparatives, with fy 2025. A
 * period's own fiscal year is the fiscal year of the annual report whose latest period it is; a period no report
 * closes (a comparative older than the facts held) counts whole years back from the nearest one that does.
 */
function annualCalendar(facts: readonly Fact[]) {
  const annual = facts.filter((fact) => ANNUAL_FORM.test(fact.form) && isAnnualDuration(fact));
  const ownEnd = new Map<string, Fact>();
  for (const fact of annual) {
    const seen = ownEnd.get(fact.accession);
    if (!seen || fact.end > seen.end) ownEnd.set(fact.accession, fact);
  }
  const known = new Map<string, number>();
  for (const fact of ownEnd.values()) known.set(fact.end, fact.fiscalYear);
  const ends = new Set(annual.map((fact) => fact.end));
  const yearOf = (end: string): number => {
    const exact = known.get(end);
    if (exact !== undefined) return exact;
    let best: { end: string; year: number } | undefined;
    for (const [knownEnd, year] of known) {
      if (!best || Math.abs(Date.parse(knownEnd) - Date.parse(end)) < Math.abs(Date.parse(best.end) - Date.parse(end))) {
        best = { end: knownEnd, year };
      }
    }
    if (!best) return Number(end.slice(0, 4));
    return best.year - Math.round((Date.parse(best.end) - Date.parse(end)) / (365.25 * DAY_MS));
  };
  const latestEnd = [...ends].sort().at(-1);
  const latestAnnualFiled = [...ownEnd.values()]
    .map((fact) => fact.filed)
    .sort()
    .at(-1);
  return { ends, yearOf, latestEnd, latestYear: latestEnd === undefined ? undefined : yearOf(latestEnd), latestAnnualFiled };
}

const grouped = new Intl.NumberFormat('en-US', { maximumFractionDigits: 4 });

/** Which other filings stated the same period of the same concept, and whether they said something else. */
function duplicateNote(chosen: Fact, others: readonly Fact[]): string | null {
  const earlier = others.filter((fact) => fact.accession !== chosen.accession);
  if (earlier.length === 0) return null;
  const restated = earlier.filter((fact) => fact.value !== chosen.value);
  const where = (fact: Fact) => `the ${fact.form} filed ${fact.filed} (${fact.accession})`;
  if (restated.length > 0) {
    const stated = restated.map((fact) => `${where(fact)} reported ${grouped.format(fact.value)}`).join('; ');
    return `Restated: ${stated}. The latest filing's value is used.`;
  }
  return `Also reported in ${earlier.map(where).join(', ')}; the latest filing is used.`;
}

function figureOf(
  symbol: string,
  cik: string,
  spec: { name: string; label: string; unit: string },
  chosen: Fact,
  sameperiod: readonly Fact[],
  period: { fiscal_year: number; fiscal_period: FinancialFigure['period']['fiscal_period'] },
): FinancialFigure {
  const when =
    period.fiscal_period === 'FY' ? `fiscal year ${period.fiscal_year}` : `${period.fiscal_period} of fiscal year ${period.fiscal_year}`;
  return {
    symbol,
    name: spec.name,
    label: `${spec.label}, ${when}`,
    value: chosen.value,
    unit: chosen.unit,
    period: { ...period, start: chosen.start, end: chosen.end },
    form: chosen.form,
    filed: chosen.filed,
    accession: chosen.accession,
    cik,
    concept: chosen.concept,
    url: chosen.url,
    note: duplicateNote(chosen, sameperiod),
  };
}

/**
 * The value of the first concept (in the spec's order) that reports the wanted period, from the latest filing that
 * states it, with every filing that stated the same period of that concept (for the note).
 */
function pick(candidates: readonly Fact[], concepts: readonly string[]): { chosen: Fact; sameperiod: Fact[] } | undefined {
  for (const concept of concepts) {
    const reported = candidates.filter((fact) => fact.concept === concept).sort(byFiledDesc);
    const chosen = reported[0];
    if (!chosen) continue;
    return { chosen, sameperiod: reported.filter((fact) => fact.start === chosen.start && fact.end === chosen.end) };
  }
  return undefined;
}

/**
 * The figures of one company from its XBRL facts:
 * - the latest fiscal year is the latest period of an annual report (10-K, 20-F, 40-F, amendments included);
 * - annual figures are taken from annual reports only, durations of 350–380 days (a quarter's value that a 10-K
 *   states is left out) and balances at the end of an annual period;
 * - each figure takes the first of its concepts (preferred first) that reports the period;
 * - a period stated by several filings (a comparative in a later report, an amendment) is taken from the latest
 *   filed, and the figure's note says which earlier filings stated it and whether they differed;
 * - the latest quarter is the period of the latest 10-Q filed after the latest annual report, durations of 80–100
 *   days (not the year to date); revenue and net income also for that 10-Q's year to date and the same months a
 *   year before, of the annual figure's concept (a trailing twelve months' inputs);
 * - shares outstanding are the latest filing's cover page count.
 * A figure no concept reports for the period is left out, never taken from another period.
 */
export function selectFigures(symbol: string, companyFacts: CompanyFacts): Fundamentals {
  const { company, facts } = companyFacts;
  const cik = company.cik;
  const calendar = annualCalendar(facts);
  const figures: FinancialFigure[] = [];
  const byConcept = new Map<string, Fact[]>();
  for (const fact of facts) {
    const list = byConcept.get(fact.concept);
    if (list) list.push(fact);
    else byConcept.set(fact.concept, [fact]);
  }
  const factsOf = (spec: { concepts: readonly string[]; unit: string }) =>
    spec.concepts.flatMap((concept) => byConcept.get(concept) ?? []).filter((fact) => fact.unit === spec.unit);

  const annualOf = (spec: FigureSpec, year: number) =>
    factsOf(spec).filter(
      (fact) =>
        ANNUAL_FORM.test(fact.form) &&
        (spec.kind === 'duration' ? isAnnualDuration(fact) : fact.start === null && calendar.ends.has(fact.end)) &&
        calendar.yearOf(fact.end) === year,
    );

  const { latestYear } = calendar;
  if (latestYear !== undefined) {
    for (const spec of FIGURE_SPECS) {
      const years: [number, string][] = [[latestYear, spec.name]];
      if (spec.priorYear) years.push([latestYear - 1, `${spec.name}_prior_year`]);
      for (const [year, name] of years) {
        const picked = pick(annualOf(spec, year), spec.concepts);
        if (!picked) continue;
        figures.push(
          figureOf(symbol, cik, { ...spec, name }, picked.chosen, picked.sameperiod, { fiscal_year: year, fiscal_period: 'FY' }),
        );
      }
    }
  }

  // The latest quarter: the 10-Q filed after the latest annual report, its own (latest) three-month period.
  const quarterly = facts.filter(
    (fact) => QUARTERLY_FORM.test(fact.form) && (calendar.latestAnnualFiled === undefined || fact.filed > calendar.latestAnnualFiled),
  );
  const latestQuarter = quarterly.filter(isQuarterDuration).sort((a, b) => b.end.localeCompare(a.end) || byFiledDesc(a, b))[0];
  if (latestQuarter && latestQuarter.fiscalPeriod !== 'FY') {
    for (const spec of FIGURE_SPECS.filter((candidate) => candidate.quarter)) {
      const candidates = factsOf(spec).filter(
        (fact) => QUARTERLY_FORM.test(fact.form) && isQuarterDuration(fact) && fact.end === latestQuarter.end,
      );
      const picked = pick(candidates, spec.concepts);
      if (!picked) continue;
      figures.push(
        figureOf(symbol, cik, { ...spec, name: `${spec.name}_latest_quarter` }, picked.chosen, picked.sameperiod, {
          fiscal_year: latestQuarter.fiscalYear,
          fiscal_period: latestQuarter.fiscalPeriod,
        }),
      );
    }
  }

  // The year to date of that 10-Q and the same months a year before (a comparative it states), of the concept the
  // annual figure was taken from: with the annual figure, a trailing twelve months (ratios.ts).
  const latestAnnualEnd = calendar.latestEnd;
  if (latestQuarter && latestQuarter.fiscalPeriod !== 'FY' && latestAnnualEnd !== undefined) {
    for (const spec of FIGURE_SPECS.filter((candidate) => candidate.trailing)) {
      const annual = figures.find((figure) => figure.name === spec.name);
      if (!annual) continue;
      const quarterlyFacts = factsOf(spec).filter((fact) => QUARTERLY_FORM.test(fact.form) && fact.concept === annual.concept);
      const current = pick(
        quarterlyFacts.filter(
          (fact) => fact.end === latestQuarter.end && fact.start !== null && near(fact.start, dayAfter(latestAnnualEnd)),
        ),
        [annual.concept],
      );
      const start = current?.chosen.start;
      if (!current || start === null || start === undefined) continue;
      const before = pick(
        quarterlyFacts.filter(
          (fact) => fact.start !== null && near(fact.start, yearBefore(start)) && near(fact.end, yearBefore(current.chosen.end)),
        ),
        [annual.concept],
      );
      if (!before) continue;
      const through = `fiscal year ${latestQuarter.fiscalYear} to date (through ${latestQuarter.fiscalPeriod})`;
      figures.push({
        ...figureOf(symbol, cik, { ...spec, name: `${spec.name}_year_to_date` }, current.chosen, current.sameperiod, {
          fiscal_year: latestQuarter.fiscalYear,
          fiscal_period: latestQuarter.fiscalPeriod,
        }),
        label: `${spec.label}, ${through}`,
      });
      figures.push({
        ...figureOf(symbol, cik, { ...spec, name: `${spec.name}_year_to_date_prior_year` }, before.chosen, before.sameperiod, {
          fiscal_year: latestQuarter.fiscalYear - 1,
          fiscal_period: latestQuarter.fiscalPeriod,
        }),
        label: `${spec.label}, fiscal year ${latestQuarter.fiscalYear - 1} to date (through ${latestQuarter.fiscalPeriod})`,
      });
    }
  }

  const shares = SHARES_CONCEPTS.map((concept) =>
    (byConcept.get(concept) ?? [])
      .filter((fact) => fact.unit === 'shares' && fact.start === null)
      .sort((a, b) => byFiledDesc(a, b) || b.end.localeCompare(a.end)),
  ).find((list) => list.length > 0)?.[0];
  if (shares) {
    const sameperiod = (byConcept.get(shares.concept) ?? []).filter((fact) => fact.unit === 'shares' && fact.end === shares.end);
    figures.push({
      ...figureOf(symbol, cik, { name: 'shares_outstanding', label: 'Shares outstanding', unit: 'shares' }, shares, sameperiod, {
        fiscal_year: shares.fiscalYear,
        fiscal_period: shares.fiscalPeriod,
      }),
      label: `Shares outstanding on ${shares.end}`,
    });
  }

  const notes: string[] = [];
  if (companyFacts.sample) {
    notes.push(`${symbol}: figures from the bundled sample of SEC EDGAR data (offline mode), illustrative and not current.`);
  }
  if (figures.length === 0) notes.push(`${symbol}: the company's XBRL facts on SEC EDGAR hold none of the figures this report uses.`);
  return { symbol, company: { name: company.name, cik }, figures, notes, sample: companyFacts.sample };
}

/** A symbol EDGAR does not know: no figures, and a note saying why (not an error). */
export function noFilings(symbol: string, reason: 'unknown' | 'unavailable' | 'not_configured'): Fundamentals {
  const why = {
    unknown: `No SEC filings for ${symbol}: figures from filings cover companies that file with the SEC (US listings), so this report has no reported figures for it.`,
    unavailable: `SEC EDGAR could not be read for ${symbol} just now, so this report has no reported figures for it.`,
    not_configured: `SEC EDGAR is not configured for this deployment, so this report has no reported figures for ${symbol}.`,
  }[reason];
  return { symbol, company: null, figures: [], notes: [why], sample: false };
}
