// The bundled EDGAR sample: for each sample company the files SEC EDGAR serves — its company_tickers.json entry, its
// submissions file (filings.recent as columnar arrays), its XBRL company facts and the primary documents of its
// filings as HTML — built from companies.ts. Offline mode parses these with the same code as EDGAR's answers, and the
// test fakes serve them at EDGAR's paths. Filings, accession numbers, figures and text are invented and every
// document says so; only the CIKs, names and SIC codes are the companies' real EDGAR identifiers.
import { SAMPLE_COMPANIES, type SampleCompany } from './companies';
import { type EdgarCompanyFacts, type EdgarFactValue, type EdgarRecentFilings, type SampleEdgarData } from './wire-types';

const AS_OF = '2026-11-20';
const DISCLAIMER =
  'Sample EDGAR data for offline use and tests. The filings, accession numbers, figures and text are invented and illustrative; they are not filings of these companies and do not come from SEC EDGAR.';
const BANNER =
  'SAMPLE DOCUMENT FOR OFFLINE USE AND TESTS. The text and figures below are invented and illustrative; this is not a filing of the company named and it does not come from SEC EDGAR.';

const DAY = 86_400_000;

/** A value the tables of this file always hold (a year of three, a title of every item): a gap is a bug here. */
function required<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('EDGAR sample: a table entry is missing');
  return value;
}
const iso = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const ms = (date: string): number => Date.parse(`${date}T00:00:00Z`);
const addDays = (date: string, days: number): string => iso(ms(date) + days * DAY);

/** The last day of the month `months` after `date`'s month (calendar fiscal quarters end on month ends). */
function monthEndAfter(date: string, months: number): string {
  const d = new Date(ms(date));
  return iso(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months + 1, 0));
}

/** Filings are made on business days: a weekend date moves to the Monday. */
function weekday(date: string): string {
  const day = new Date(ms(date)).getUTCDay();
  return day === 6 ? addDays(date, 2) : day === 0 ? addDays(date, 1) : date;
}

const longDate = (date: string): string =>
  new Date(ms(date)).toLocaleDateString('en-US', { timeZone: 'UTC', year: 'numeric', month: 'long', day: 'numeric' });

const escapeHtml = (text: string): string => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

/** Billions with one decimal, as MD&A states them: "$416.2 billion". */
const billions = (value: number): string => `$${(value / 1e9).toFixed(1)} billion`;
const millions = (value: number): string => Math.round(value / 1e6).toLocaleString('en-US');
const percent = (fraction: number): string => `${(fraction * 100).toFixed(1)}%`;

// --- Periods -------------------------------------------------------------------------------------------------------

interface Period {
  start?: string;
  end: string;
}

interface Plan {
  company: SampleCompany;
  cik10: string;
  /** Fiscal year ends, newest first, with the one before the oldest (for the oldest year's start). */
  yearEnds: string[];
  years: Period[];
  /** The first two quarters after the latest year end, and the same quarters a year earlier. */
  quarters: [Period, Period];
  priorQuarters: [Period, Period];
}

function quarterEnd(company: SampleCompany, yearEnd: string, quarter: number): string {
  return company.weekBased ? addDays(yearEnd, 91 * quarter) : monthEndAfter(yearEnd, 3 * quarter);
}

function plan(company: SampleCompany): Plan {
  const [latest, , oldest] = company.fiscalYearEnds;
  const before = company.weekBased ? addDays(oldest, -364) : monthEndAfter(oldest, -12);
  const yearEnds = [...company.fiscalYearEnds, before];
  const years = company.fiscalYearEnds.map((end, index) => ({ start: addDays(required(yearEnds[index + 1]), 1), end }));
  const quartersAfter = (yearEnd: string): [Period, Period] => {
    const q1 = quarterEnd(company, yearEnd, 1);
    return [
      { start: addDays(yearEnd, 1), end: q1 },
      { start: addDays(q1, 1), end: quarterEnd(company, yearEnd, 2) },
    ];
  };
  return {
    company,
    cik10: String(company.cik).padStart(10, '0'),
    yearEnds,
    years,
    quarters: quartersAfter(latest),
    priorQuarters: quartersAfter(company.fiscalYearEnds[1]),
  };
}

/** The fiscal year EDGAR's `fy` names for a year ending on `end` (companies name it by the year it ends in). */
const fiscalYear = (end: string): number => Number(end.slice(0, 4));

// --- Figures -------------------------------------------------------------------------------------------------------

/** Duration figures of one period, in USD (EPS in USD per share). */
interface Flows {
  revenue: number;
  costOfRevenue: number;
  grossProfit: number;
  operatingIncome: number;
  netIncome: number;
  eps: number;
  operatingCashFlow: number;
  capex: number;
}

interface Balance {
  assets: number;
  liabilities: number;
  equity: number;
  assetsCurrent: number;
  liabilitiesCurrent: number;
  cash: number;
  longTermDebt: number;
}

