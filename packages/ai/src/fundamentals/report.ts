// Figures in the stock report: loaded for each symbol from the FilingsSource, given to the model as data it must
// use, and after the answer the check that every figure the report states is one it was given, with the filing
// citations of the figures it states. docs/ai.md#figures-from-sec-filings.
import type { Citation, DetailedAnalysisItem, FinancialFigure, FinancialRatio } from '@fin/contracts';
import type { FilingsSource } from '@fin/edgar';
import { checkText, numbersIn, type KnownValue, type Mention } from './figure-check';
import { noFilings, selectFigures, type Fundamentals } from './figures';
import { computeRatios } from './ratios';

/** The figures, ratios and notes of a report's symbols. */
export interface ReportFigures {
  companies: Fundamentals[];
  figures: FinancialFigure[];
  ratios: FinancialRatio[];
  notes: string[];
}

/**
 * Each symbol's figures from its XBRL facts. A symbol EDGAR does not know (a non-US listing) gets a note, not an
 * error; so does an EDGAR failure (the report is written without reported figures and says so), and a deployment
 * without a FilingsSource.
 */
export async function loadReportFigures(source: FilingsSource | undefined, symbols: readonly string[]): Promise<ReportFigures> {
  const companies = await Promise.all(
    symbols.map(async (symbol): Promise<Fundamentals> => {
      if (!source) return noFilings(symbol, 'not_configured');
      let facts;
      try {
        facts = await source.facts(symbol);
      } catch {
        return noFilings(symbol, 'unavailable');
      }
      return facts === null ? noFilings(symbol, 'unknown') : selectFigures(symbol, facts);
    }),
  );
  const figures = companies.flatMap((company) => company.figures);
  return { companies, figures, ratios: computeRatios(figures), notes: companies.flatMap((company) => company.notes) };
}

const grouped = new Intl.NumberFormat('en-US', { maximumFractionDigits: 4 });
const twoDecimals = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** A large amount as the model would write it (416.16 billion), to spare it the arithmetic of scaling. */
function scaled(value: number): string {
  const magnitude = Math.abs(value);
  if (magnitude >= 1e9) return ` (${twoDecimals.format(value / 1e9)} billion)`;
  if (magnitude >= 1e6) return ` (${twoDecimals.format(value / 1e6)} million)`;
  return '';
}

/** A figure as the model is shown it: also the quote of its citation, so a citation quotes what the model read. */
export function figureLine(figure: FinancialFigure): string {
  const { period } = figure;
  const span = period.start === null ? `at ${period.end}` : `${period.start} to ${period.end}`;
  return (
    `${figure.name} = ${grouped.format(figure.value)} ${figure.unit}${figure.unit === 'shares' ? '' : scaled(figure.value)}; ` +
    `${figure.label} (${span}); ${figure.form} filed ${figure.filed}, accession ${figure.accession}, ${figure.concept}` +
    (figure.note ? `; ${figure.note}` : '')
  );
}

const RATIO_UNITS: Record<FinancialRatio['unit'], string> = { percent: '%', ratio: 'x', USD: 'USD' };

function ratioLine(ratio: FinancialRatio): string {
  const value =
    ratio.unit === 'USD'
      ? `${grouped.format(ratio.value)} USD${scaled(ratio.value)}`
      : `${twoDecimals.format(ratio.value)}${RATIO_UNITS[ratio.unit]}`;
  return `${ratio.name} = ${value}; ${ratio.label}; ${ratio.formula}`;
}

/** The figures block of the request's first user turn: per symbol, its figures, ratios and notes, as data. */
export function renderReportFigures(report: ReportFigures): string {
  return report.companies
    .map((company) => {
      const attributes = company.company ? ` company="${company.company.name}" cik="${company.company.cik}"` : '';
      const lines = [`<sec_figures symbol="${company.symbol}"${attributes}>`];
      if (company.figures.length > 0) {
        lines.push('Figures reported in filings with the SEC (XBRL company facts):');
        lines.push(...company.figures.map((figure) => `- ${figureLine(figure)}`));
        const ratios = report.ratios.filter((ratio) => ratio.symbol === company.symbol);
        if (ratios.length > 0)
          lines.push('Ratios computed by the service from these figures:', ...ratios.map((ratio) => `- ${ratioLine(ratio)}`));
      }
      if (company.notes.length > 0) lines.push('Notes:', ...company.notes.map((note) => `- ${note}`));
      lines.push('</sec_figures>');
      return lines.join('\n');
    })
    .join('\n');
}

type Reference = { kind: 'figure'; figure: FinancialFigure } | { kind: 'ratio'; ratio: FinancialRatio } | { kind: 'material' };

