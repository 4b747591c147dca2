// Citations: what a result may quote, and the check that it does. Every document the run retrieved (a market data
// resource or article, a web search result, a customer tool's answer) is registered during the tool loop with the
// material it was retrieved with; the model only ever claims {url, quote}, and the resolver turns a claim into a
// full citation (title, publisher and date from the registry, never from the model) or drops it.
import type { Citation, CitationSource, CitedFiling } from '@fin/contracts';
import { citationsResolved } from '@fin/metrics';
import { z } from 'zod';
import { normaliseUrl } from './grounding';

/** A document retrieved during a run, as a tool or the web search returned it. */
export interface RetrievedDocument {
  url: string;
  title: string;
  /** Who published it, when the material says (a news article's outlet); the URL's host stands in otherwise. */
  publisher?: string | null;
  /** When it was published: any date or date-time the material gives (only its day is kept); null when unknown. */
  publishedAt?: string | null;
  source: CitationSource;
  /** The material a quote must occur in: the text the model was shown of this document. */
  text: string;
  /**
   * The filing and item this text is a section of (source sec_filing): a citation quoting it names them. Sections of
   * one filing share its document's URL, so each passage keeps its own.
   */
  filing?: CitedFiling;
}

/** A text a quote may come from, with the filing section it is when it is one. */
interface Passage {
  text: string;
  filing: CitedFiling | undefined;
}

interface Entry {
  url: string;
  title: string;
  publisher: string | null;
  publishedAt: string | null;
  /** The publication time as precisely as the material gives it (ISO 8601 in UTC); null when it gives no date. */
  publishedTime: string | null;
  source: CitationSource;
  passages: Passage[];
}

/** The model's side of a citation: which retrieved document, and the passage of it that supports the claim. */
export const CitationClaim = z.object({
  url: z.string().describe('The URL of a document retrieved in this run (a tool result or web search result), copied exactly.'),
  quote: z.string().describe('The passage of that document that supports the claim, copied word for word from it.'),
});
export type CitationClaim = z.infer<typeof CitationClaim>;

/** Quotes shorter than this (after normalisation) say nothing checkable (a number, a word) and are not kept. */
const MIN_QUOTE_CHARS = 8;
/** Quotes longer than this are not passages but copies; they are not kept either. */
const MAX_QUOTE_CHARS = 1000;

/** The documents of one run, by normalised URL. A URL retrieved twice (e.g. by two tools) keeps both materials. */
export class RetrievedDocuments {
  readonly #entries = new Map<string, Entry>();

  add(document: RetrievedDocument): void {
    const key = normaliseUrl(document.url);
    if (key === undefined) return;
    const existing = this.#entries.get(key);
    if (existing) {
      if (document.text) addTo(existing.passages, { text: document.text, filing: document.filing });
      existing.publisher ??= document.publisher ?? null;
      existing.publishedAt ??= isoDay(document.publishedAt);
      existing.publishedTime ??= isoTime(document.publishedAt);
      if (!existing.title) existing.title = document.title;
      return;
    }
    this.#entries.set(key, {
      url: document.url.trim(),
      title: document.title,
      publisher: document.publisher ?? null,
      publishedAt: isoDay(document.publishedAt),
      publishedTime: isoTime(document.publishedAt),
      source: document.source,
      passages: document.text ? [{ text: document.text, filing: document.filing }] : [],
    });
  }

  /** Adds a passage to a document already registered (a web search result's cited text); ignored for unknown URLs. */
  addPassage(url: string, passage: string): void {
    const entry = this.#lookup(url);
    if (entry && passage) addTo(entry.passages, { text: passage, filing: undefined });
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The claim as a citation when its URL was retrieved and its quote occurs in that material; else why not. */
  resolve(claim: CitationClaim): { citation: Citation } | { dropped: 'unknown_url' | 'quote_not_found' } {
    const entry = this.#lookup(claim.url);
    if (!entry) return { dropped: 'unknown_url' };
    const found = findPassage(entry.passages, claim.quote);
    if (found === undefined) return { dropped: 'quote_not_found' };
    return {
      citation: {
        url: entry.url,
        title: entry.title || hostOf(entry.url),
        publisher: entry.publisher?.trim() || hostOf(entry.url),
        published_at: entry.publishedAt,
        quote: found.quote,
        source: entry.source,
        ...(found.filing ? { filing: found.filing } : {}),
      },
    };
  }

  /** When the document at `url` was published, as precisely as its material says (ISO 8601); null if unknown. */
  publishedTime(url: string): string | null {
    return this.#lookup(url)?.publishedTime ?? null;
  }

  #lookup(url: string): Entry | undefined {
    const key = normaliseUrl(url);
    return key === undefined ? undefined : this.#entries.get(key);
  }
}

/**
 * The claims that hold, as citations: de-duplicated (same URL and quote once), in the model's order. Each dropped
 * claim is counted in fin_citations_total by reason; `product` labels the count.
 */
export function resolveCitations(
  claims: readonly CitationClaim[] | undefined,
  documents: RetrievedDocuments,
  product: string,
): { kept: Citation[]; dropped: number } {
  const kept: Citation[] = [];
  const seen = new Set<string>();
  let dropped = 0;
  for (const claim of claims ?? []) {
    const outcome = documents.resolve(claim);
    if ('dropped' in outcome) {
      dropped += 1;
      citationsResolved.inc({ product, outcome: outcome.dropped });
      continue;
    }
    const key = `${normaliseUrl(outcome.citation.url) ?? ''}\n${normalisedQuote(outcome.citation.quote).text}`;
    if (seen.has(key)) continue;
    seen.add(key);
    citationsResolved.inc({ product, outcome: 'kept' });
    kept.push(outcome.citation);
  }
  return { kept, dropped };
}