const round = (value: number, unit: number): number => Math.round(value / unit) * unit;

function flows(revenue: number, grossMargin: number, operatingMargin: number, netMargin: number, shares: number, c: SampleCompany): Flows {
  const r = round(revenue, 1e6);
  const grossProfit = round(r * grossMargin, 1e6);
  const netIncome = round(r * netMargin, 1e6);
  return {
    revenue: r,
    costOfRevenue: r - grossProfit,
    grossProfit,
    operatingIncome: round(r * operatingMargin, 1e6),
    netIncome,
    eps: Math.round((netIncome / shares) * 100) / 100,
    operatingCashFlow: round(netIncome * c.cashConversion, 1e6),
    capex: round(r * c.capexRatio, 1e6),
  };
}

/** Fiscal year `index` (0 = latest): EPS and net margin as the sample market data states them. */
function yearFlows(c: SampleCompany, index: number): Flows {
  const shares = required(c.dilutedShares[index]) * 1e9;
  const netIncome = required(c.eps[index]) * shares;
  const shift = index * 0.005;
  const result = flows(
    netIncome / required(c.netMargin[index]),
    c.grossMargin - shift,
    c.operatingMargin - shift,
    required(c.netMargin[index]),
    shares,
    c,
  );
  // The annual EPS is the sample's own figure, not one recomputed from rounded amounts.
  return { ...result, eps: required(c.eps[index]) };
}

/** Quarter `q` (0 or 1) after the latest year end (`current`) or the same quarter a year earlier. */
function quarterFlows(c: SampleCompany, q: 0 | 1, current: boolean): Flows {
  const base = yearFlows(c, 0).revenue * c.quarterShares[q];
  const revenue = current ? base * (1 + c.quarterGrowth) : base;
  const netMargin = current ? c.quarterNetMargin : c.netMargin[0];
  return flows(revenue, c.grossMargin, c.operatingMargin, netMargin, c.dilutedShares[0] * 1e9, c);
}

const sumFlows = (a: Flows, b: Flows, shares: number): Flows => ({
  revenue: a.revenue + b.revenue,
  costOfRevenue: a.costOfRevenue + b.costOfRevenue,
  grossProfit: a.grossProfit + b.grossProfit,
  operatingIncome: a.operatingIncome + b.operatingIncome,
  netIncome: a.netIncome + b.netIncome,
  eps: Math.round(((a.netIncome + b.netIncome) / shares) * 100) / 100,
  operatingCashFlow: a.operatingCashFlow + b.operatingCashFlow,
  capex: a.capex + b.capex,
});

/** The balance sheet at a date, scaled from the latest year end's. */
function balance(c: SampleCompany, scale: number): Balance {
  const b = c.balance;
  const at = (billions: number) => round(billions * 1e9 * scale, 1e6);
  const assets = at(b.assets);
  const equity = at(b.equity);
  return {
    assets,
    liabilities: assets - equity,
    equity,
    assetsCurrent: at(b.assetsCurrent),
    liabilitiesCurrent: at(b.liabilitiesCurrent),
    cash: at(b.cash),
    longTermDebt: at(b.longTermDebt),
  };
}

const YEAR_SCALES = [1, 0.93, 0.86];
const QUARTER_SCALES = [1.015, 1.03];

// --- Filings -------------------------------------------------------------------------------------------------------

interface SampleFiling {
  accession: string;
  form: '10-K' | '10-Q' | '8-K';
  filed: string;
  reportDate: string;
  items: string[];
  primaryDocument: string;
  /** The period and fiscal year/period of a 10-K or 10-Q. */
  fy?: number;
  fp?: 'FY' | 'Q1' | 'Q2';
  html: string;
}

const ITEM_TITLES: Record<string, string> = {
  '1.01': 'Entry into a Material Definitive Agreement',
  '2.02': 'Results of Operations and Financial Condition',
  '5.02':
    'Departure of Directors or Certain Officers; Election of Directors; Appointment of Certain Officers; Compensatory Arrangements of Certain Officers',
  '8.01': 'Other Events',
  '9.01': 'Financial Statements and Exhibits',
};

interface DocumentSection {
  part?: string;
  item: string;
  title: string;
  /** Paragraphs; a paragraph starting with "**" is a bold sub-heading. Raw HTML (a table) starts with "<". */
  body: string[];
}

