import type { CompanyFacts, Fact } from '@fin/edgar';

export const APPLE_CIK = '0000320193';
export const K_2025 = '0000320193-25-000079';
export const K_2024 = '0000320193-24-000123';
export const Q1_2026 = '0000320193-26-000006';

const folder = (accession: string) => `https://www.sec.gov/Archives/edgar/data/320193/${accession.replaceAll('-', '')}/`;

/** One XBRL fact, by default Apple's FY2025 10-K revenue; `over` changes what a case needs. */
export function fact(over: Partial<Fact> & { accession?: string }): Fact {
  const accession = over.accession ?? K_2025;
  return {
    concept: 'us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax',
    label: 'Revenue',
    unit: 'USD',
    value: 416_161_000_000,
    start: '2024-09-29',
    end: '2025-09-27',
    fiscalYear: 2025,
    fiscalPeriod: 'FY',
    form: '10-K',
    filed: '2025-10-31',
    url: folder(accession),
    ...over,
    accession,
  };
}

const FY25 = { start: '2024-09-29', end: '2025-09-27' };
const FY24 = { start: '2023-10-01', end: '2024-09-28' };
const FY23 = { start: '2022-09-25', end: '2023-09-30' };
/** What the FY2024 10-K reported (FY2024 and its comparative FY2023), filed 2024-11-01. */
const K24 = { accession: K_2024, filed: '2024-11-01', fiscalYear: 2024 };

/** Facts shaped like Apple's: two 10-Ks (the later restating one comparative) and a 10-Q after them. */
export function appleFacts(extra: Fact[] = []): CompanyFacts {
  const gaap = (name: string) => `us-gaap:${name}`;
  const facts: Fact[] = [
    // Revenue: the FY2025 10-K with its comparatives; the FY2024 10-K stated FY2024 at a different value (restated later).
    fact({ ...FY25, value: 416_161_000_000 }),
    fact({ ...FY24, value: 391_035_000_000 }),
    fact({ ...FY23, value: 383_285_000_000 }),
    fact({ ...FY24, ...K24, value: 390_000_000_000 }),
    fact({ ...FY23, ...K24, value: 383_285_000_000 }),
    // The fourth quarter as a 10-K states it in a note: a quarter's length, not the year.
    fact({ start: '2025-06-29', end: '2025-09-27', value: 102_466_000_000 }),
    // Older filings used Revenues (preferred when present for a period); not for FY2025.
    fact({
      ...FY23,
      ...K24,
      concept: gaap('Revenues'),
      value: 383_000_000_000,
      accession: '0000320193-23-000106',
      filed: '2023-11-03',
      fiscalYear: 2023,
    }),
    fact({ ...FY25, concept: gaap('GrossProfit'), value: 195_201_000_000 }),
    fact({ ...FY25, concept: gaap('OperatingIncomeLoss'), value: 133_050_000_000 }),
    fact({ ...FY25, concept: gaap('NetIncomeLoss'), value: 112_010_000_000 }),
    fact({ ...FY24, concept: gaap('NetIncomeLoss'), value: 93_736_000_000 }),
    fact({ ...FY25, concept: gaap('EarningsPerShareDiluted'), unit: 'USD/shares', value: 7.46 }),
    fact({ ...FY24, concept: gaap('EarningsPerShareDiluted'), unit: 'USD/shares', value: 6.08 }),
    fact({ ...FY25, concept: gaap('NetCashProvidedByUsedInOperatingActivities'), value: 111_482_000_000 }),
    fact({ ...FY25, concept: gaap('PaymentsToAcquirePropertyPlantAndEquipment'), value: 12_715_000_000 }),
    // Balances at the two year ends.
    fact({ start: null, end: FY25.end, concept: gaap('Assets'), value: 359_241_000_000 }),
    fact({ start: null, end: FY25.end, concept: gaap('Liabilities'), value: 285_508_000_000 }),
    fact({ start: null, end: FY25.end, concept: gaap('StockholdersEquity'), value: 73_733_000_000 }),
    fact({ start: null, end: FY24.end, concept: gaap('StockholdersEquity'), value: 56_950_000_000 }),
    fact({ start: null, end: FY25.end, concept: gaap('AssetsCurrent'), value: 147_957_000_000 }),
    fact({ start: null, end: FY25.end, concept: gaap('LiabilitiesCurrent'), value: 165_631_000_000 }),
    fact({ start: null, end: FY25.end, concept: gaap('CashAndCashEquivalentsAtCarryingValue'), value: 35_934_000_000 }),
    fact({ start: null, end: FY25.end, concept: gaap('LongTermDebtNoncurrent'), value: 78_328_000_000 }),
    // The 10-Q after the 10-K: the quarter (3 months) and the cover page's share count.
    fact({
      start: '2025-09-28',
      end: '2025-12-27',
      value: 140_000_000_000,
      form: '10-Q',
      filed: '2026-01-30',
      fiscalYear: 2026,
      fiscalPeriod: 'Q1',
      accession: Q1_2026,
    }),
    // The same quarter a year before, as the 10-Q states it for comparison.
    fact({
      start: '2024-09-29',
      end: '2024-12-28',
      value: 124_300_000_000,
      form: '10-Q',
      filed: '2026-01-30',
      fiscalYear: 2026,
      fiscalPeriod: 'Q1',
      accession: Q1_2026,
    }),
    fact({
      start: null,
      end: '2026-01-16',
      concept: 'dei:EntityCommonStockSharesOutstanding',
      unit: 'shares',
      value: 14_700_000_000,
      form: '10-Q',
      filed: '2026-01-30',
      fiscalYear: 2026,
      fiscalPeriod: 'Q1',
      accession: Q1_2026,
    }),
    fact({ start: null, end: '2025-10-17', concept: 'dei:EntityCommonStockSharesOutstanding', unit: 'shares', value: 14_800_000_000 }),
    ...extra,
  ];
  return {
    company: { cik: APPLE_CIK, symbol: 'AAPL', name: 'Apple Inc.', sample: false },
    facts,
    fetchedAt: '2026-02-01T00:00:00.000Z',
    sample: false,
  };
}