const QUOTE_MARKS: Record<string, string> = {
  '\u2018': "'",
  '\u2019': "'",
  '\u201A': "'",
  '\u201B': "'",
  '\u2032': "'",
  '\u201C': '"',
  '\u201D': '"',
  '\u201E': '"',
  '\u201F': '"',
  '\u2033': '"',
  '\u00AB': '"',
  '\u00BB': '"',
};
const DASHES = /[\u2010-\u2015\u2212]/;

/**
 * Text as quotes are compared: lower case, typographic quotes and dashes as their ASCII forms, every run of
 * whitespace as one space, no whitespace at either end. `offsets[i]` is where the i-th character of `text` came
 * from in the input, so a match can be cut out of the original material.
 */
function normalisedQuote(input: string): { text: string; offsets: number[] } {
  let text = '';
  const offsets: number[] = [];
  let space = false;
  for (let index = 0; index < input.length; index++) {
    const char = input[index] ?? '';
    if (/\s/.test(char)) {
      space = text.length > 0;
      continue;
    }
    if (space) {
      text += ' ';
      offsets.push(index);
      space = false;
    }
    const mapped = QUOTE_MARKS[char] ?? (DASHES.test(char) ? '-' : char.toLowerCase());
    // toLowerCase may turn one character into two (İ): both come from the same place.
    for (const unit of mapped) {
      text += unit;
      offsets.push(index);
    }
  }
  return { text, offsets };
}

/** A passage once: the same text of the same filing section (or of no section) is not kept twice. */
function addTo(passages: Passage[], passage: Passage): void {
  const same = (other: Passage) =>
    other.text === passage.text && other.filing?.accession === passage.filing?.accession && other.filing?.item === passage.filing?.item;
  if (!passages.some(same)) passages.push(passage);
}

/**
 * The passage of the material the quote matches, in the material's own spelling, with the filing section it is
 * from (for a filing); undefined when none matches.
 */
function findPassage(passages: readonly Passage[], quote: string): { quote: string; filing: CitedFiling | undefined } | undefined {
  const wanted = normalisedQuote(quote).text;
  if (wanted.length < MIN_QUOTE_CHARS || wanted.length > MAX_QUOTE_CHARS) return undefined;
  for (const { text: passage, filing } of passages) {
    const material = normalisedQuote(passage);
    for (let at = material.text.indexOf(wanted); at !== -1; at = material.text.indexOf(wanted, at + 1)) {
      if (!wholeAt(material.text, at, wanted)) continue;
      const start = material.offsets[at] ?? 0;
      const end = (material.offsets[at + wanted.length - 1] ?? start) + 1;
      return { quote: passage.slice(start, end), filing };
    }
  }
  return undefined;
}

const WORD_CHAR = /[\p{L}\p{N}]/u;

/**
 * Whether the match of `wanted` at `at` is whole: it does not start or end inside a word or number of the
 * material. Otherwise `"price":1` would be found in `"price":187.35`, and "rose 1" in "rose 14%".
 */
function wholeAt(material: string, at: number, wanted: string): boolean {
  const before = material[at - 1] ?? '';
  const after = material[at + wanted.length] ?? '';
  const first = wanted[0] ?? '';
  const last = wanted[wanted.length - 1] ?? '';
  if (WORD_CHAR.test(first) && WORD_CHAR.test(before)) return false;
  if (WORD_CHAR.test(last) && WORD_CHAR.test(after)) return false;
  // A number cut at its decimal point or thousands separator (187 of 187.35, 1 of 1,200).
  return !(/\p{N}/u.test(last) && /[.,]/.test(after) && /\p{N}/u.test(material[at + wanted.length + 1] ?? ''));
}

/** The host a document is published under, without a leading `www.`. */
function hostOf(url: string): string {
  try {
    return new URL(url).hostname.replace(/^www\./, '');
  } catch {
    return url;
  }
}

/** The day (YYYY-MM-DD, UTC) of a date or date-time the material gives ("2026-11-18T09:30:00Z", "November 18, 2026"). */
/** A date or date-time the material gives, as ISO 8601 in UTC (a bare date stays a date); null when it names none. */
function isoTime(value: string | null | undefined): string | null {
  const day = isoDay(value);
  if (day === null || !value) return null;
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return day;
  const time = Date.parse(/^\d{4}-\d{2}-\d{2}T/.test(value) || /(?:Z|[+-]\d{2}:?\d{2}|GMT|UTC)$/.test(value) ? value : `${value} UTC`);
  return Number.isNaN(time) ? day : new Date(time).toISOString();
}

function isoDay(value: string | null | undefined): string | null {
  if (!value) return null;
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return value;
  // Relative ages ("3 days ago") name no date.
  if (!/\d{4}/.test(value)) return null;
  const time = Date.parse(/^\d{4}-\d{2}-\d{2}T/.test(value) || /(?:Z|[+-]\d{2}:?\d{2}|GMT|UTC)$/.test(value) ? value : `${value} UTC`);
  return Number.isNaN(time) ? null : new Date(time).toISOString().slice(0, 10);
}