function renderDocument(c: SampleCompany, form: string, cover: string[], sections: DocumentSection[], withContents: boolean): string {
  const p = (text: string) =>
    text.startsWith('<')
      ? text
      : text.startsWith('**')
        ? `<p style="margin-top:12pt"><span style="font-weight:700;font-style:italic">${escapeHtml(text.slice(2))}</span></p>`
        : `<p style="text-align:justify">${escapeHtml(text)}</p>`;
  const heading = (section: DocumentSection) =>
    `<p style="margin-top:18pt"><span style="font-weight:700">Item ${section.item}.&#160;&#160;&#160;&#160;${escapeHtml(section.title)}</span></p>`;
  const contents = withContents
    ? [
        '<p style="text-align:center"><span style="font-weight:700">TABLE OF CONTENTS</span></p>',
        '<table style="width:100%">',
        ...sections.map(
          (section, index) =>
            `${section.part && section.part !== sections[index - 1]?.part ? `<tr><td colspan="3"><span style="font-weight:700">Part ${section.part}</span></td></tr>` : ''}<tr><td><a href="#i${index}">Item ${section.item}.</a></td><td><a href="#i${index}">${escapeHtml(section.title)}</a></td><td>${index + 1}</td></tr>`,
        ),
        '</table>',
      ]
    : [];
  const body = sections.flatMap((section, index) => [
    ...(section.part && section.part !== sections[index - 1]?.part
      ? [`<p style="text-align:center;margin-top:18pt"><span style="font-weight:700">PART ${section.part}</span></p>`]
      : []),
    `<div id="i${index}">${heading(section)}</div>`,
    ...section.body.map(p),
    '<hr style="page-break-after:always"/><p style="text-align:center"><a href="#toc">Table of Contents</a></p>',
  ]);
  return [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:ix="http://www.xbrl.org/2013/inlineXBRL">',
    `<head><meta http-equiv="Content-Type" content="text/html"/><title>${escapeHtml(c.ticker.toLowerCase())} ${form} (sample)</title>`,
    '<style type="text/css">p { margin: 0 } td { vertical-align: bottom }</style></head>',
    '<body>',
    `<div style="display:none"><ix:header><ix:references><link:schemaRef xmlns:link="http://www.xbrl.org/2003/linkbase" href="${c.ticker.toLowerCase()}-sample.xsd"/></ix:references></ix:header></div>`,
    '<script type="text/javascript">window.sampleDocument = true;</script>',
    `<p style="text-align:center;border:1px solid #000"><span style="font-weight:700">${escapeHtml(BANNER)}</span></p>`,
    '<p style="text-align:center"><span style="font-weight:700">UNITED STATES<br/>SECURITIES AND EXCHANGE COMMISSION</span></p>',
    '<p style="text-align:center">Washington, D.C. 20549</p>',
    `<p style="text-align:center"><span style="font-weight:700">FORM ${form}</span></p>`,
    ...cover.map((line) => `<p style="text-align:center">${escapeHtml(line)}</p>`),
    `<p style="text-align:center"><span style="font-weight:700">${escapeHtml(c.name)}</span></p>`,
    `<p style="text-align:center">(Exact name of Registrant as specified in its charter) &#8212; Commission File Number: ${c.fileNumber}</p>`,
    '<div id="toc"></div>',
    ...contents,
    ...body,
    '<p>SIGNATURES</p>',
    `<p>Pursuant to the requirements of the Securities Exchange Act of 1934, the Registrant has duly caused this report to be signed on its behalf by the undersigned, thereunto duly authorized. (Sample: no one signed this document.)</p>`,
    '</body></html>',
  ].join('\n');
}

type Column = { label: string; figures: Flows };

function statementTable(caption: string, columns: Column[]): string {
  const row = (label: string, pick: (f: Flows) => string) =>
    `<tr><td>${escapeHtml(label)}</td>${columns.map((column) => `<td style="text-align:right">${pick(column.figures)}</td>`).join('')}</tr>`;
  return [
    '<table style="width:100%;border-collapse:collapse">',
    `<tr><td><span style="font-weight:700">${escapeHtml(caption)}</span> (in millions, except per-share amounts)</td>${columns.map((column) => `<td style="text-align:right">${escapeHtml(column.label)}</td>`).join('')}</tr>`,
    row('Net sales', (f) => `$&#160;${millions(f.revenue)}`),
    row('Cost of sales', (f) => millions(f.costOfRevenue)),
    row('Gross margin', (f) => millions(f.grossProfit)),
    row('Operating income', (f) => millions(f.operatingIncome)),
    row('Net income', (f) => `$&#160;${millions(f.netIncome)}`),
    row('Diluted earnings per share', (f) => `$&#160;${f.eps.toFixed(2)}`),
    '</table>',
  ].join('');
}

function change(now: number, before: number): string {
  const rate = (now - before) / Math.abs(before);
  return `${rate >= 0 ? 'an increase' : 'a decrease'} of ${Math.abs(rate * 100).toFixed(0)}%`;
}