const symbolOf = (reference: Reference): string | undefined =>
  reference.kind === 'figure' ? reference.figure.symbol : reference.kind === 'ratio' ? reference.ratio.symbol : undefined;

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * In a comparison, which company the text attributes a figure to: the one company (by its symbol or the first word
 * of its name) named in the clause before the figure, back to the last `;`, `(`, sentence end, comma, "vs", "versus",
 * "and", "while" or "whereas". Undefined when the clause names none or both.
 */
function attribution(companies: readonly Fundamentals[]): ((text: string, mention: Mention) => string | undefined) | undefined {
  const named = companies.filter((company) => company.figures.length > 0);
  if (named.length < 2) return undefined;
  const patterns = named.map((company) => {
    const word = company.company?.name.split(/[\s,]+/)[0] ?? '';
    const alternatives = [`\\b${escaped(company.symbol)}\\b`, ...(word.length >= 3 ? [`\\b${escaped(word)}\\b`] : [])];
    return { symbol: company.symbol, pattern: new RegExp(alternatives.join('|'), 'i') };
  });
  return (text, mention) => {
    const clause =
      text
        .slice(0, mention.index)
        .split(/[;()]|\.\s|,\s|\bvs\.?\s|\bversus\b|\band\b|\bwhile\b|\bwhereas\b/i)
        .at(-1) ?? '';
    const found = patterns.filter(({ pattern }) => pattern.test(clause));
    return found.length === 1 ? found[0]?.symbol : undefined;
  };
}

/** The citation of a reported figure: its filing, concept and the figure as the model was given it. */
function figureCitation(figure: FinancialFigure, companies: ReadonlyMap<string, string>): Citation {
  return {
    url: figure.url,
    title: `${companies.get(figure.symbol) ?? figure.symbol} ${figure.form} filed ${figure.filed}`,
    publisher: 'U.S. Securities and Exchange Commission (EDGAR)',
    published_at: figure.filed,
    quote: figureLine(figure),
    source: 'sec_filing',
    filing: { cik: figure.cik, accession: figure.accession, form: figure.form, filed: figure.filed, item: null, concept: figure.concept },
  };
}

/** A part of the answer after the citations it claimed were resolved: what it cites and how many it claimed. */
export interface CitedText {
  citations: Citation[];
  /** How many citations the model claimed for it (resolved or not). */
  claimed: number;
}

export type DraftInsight = Omit<DetailedAnalysisItem, 'citations'> & CitedText;
export type DraftQuickInsight = { text: string } & CitedText;

export interface CheckedReport {
  detailed: DetailedAnalysisItem[];
  quick: { text: string; citations: Citation[] }[];
  /** What the check took out: insights, implications and quick insights. */
  removed: { insights: number; implications: number; quickInsights: number };
}

/**
 * Checks a report against what the run was given. Every financial figure a title, keyMetric, implication,
 * investmentThesis or quick insight states must match a reported figure or computed ratio, a number of the caller's
 * data, or a number of a passage that part cites (its citations are verified quotes), within the tolerance of
 * figure-check.ts. An implication with an unmatched figure is removed; an insight whose title, keyMetric or thesis
 * has one, or left without implications, is dropped; so is a quick insight with one. Each part cites the filings of
 * the figures it states (a ratio: those of its inputs). A part is dropped when it ends without citations although
 * it claimed some (all were unverifiable). So nothing ships with an uncited figure: a figure that matched a filing
 * figure or ratio brings its citation, one that matched a cited passage has that citation, and the only figures
 * left to match without a citation are the caller's own data.
 */
