// The check after the answer: every financial figure a generated text states must be one the run was given — a
// reported figure, a computed ratio, a number of the caller's data or of a passage the text cites — within a stated
// tolerance. Pure: text and known values in, the numbers found and what each matched out. docs/ai.md#the-figure-check.

/** What a stated number is, by the words around it. */
export type MentionKind = 'currency' | 'percent' | 'multiple' | 'scaled' | 'plain';

/** A number a text states as a financial figure. */
export interface Mention {
  /** The number as written ("$391.0 billion", "24.9%"). */
  text: string;
  /** Its value in base units: dollars, percent points, times, shares. */
  value: number;
  /** Half a unit of its last written digit, in base units: how far rounding may have moved it. */
  rounding: number;
  /** An explicit sign: a stated "-3.1%" must match a negative value; an unsigned "a loss of $1.2 billion" matches either. */
  negative: boolean;
  signed: boolean;
  kind: MentionKind;
  /** Where it starts in the text. */
  index: number;
}

/** What a known value is, for which mentions may match it. */
export type KnownUnit = 'USD' | 'USD/shares' | 'shares' | 'percent' | 'ratio' | 'number';

export interface KnownValue<R = unknown> {
  value: number;
  unit: KnownUnit;
  /** What the value is (a figure, a ratio, a quote): handed back with every match. */
  ref: R;
}

/** Relative tolerance: a stated figure within 0.5 % of a known value matches it (rounding to 3 significant digits). */
const RELATIVE_TOLERANCE = 0.005;

const SCALES: Record<string, number> = {
  trillion: 1e12,
  tn: 1e12,
  t: 1e12,
  billion: 1e9,
  bn: 1e9,
  b: 1e9,
  million: 1e6,
  mn: 1e6,
  mm: 1e6,
  m: 1e6,
  thousand: 1e3,
  k: 1e3,
};

// sign, currency, number, scale, unit. The lookbehind keeps numbers inside words and codes out (FY2025, Q3, 10-K's
// "10" is a bare integer anyway, "v1.2").
const MENTION = new RegExp(
  String.raw`(?<![\p{L}\p{N}.,/])` +
    String.raw`(?<sign>[-−–+](?=\s?(?:US\$|\$|USD\s?)?\d))?` +
    String.raw`(?<currency>US\$|\$|USD\s?)?` +
    String.raw`(?<number>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)` +
    String.raw`(?:\s?(?<scale>trillion|billion|million|thousand|tn|bn|mn|mm)\b|(?<letter>[tbmkTBMK])(?![\p{L}\p{N}]))?` +
    String.raw`(?:\s?(?<unit>%|percent(?:age points?)?|per cent|pct|pts?\b|p\.p\.|×|x\b|times\b)|\s(?<currencyAfter>USD|dollars)\b)?`,
  'gu',
);

/**
 * The financial figures a text states: numbers with a currency, a scale (billion, bn, m), a percent or
 * percentage-point sign, a multiple (x, times), or a decimal point. Bare integers are not figures (years, counts,
 * "Item 7", "Q3", "10-K"), and neither are dates.
 */
export function mentionsIn(text: string): Mention[] {
  const mentions: Mention[] = [];
  for (const match of text.matchAll(MENTION)) {
    const groups = match.groups ?? {};
    const number = groups.number ?? '';
    // A date (2025-09-27) or a range (2024–2025): the number after the dash is no signed figure.
    const before = text.slice(0, match.index);
    if (groups.sign && /[\p{N}]$/u.test(before)) continue;
    // A filing's item number (8-K Item 2.02, 10-K Item 1A) names a section, not a figure.
    if (/\bitems?\s*$/i.test(before)) continue;
    const scaleWord = (groups.scale ?? groups.letter ?? '').toLowerCase();
    const scale = scaleWord ? (SCALES[scaleWord] ?? 1) : 1;
    const unit = (groups.unit ?? '').toLowerCase();
    const currency = Boolean(groups.currency ?? groups.currencyAfter);
    const decimals = number.includes('.') ? (number.split('.')[1]?.length ?? 0) : 0;
    let kind: MentionKind;
    if (unit === '×' || unit === 'x' || unit === 'times') kind = 'multiple';
    else if (unit !== '') kind = 'percent';
    else if (currency) kind = 'currency';
    else if (scaleWord) kind = 'scaled';
    else kind = 'plain';
    // A bare integer says nothing checkable: a year, a count, an item number.
    if (kind === 'plain' && decimals === 0 && !scaleWord) continue;
    // An ISO date's parts, a time (09:30) or a version: a decimal run into another number.
    if (/^[.:]\d/.test(text.slice(match.index + match[0].length))) continue;
    const magnitude = Number(number.replaceAll(',', '')) * scale;
    const negative = groups.sign === '-' || groups.sign === '−' || groups.sign === '–';
    mentions.push({
      text: match[0].trim(),
      value: negative ? -magnitude : magnitude,
      rounding: 0.5 * 10 ** -decimals * scale,
      negative,
      signed: Boolean(groups.sign),
      kind,
      index: match.index,
    });
  }
  return mentions;
}