function annualReport(pl: Plan, yearIndex: number): DocumentSection[] {
  const c = pl.company;
  const year = fiscalYear(required(pl.years[yearIndex]).end);
  const now = yearFlows(c, yearIndex);
  const before = yearIndex + 1 < 3 ? yearFlows(c, yearIndex + 1) : undefined;
  const b = balance(c, required(YEAR_SCALES[yearIndex]));
  const columns: Column[] = [0, 1, 2]
    .map((offset) => yearIndex + offset)
    .filter((index) => index < 3)
    .map((index) => ({ label: `Fiscal ${fiscalYear(required(pl.years[index]).end)}`, figures: yearFlows(c, index) }));
  return [
    { part: 'I', item: '1', title: 'Business', body: c.business },
    {
      part: 'I',
      item: '1A',
      title: 'Risk Factors',
      body: [
        'The Company’s business, financial condition and results of operations are subject to risks, including those described below. Any of them could cause actual results to differ materially from past results.',
        ...c.risks.flatMap(([title, text]) => [`**${title}`, text]),
      ],
    },
    { part: 'I', item: '1B', title: 'Unresolved Staff Comments', body: ['None.'] },
    {
      part: 'I',
      item: '1C',
      title: 'Cybersecurity',
      body: [
        'The Company maintains a program to assess, identify and manage cybersecurity risks, overseen by the Audit Committee of the Board.',
      ],
    },
    {
      part: 'I',
      item: '2',
      title: 'Properties',
      body: ['The Company’s headquarters are located in the United States. It owns or leases facilities worldwide.'],
    },
    {
      part: 'I',
      item: '3',
      title: 'Legal Proceedings',
      body: ['The Company is party to various legal proceedings arising in the ordinary course of business.'],
    },
    { part: 'I', item: '4', title: 'Mine Safety Disclosures', body: ['Not applicable.'] },
    {
      part: 'II',
      item: '5',
      title: 'Market for Registrant’s Common Equity, Related Stockholder Matters and Issuer Purchases of Equity Securities',
      body: [`The Company’s common stock is traded on The Nasdaq Stock Market LLC under the symbol ${c.ticker}.`],
    },
    { part: 'II', item: '6', title: '[Reserved]', body: [] },
    {
      part: 'II',
      item: '7',
      title: 'Management’s Discussion and Analysis of Financial Condition and Results of Operations',
      body: [
        `**Fiscal ${year} Highlights`,
        `Total net sales were ${billions(now.revenue)} in fiscal ${year}${before ? `, compared with ${billions(before.revenue)} in fiscal ${year - 1}, ${change(now.revenue, before.revenue)}` : ''}. The change was driven by ${c.drivers}.`,
        `Gross margin was ${billions(now.grossProfit)}, or ${percent(now.grossProfit / now.revenue)} of net sales. Operating income was ${billions(now.operatingIncome)}.`,
        `Net income was ${billions(now.netIncome)}, or $${now.eps.toFixed(2)} per diluted share, and net margin was ${percent(now.netIncome / now.revenue)}${before ? `, compared with $${before.eps.toFixed(2)} per diluted share in fiscal ${year - 1}` : ''}.`,
        '**Liquidity and Capital Resources',
        `Cash generated by operating activities was ${billions(now.operatingCashFlow)}, and payments for property, plant and equipment were ${billions(now.capex)}. At the end of fiscal ${year} the Company held ${billions(b.cash)} in cash and cash equivalents, and its long-term debt was ${billions(b.longTermDebt)}.`,
      ],
    },
    {
      part: 'II',
      item: '7A',
      title: 'Quantitative and Qualitative Disclosures About Market Risk',
      body: [
        'The Company is exposed to interest rate and foreign currency exchange rate risk, which it manages in part with derivative instruments.',
      ],
    },
    {
      part: 'II',
      item: '8',
      title: 'Financial Statements and Supplementary Data',
      body: [
        statementTable('Consolidated Statements of Operations', columns),
        `Total assets were ${billions(b.assets)} and total shareholders’ equity was ${billions(b.equity)} at the end of fiscal ${year}.`,
      ],
    },
    {
      part: 'II',
      item: '9',
      title: 'Changes in and Disagreements with Accountants on Accounting and Financial Disclosure',
      body: ['None.'],
    },
    {
      part: 'II',
      item: '9A',
      title: 'Controls and Procedures',
      body: ['Management concluded that the Company’s disclosure controls and procedures were effective.'],
    },
    { part: 'II', item: '9B', title: 'Other Information', body: ['None.'] },
    {
      part: 'III',
      item: '10',
      title: 'Directors, Executive Officers and Corporate Governance',
      body: ['Incorporated by reference to the Company’s Proxy Statement.'],
    },
    { part: 'IV', item: '15', title: 'Exhibit and Financial Statement Schedules', body: ['See the Exhibit Index.'] },
    { part: 'IV', item: '16', title: 'Form 10-K Summary', body: ['None.'] },
  ];
}