export function checkReport(
  draft: { detailed: readonly DraftInsight[]; quick: readonly DraftQuickInsight[] },
  report: ReportFigures,
  clientData: Record<string, unknown> | undefined,
): CheckedReport {
  const companies = new Map(
    report.companies.flatMap((company) => (company.company ? [[company.symbol, company.company.name] as const] : [])),
  );
  const figuresByName = new Map(report.figures.map((figure) => [`${figure.symbol}\n${figure.name}`, figure]));
  const base: KnownValue<Reference>[] = [
    ...report.figures.map((figure) => ({
      value: figure.value,
      unit: figure.unit as 'USD' | 'USD/shares' | 'shares',
      ref: { kind: 'figure', figure } as const,
    })),
    ...report.ratios.map((ratio) => ({ value: ratio.value, unit: ratio.unit, ref: { kind: 'ratio', ratio } as const })),
    ...(clientData && Object.keys(clientData).length > 0 ? numbersIn<Reference>(JSON.stringify(clientData), { kind: 'material' }) : []),
  ];
  const knownFor = (citations: readonly Citation[]): KnownValue<Reference>[] => [
    ...base,
    ...citations.flatMap((citation) => numbersIn<Reference>(citation.quote, { kind: 'material' })),
  ];
  const citationsOf = (references: readonly Reference[]): Citation[] =>
    references.flatMap((reference) => {
      if (reference.kind === 'figure') return [figureCitation(reference.figure, companies)];
      if (reference.kind === 'ratio') {
        return reference.ratio.inputs.flatMap((name) => {
          const figure = figuresByName.get(`${reference.ratio.symbol}\n${name}`);
          return figure ? [figureCitation(figure, companies)] : [];
        });
      }
      return [];
    });
  /** The part's own citations, then its figures' (each filing figure once). */
  const merged = (own: readonly Citation[], references: readonly Reference[]): Citation[] => {
    const seen = new Set<string>();
    return [...own, ...citationsOf(references)].filter((citation) => {
      const key = `${citation.url}\n${citation.quote}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  };
  const removed = { insights: 0, implications: 0, quickInsights: 0 };
  // A figure of one company stated as the other's matches nothing (comparisons only).
  const attributed = attribution(report.companies);
  const check = (text: string, known: readonly KnownValue<Reference>[]) =>
    checkText(text, known, (mention, candidate) => {
      const owner = symbolOf(candidate.ref);
      const said = owner === undefined ? undefined : attributed?.(text, mention);
      return said === undefined || said === owner;
    });

  const detailed: DetailedAnalysisItem[] = [];
  for (const item of draft.detailed) {
    const known = knownFor(item.citations);
    const whole = [item.title, item.keyMetric, item.investmentThesis].map((text) => check(text, known));
    const implications = item.implications.map((text) => ({ text, check: check(text, known) }));
    const kept = implications.filter((implication) => implication.check.grounded);
    removed.implications += implications.length - kept.length;
    if (whole.some((result) => !result.grounded) || kept.length === 0) {
      removed.insights += 1;
      continue;
    }
    const references = [...whole, ...kept.map((implication) => implication.check)].flatMap((result) =>
      result.matched.map((value) => value.ref),
    );
    const citations = merged(item.citations, references);
    if (citations.length === 0 && item.claimed > 0) {
      removed.insights += 1;
      continue;
    }
    const { claimed: _claimed, ...rest } = item;
    detailed.push({ ...rest, implications: kept.map((implication) => implication.text), citations });
  }

  const quick: CheckedReport['quick'] = [];
  for (const insight of draft.quick) {
    const checked = check(insight.text, knownFor(insight.citations));
    const citations = merged(
      insight.citations,
      checked.matched.map((value) => value.ref),
    );
    if (!checked.grounded || (citations.length === 0 && insight.claimed > 0)) {
      removed.quickInsights += 1;
      continue;
    }
    quick.push({ text: insight.text.trim(), citations });
  }
  return { detailed, quick, removed };
}

const billions = (value: number) => `$${twoDecimals.format(value / 1e9)} billion`;
const percent = (value: number) => `${(Math.round(value * 10) / 10).toFixed(1)}%`;

/**
 * Quick insights the service writes from the figures when the check left fewer than the contract's minimum: one
 * sentence per company on its revenue and growth, one on its net margin, each citing its filing figures.
 */
export function figureQuickInsights(report: ReportFigures): { text: string; citations: Citation[] }[] {
  const companies = new Map(
    report.companies.flatMap((company) => (company.company ? [[company.symbol, company.company.name] as const] : [])),
  );
  const sentences: { text: string; citations: Citation[] }[] = [];
  for (const company of report.companies) {
    const figure = (name: string) => company.figures.find((candidate) => candidate.name === name);
    const ratio = (name: string) => report.ratios.find((candidate) => candidate.symbol === company.symbol && candidate.name === name);
    const revenue = figure('revenue');
    const netIncome = figure('net_income');
    if (revenue) {
      const growth = ratio('revenue_growth_yoy');
      const change = growth ? `, ${growth.value >= 0 ? 'up' : 'down'} ${percent(Math.abs(growth.value))} year on year` : '';
      const cited = [revenue, ...(growth ? [figure('revenue_prior_year')] : [])].filter(
        (item): item is FinancialFigure => item !== undefined,
      );
      sentences.push({
        text: `${company.symbol} reported revenue of ${billions(revenue.value)} for fiscal year ${revenue.period.fiscal_year}${change} (${revenue.form} filed ${revenue.filed}).`,
        citations: cited.map((item) => figureCitation(item, companies)),
      });
    }
    const margin = ratio('net_margin');
    if (margin && netIncome && revenue) {
      sentences.push({
        text: `${company.symbol}'s net margin was ${percent(margin.value)} in fiscal year ${netIncome.period.fiscal_year} (net income ${billions(netIncome.value)}).`,
        citations: [netIncome, revenue].map((item) => figureCitation(item, companies)),
      });
    }
  }
  return sentences;
}