/** Which known units a stated kind of number may be: a percentage is never matched against dollars. */
const COMPATIBLE: Record<MentionKind, readonly KnownUnit[]> = {
  currency: ['USD', 'USD/shares', 'number'],
  percent: ['percent', 'number'],
  multiple: ['ratio', 'number'],
  scaled: ['USD', 'shares', 'number'],
  plain: ['USD', 'USD/shares', 'shares', 'percent', 'ratio', 'number'],
};

/**
 * Whether a stated number is a known value: same kind of quantity, the sign agreeing when the text states one, and
 * the magnitude within the tolerance — 0.5 % of the value, or the rounding of the stated digits when that is wider
 * ("$391 billion" is 390.5–391.5 billion, "24.9%" is 24.85–24.95 %, "$6.11" is 6.105–6.115).
 */
export function matches(mention: Mention, known: KnownValue): boolean {
  if (!COMPATIBLE[mention.kind].includes(known.unit)) return false;
  if (mention.signed && mention.negative !== known.value < 0) return false;
  const stated = Math.abs(mention.value);
  const actual = Math.abs(known.value);
  const tolerance = Math.max(RELATIVE_TOLERANCE * actual, mention.rounding);
  return Math.abs(stated - actual) <= tolerance + Number.EPSILON * actual;
}

export interface TextCheck<R> {
  /** Every stated figure matched a known value. */
  grounded: boolean;
  /** The known values the text's figures matched (the closest for each), in order, de-duplicated. */
  matched: KnownValue<R>[];
  /** The figures that matched none. */
  unmatched: Mention[];
}

/**
 * Checks every financial figure of `text` against `known`; `allowed` may rule out candidates for a mention (a figure
 * of another company than the one the text attributes it to).
 */
export function checkText<R>(
  text: string,
  known: readonly KnownValue<R>[],
  allowed: (mention: Mention, candidate: KnownValue<R>) => boolean = () => true,
): TextCheck<R> {
  const matched: KnownValue<R>[] = [];
  const unmatched: Mention[] = [];
  for (const mention of mentionsIn(text)) {
    let best: KnownValue<R> | undefined;
    for (const candidate of known) {
      if (!matches(mention, candidate) || !allowed(mention, candidate)) continue;
      if (
        !best ||
        Math.abs(Math.abs(candidate.value) - Math.abs(mention.value)) < Math.abs(Math.abs(best.value) - Math.abs(mention.value))
      ) {
        best = candidate;
      }
    }
    if (best === undefined) unmatched.push(mention);
    else if (!matched.includes(best)) matched.push(best);
  }
  return { grounded: unmatched.length === 0, matched, unmatched };
}

/** The numbers of a passage or of the caller's data, as known values any stated figure may match. */
export function numbersIn<R>(material: string, ref: R): KnownValue<R>[] {
  const values: KnownValue<R>[] = [];
  for (const match of material.matchAll(/-?\d+(?:,\d{3})*(?:\.\d+)?(?:e[+-]?\d+)?/gi)) {
    const value = Number(match[0].replaceAll(',', ''));
    if (Number.isFinite(value)) values.push({ value, unit: 'number', ref });
  }
  for (const mention of mentionsIn(material)) values.push({ value: mention.value, unit: 'number', ref });
  return values;
}