function quarterlyReport(pl: Plan, q: 0 | 1): DocumentSection[] {
  const c = pl.company;
  const now = quarterFlows(c, q, true);
  const before = quarterFlows(c, q, false);
  const quarterName = q === 0 ? 'first' : 'second';
  const fy = fiscalYear(required(pl.years[0]).end) + 1;
  return [
    {
      part: 'I',
      item: '1',
      title: 'Financial Statements',
      body: [
        statementTable('Condensed Consolidated Statements of Operations (Unaudited)', [
          { label: 'Three months, current', figures: now },
          { label: 'Three months, prior year', figures: before },
        ]),
      ],
    },
    {
      part: 'I',
      item: '2',
      title: 'Management’s Discussion and Analysis of Financial Condition and Results of Operations',
      body: [
        `Total net sales for the ${quarterName} quarter of fiscal ${fy} were ${billions(now.revenue)}, compared with ${billions(before.revenue)} in the same quarter a year earlier, ${change(now.revenue, before.revenue)}. The change reflected ${c.quarterDriver}.`,
        `Net income for the quarter was ${billions(now.netIncome)}, or $${now.eps.toFixed(2)} per diluted share.`,
      ],
    },
    {
      part: 'I',
      item: '3',
      title: 'Quantitative and Qualitative Disclosures About Market Risk',
      body: ['There have been no material changes to the Company’s market risk since its most recent annual report.'],
    },
    { part: 'I', item: '4', title: 'Controls and Procedures', body: ['The Company’s disclosure controls and procedures were effective.'] },
    {
      part: 'II',
      item: '1',
      title: 'Legal Proceedings',
      body: ['See the legal proceedings described in the Company’s most recent annual report.'],
    },
    {
      part: 'II',
      item: '1A',
      title: 'Risk Factors',
      body: [
        'The risk factors in the Company’s most recent Form 10-K continue to apply, supplemented by the following.',
        `**${c.quarterRisk[0]}`,
        c.quarterRisk[1],
      ],
    },
    {
      part: 'II',
      item: '2',
      title: 'Unregistered Sales of Equity Securities and Use of Proceeds',
      body: ['The Company repurchased shares of its common stock during the quarter under its authorised program.'],
    },
    { part: 'II', item: '5', title: 'Other Information', body: ['None.'] },
    { part: 'II', item: '6', title: 'Exhibits', body: ['See the Exhibit Index.'] },
  ];
}

function currentReport(c: SampleCompany, items: string[], eventDate: string, what: Record<string, string>): DocumentSection[] {
  return items.map((item) => ({
    item,
    title: required(ITEM_TITLES[item]),
    body: [
      item === '9.01'
        ? '(d) Exhibits. Exhibit 99.1 Press release (sample). Exhibit 104 Cover Page Interactive Data File (embedded within the Inline XBRL document).'
        : `On ${longDate(eventDate)}, ${required(what[item])}`,
    ],
  }));
}

// --- Company facts -------------------------------------------------------------------------------------------------

const CONCEPTS: Record<string, string> = {
  Revenues: 'Revenues',
  RevenueFromContractWithCustomerExcludingAssessedTax: 'Revenue from Contract with Customer, Excluding Assessed Tax',
  CostOfRevenue: 'Cost of Revenue',
  GrossProfit: 'Gross Profit',
  OperatingIncomeLoss: 'Operating Income (Loss)',
  NetIncomeLoss: 'Net Income (Loss) Attributable to Parent',
  EarningsPerShareDiluted: 'Earnings Per Share, Diluted',
  NetCashProvidedByUsedInOperatingActivities: 'Net Cash Provided by (Used in) Operating Activities',
  PaymentsToAcquirePropertyPlantAndEquipment: 'Payments to Acquire Property, Plant, and Equipment',
  Assets: 'Assets',
  Liabilities: 'Liabilities',
  StockholdersEquity: 'Stockholders’ Equity Attributable to Parent',
  AssetsCurrent: 'Assets, Current',
  LiabilitiesCurrent: 'Liabilities, Current',
  CashAndCashEquivalentsAtCarryingValue: 'Cash and Cash Equivalents, at Carrying Value',
  LongTermDebtNoncurrent: 'Long-Term Debt, Excluding Current Maturities',
};

const FLOW_CONCEPTS: Array<[string, keyof Flows]> = [
  ['@revenue', 'revenue'],
  ['CostOfRevenue', 'costOfRevenue'],
  ['GrossProfit', 'grossProfit'],
  ['OperatingIncomeLoss', 'operatingIncome'],
  ['NetIncomeLoss', 'netIncome'],
  ['EarningsPerShareDiluted', 'eps'],
];
const CASH_CONCEPTS: Array<[string, keyof Flows]> = [
  ['NetCashProvidedByUsedInOperatingActivities', 'operatingCashFlow'],
  ['PaymentsToAcquirePropertyPlantAndEquipment', 'capex'],
];
const BALANCE_CONCEPTS: Array<[string, keyof Balance]> = [
  ['Assets', 'assets'],
  ['Liabilities', 'liabilities'],
  ['StockholdersEquity', 'equity'],
  ['AssetsCurrent', 'assetsCurrent'],
  ['LiabilitiesCurrent', 'liabilitiesCurrent'],
  ['CashAndCashEquivalentsAtCarryingValue', 'cash'],
  ['LongTermDebtNoncurrent', 'longTermDebt'],
];

/**
 * EDGAR's `frame`: the calendar period a value stands for, given to one value per period (the last filed) — CY2025
 * for a year of 365 ± 30 days, CY2025Q3 for a quarter of 91 ± 30 days, CY2025Q3I for an instant (the nearest
 * calendar quarter end); none for other durations (six months to date).
 */
function frameOf(start: string | undefined, end: string): string | undefined {
  if (start === undefined) {
    const d = new Date(ms(end) + 45 * DAY);
    const quarterStartMonth = Math.floor(d.getUTCMonth() / 3) * 3;
    const nearest = new Date(Date.UTC(d.getUTCFullYear(), quarterStartMonth, 0));
    return `CY${nearest.getUTCFullYear()}Q${Math.floor(nearest.getUTCMonth() / 3) + 1}I`;
  }
  const days = (ms(end) - ms(start)) / DAY + 1;
  const middle = new Date((ms(start) + ms(end)) / 2);
  if (Math.abs(days - 365) <= 30) return `CY${middle.getUTCFullYear()}`;
  if (Math.abs(days - 91) <= 30) return `CY${middle.getUTCFullYear()}Q${Math.floor(middle.getUTCMonth() / 3) + 1}`;
  return undefined;
}

class FactsBuilder {
  private readonly concepts = new Map<string, Map<string, EdgarFactValue[]>>();

  add(concept: string, unit: string, period: Period, val: number, filing: SampleFiling): void {
    let units = this.concepts.get(concept);
    if (!units) this.concepts.set(concept, (units = new Map<string, EdgarFactValue[]>()));
    const values = units.get(unit) ?? [];
    units.set(unit, values);
    values.push({
      ...(period.start ? { start: period.start } : {}),
      end: period.end,
      val,
      accn: filing.accession,
      fy: filing.fy ?? null,
      fp: filing.fp ?? null,
      form: filing.form,
      filed: filing.filed,
    });
  }

  build(c: SampleCompany, sharesOutstanding: EdgarFactValue[]): EdgarCompanyFacts {
    const usGaap: EdgarCompanyFacts['facts'][string] = {};
    for (const [concept, units] of this.concepts) {
      const unitsOut: Record<string, EdgarFactValue[]> = {};
      for (const [unit, values] of units) unitsOut[unit] = withFrames(values);
      usGaap[concept] = { label: required(CONCEPTS[concept]), description: `${required(CONCEPTS[concept])} (sample).`, units: unitsOut };
    }
    return {
      cik: c.cik,
      entityName: c.name,
      facts: {
        dei: {
          EntityCommonStockSharesOutstanding: {
            label: 'Entity Common Stock, Shares Outstanding',
            description:
              'Indicate number of shares or other units outstanding of each of registrant’s classes of capital or other ownership interest (sample).',
            units: { shares: withFrames(sharesOutstanding) },
          },
        },
        'us-gaap': usGaap,
      },
    };
  }
}

/** EDGAR lists a concept's values oldest period first, and frames the last filed value of each period. */
function withFrames(values: EdgarFactValue[]): EdgarFactValue[] {
  const sorted = [...values].sort(
    (a, b) => a.end.localeCompare(b.end) || (a.start ?? '').localeCompare(b.start ?? '') || a.filed.localeCompare(b.filed),
  );
  const framed = new Map<string, EdgarFactValue>();
  for (const value of sorted) {
    const frame = frameOf(value.start, value.end);
    if (!frame) continue;
    const current = framed.get(frame);
    if (!current || value.filed > current.filed) framed.set(frame, value);
  }
  const chosen = new Map([...framed].map(([frame, value]) => [value, frame]));
  return sorted.map((value) => {
    const frame = chosen.get(value);
    return frame ? { ...value, frame } : value;
  });
}

// --- One company ---------------------------------------------------------------------------------------------------

interface CompanySample {
  filings: SampleFiling[];
  facts: EdgarCompanyFacts;
}

function companySample(c: SampleCompany): CompanySample {
  const pl = plan(c);
  const lower = c.ticker.toLowerCase();
  const compact = (date: string) => date.replaceAll('-', '');
  const sequence = new Map<string, number>();
  const accession = (filed: string) => {
    const yy = filed.slice(2, 4);
    const next = (sequence.get(yy) ?? 900_100) + 7;
    sequence.set(yy, next);
    return `${pl.cik10}-${yy}-${String(next).padStart(6, '0')}`;
  };
  const filings: SampleFiling[] = [];
  const file = (filing: Omit<SampleFiling, 'accession'>) => {
    const made = { ...filing, accession: accession(filing.filed) };
    filings.push(made);
    return made;
  };
  const facts = new FactsBuilder();
  const sharesOutstanding: EdgarFactValue[] = [];
  const coverShares = (filing: SampleFiling, scale: number) =>
    sharesOutstanding.push({
      end: addDays(filing.filed, -14),
      val: Math.round(c.sharesOutstandingMillions * scale * 1000) * 1000,
      accn: filing.accession,
      fy: filing.fy ?? null,
      fp: filing.fp ?? null,
      form: filing.form,
      filed: filing.filed,
    });
  const revenueConcept = c.revenueConcept;
  const addFlows = (filing: SampleFiling, period: Period, f: Flows, withCash: boolean, withIncome = true) => {
    if (withIncome)
      for (const [concept, key] of FLOW_CONCEPTS)
        facts.add(concept === '@revenue' ? revenueConcept : concept, key === 'eps' ? 'USD/shares' : 'USD', period, f[key], filing);
    if (withCash) for (const [concept, key] of CASH_CONCEPTS) facts.add(concept, 'USD', period, f[key], filing);
  };
  const addBalance = (filing: SampleFiling, end: string, b: Balance) => {
    for (const [concept, key] of BALANCE_CONCEPTS) facts.add(concept, 'USD', { end }, b[key], filing);
  };

  const results8k = (filed: string) =>
    file({
      form: '8-K',
      filed,
      reportDate: filed,
      items: ['2.02', '9.01'],
      primaryDocument: `${lower}-${compact(filed)}.htm`,
      html: '',
    });

  // The 10-Ks of the two latest fiscal years (each with its results 8-K), then two 10-Qs and other 8-Ks.
  for (const yearIndex of [1, 0]) {
    const end = required(pl.years[yearIndex]).end;
    const filed = weekday(addDays(end, 33));
    const release = results8k(weekday(addDays(filed, -2)));
    release.html = renderDocument(
      c,
      '8-K',
      [`Date of Report (Date of earliest event reported): ${longDate(release.reportDate)}`],
      currentReport(c, release.items, release.reportDate, {
        '2.02': `the Company issued a press release announcing its financial results for the fiscal year ended ${longDate(end)}: net sales of ${billions(yearFlows(c, yearIndex).revenue)} and diluted earnings per share of $${yearFlows(c, yearIndex).eps.toFixed(2)}. The press release is furnished as Exhibit 99.1.`,
      }),
      false,
    );
    const tenK = file({
      form: '10-K',
      filed,
      reportDate: end,
      items: [],
      primaryDocument: `${lower}-${compact(end)}.htm`,
      fy: fiscalYear(end),
      fp: 'FY',
      html: '',
    });
    tenK.html = renderDocument(
      c,
      '10-K',
      [
        `ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934`,
        `For the fiscal year ended ${longDate(end)}`,
      ],
      annualReport(pl, yearIndex),
      true,
    );
    for (let index = yearIndex; index < Math.min(3, yearIndex + 3); index++)
      addFlows(tenK, required(pl.years[index]), yearFlows(c, index), true);
    for (let index = yearIndex; index < Math.min(3, yearIndex + 2); index++)
      addBalance(tenK, required(pl.years[index]).end, balance(c, required(YEAR_SCALES[index])));
    coverShares(tenK, yearIndex === 0 ? 1.004 : 1.012);
  }

  const dilutedShares = c.dilutedShares[0] * 1e9;
  const latestYearEnd = required(pl.years[0]).end;
  const fy = fiscalYear(latestYearEnd) + 1;
  for (const q of [0, 1] as const) {
    const period = pl.quarters[q];
    const filed = weekday(addDays(period.end, 35));
    const release = results8k(weekday(addDays(filed, -2)));
    const now = quarterFlows(c, q, true);
    release.html = renderDocument(
      c,
      '8-K',
      [`Date of Report (Date of earliest event reported): ${longDate(release.reportDate)}`],
      currentReport(c, release.items, release.reportDate, {
        '2.02': `the Company issued a press release announcing its financial results for the quarter ended ${longDate(period.end)}: net sales of ${billions(now.revenue)} and diluted earnings per share of $${now.eps.toFixed(2)}. The press release is furnished as Exhibit 99.1.`,
      }),
      false,
    );
    if (q === 0) {
      const officerDate = weekday(addDays(filed, 20));
      const officer = file({
        form: '8-K',
        filed: officerDate,
        reportDate: addDays(officerDate, -2),
        items: ['5.02'],
        primaryDocument: `${lower}-${compact(officerDate)}.htm`,
        html: '',
      });
      officer.html = renderDocument(
        c,
        '8-K',
        [`Date of Report (Date of earliest event reported): ${longDate(officer.reportDate)}`],
        currentReport(c, officer.items, officer.reportDate, { '5.02': `${c.officer}.` }),
        false,
      );
    }
    const tenQ = file({
      form: '10-Q',
      filed,
      reportDate: period.end,
      items: [],
      primaryDocument: `${lower}-${compact(period.end)}.htm`,
      fy,
      fp: q === 0 ? 'Q1' : 'Q2',
      html: '',
    });
    tenQ.html = renderDocument(
      c,
      '10-Q',
      [
        'QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934',
        `For the quarterly period ended ${longDate(period.end)}`,
      ],
      quarterlyReport(pl, q),
      true,
    );
    // Three months, current and a year earlier; cash flows only to date (six months in the second quarter).
    addFlows(tenQ, period, now, q === 0);
    addFlows(tenQ, pl.priorQuarters[q], quarterFlows(c, q, false), q === 0);
    if (q === 1) {
      const toDate = { start: pl.quarters[0].start, end: period.end };
      const priorToDate = { start: pl.priorQuarters[0].start, end: pl.priorQuarters[1].end };
      addFlows(tenQ, toDate, sumFlows(quarterFlows(c, 0, true), now, dilutedShares), true);
      addFlows(tenQ, priorToDate, sumFlows(quarterFlows(c, 0, false), quarterFlows(c, 1, false), dilutedShares), true);
    }
    addBalance(tenQ, period.end, balance(c, required(QUARTER_SCALES[q])));
    addBalance(tenQ, latestYearEnd, balance(c, 1));
    coverShares(tenQ, q === 0 ? 1.002 : 1);
  }

  const lastQ = required(filings.at(-1)).filed;
  const agreementDate = weekday(addDays(lastQ, 24));
  const agreement = file({
    form: '8-K',
    filed: agreementDate,
    reportDate: addDays(agreementDate, -3),
    items: ['1.01', '9.01'],
    primaryDocument: `${lower}-${compact(agreementDate)}.htm`,
    html: '',
  });
  agreement.html = renderDocument(
    c,
    '8-K',
    [`Date of Report (Date of earliest event reported): ${longDate(agreement.reportDate)}`],
    currentReport(c, agreement.items, agreement.reportDate, {
      '1.01': `the Company entered into ${c.agreement}. The agreement is filed as Exhibit 10.1.`,
    }),
    false,
  );
  const otherDate = weekday(addDays(agreementDate, 30));
  const other = file({
    form: '8-K',
    filed: otherDate,
    reportDate: otherDate,
    items: ['8.01'],
    primaryDocument: `${lower}-${compact(otherDate)}-8k.htm`,
    html: '',
  });
  other.html = renderDocument(
    c,
    '8-K',
    [`Date of Report (Date of earliest event reported): ${longDate(other.reportDate)}`],
    currentReport(c, other.items, other.reportDate, { '8.01': `${c.otherEvent}.` }),
    false,
  );

  return { filings, facts: facts.build(c, sharesOutstanding) };
}

function recent(filings: SampleFiling[], fileNumber: string): EdgarRecentFilings {
  // EDGAR lists the newest filing first.
  const newest = [...filings].sort((a, b) => b.filed.localeCompare(a.filed) || b.accession.localeCompare(a.accession));
  return {
    accessionNumber: newest.map((f) => f.accession),
    filingDate: newest.map((f) => f.filed),
    reportDate: newest.map((f) => f.reportDate),
    acceptanceDateTime: newest.map((f) => `${f.filed}T16:31:07.000Z`),
    act: newest.map(() => '34'),
    form: newest.map((f) => f.form),
    fileNumber: newest.map(() => fileNumber),
    filmNumber: newest.map((f) => `${f.accession.slice(11, 13)}${f.accession.slice(-6)}`),
    items: newest.map((f) => f.items.join(',')),
    core_type: newest.map((f) => f.form),
    size: newest.map((f) => Buffer.byteLength(f.html)),
    isXBRL: newest.map(() => 1),
    isInlineXBRL: newest.map(() => 1),
    primaryDocument: newest.map((f) => f.primaryDocument),
    primaryDocDescription: newest.map((f) => f.form),
  };
}

function build(): SampleEdgarData {
  const data: SampleEdgarData = {
    sample: true,
    as_of: AS_OF,
    disclaimer: DISCLAIMER,
    companyTickers: {},
    submissions: {},
    companyFacts: {},
    documents: {},
  };
  SAMPLE_COMPANIES.forEach((c, index) => {
    const cik10 = String(c.cik).padStart(10, '0');
    const { filings, facts } = companySample(c);
    data.companyTickers[String(index)] = { cik_str: c.cik, ticker: c.ticker, title: c.title };
    data.submissions[cik10] = {
      cik: String(c.cik),
      entityType: 'operating',
      sic: c.sic,
      sicDescription: c.sicDescription,
      name: c.name,
      tickers: [c.ticker],
      exchanges: ['Nasdaq'],
      fiscalYearEnd: c.fiscalYearEnds[0].slice(5).replace('-', ''),
      stateOfIncorporation: c.stateOfIncorporation,
      filings: { recent: recent(filings, c.fileNumber), files: [] },
    };
    data.companyFacts[cik10] = facts;
    for (const filing of filings)
      data.documents[`${c.cik}/${filing.accession.replaceAll('-', '')}/${filing.primaryDocument}`] = filing.html;
  });
  return data;
}

let built: SampleEdgarData | undefined;

/** The bundled EDGAR sample, built on first use (a few hundred kilobytes of JSON and HTML). */
export function sampleEdgarData(): SampleEdgarData {
  built ??= build();
  return built;
}
