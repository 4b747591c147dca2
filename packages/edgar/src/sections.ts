// A filing's primary document (HTML, usually inline XBRL) split into its Items as plain text. Analysis reads
// sections, never whole filings: a 10-K runs to hundreds of thousands of words.
//
// The document is flattened to paragraphs (block elements and table rows end one; scripts, styles, comments and
// the hidden inline-XBRL header are dropped; entities decoded; whitespace collapsed), then a paragraph that is an
// Item heading ("Item 1A. Risk Factors", "ITEM 7 — MANAGEMENT'S …", "Item 2.02 Results of Operations …") starts a
// section. Real 10-Ks and 10-Qs list every Item twice, first in the table of contents; of the occurrences of one
// Item the one followed by the most text is the section, so the contents' rows (a title and a page number) never
// are. A 10-Q's Items are numbered within their Part ("I-2" for Part I Item 2 MD&A, "II-1A" for Part II Item 1A).
import { FilingSection } from './types';

/** Bumped whenever the output for the same document changes, so that cached sections are extracted again. */
export const SECTIONS_VERSION = 1;

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  ensp: ' ',
  emsp: ' ',
  thinsp: ' ',
  rsquo: '’',
  lsquo: '‘',
  rdquo: '”',
  ldquo: '“',
  mdash: '—',
  ndash: '–',
  hellip: '…',
  bull: '•',
  middot: '·',
  sect: '§',
  para: '¶',
  reg: '®',
  trade: '™',
  copy: '©',
  deg: '°',
  cent: '¢',
  pound: '£',
  euro: '€',
  yen: '¥',
  frac12: '½',
  frac14: '¼',
  frac34: '¾',
  times: '×',
  divide: '÷',
  eacute: 'é',
  egrave: 'è',
  uuml: 'ü',
  ouml: 'ö',
  auml: 'ä',
  ccedil: 'ç',
};

export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z][a-z0-9]*);/gi, (whole, name: string) => {
    if (name.startsWith('#')) {
      const code = name[1] === 'x' || name[1] === 'X' ? Number.parseInt(name.slice(2), 16) : Number.parseInt(name.slice(1), 10);
      return Number.isInteger(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED_ENTITIES[name.toLowerCase()] ?? whole;
  });
}

const BLOCK =
  /<\/?(?:p|div|br|tr|li|ul|ol|h[1-6]|table|thead|tbody|tfoot|section|article|header|footer|blockquote|pre|hr|center|dd|dt|dl|title|body|html)\b[^>]*>/gi;
const CELL = /<\/(?:td|th)\s*>/gi;

/** The document's text as paragraphs: tags gone, entities decoded, whitespace collapsed, empty lines dropped. */
export function htmlParagraphs(html: string): string[] {
  const text = html
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<!\[CDATA\[[\s\S]*?\]\]>/g, ' ')
    .replace(/<(script|style|head|ix:header)\b[\s\S]*?<\/\1\s*>/gi, ' ')
    .replace(/<\?xml[\s\S]*?\?>/gi, ' ')
    .replace(BLOCK, '\n')
    .replace(CELL, ' ')
    .replace(/<[^>]*>/g, '');
  return decodeEntities(text)
    .split('\n')
    .map((line) => line.replace(/[\s\u00a0\u200b]+/g, ' ').trim())
    .filter((line) => line !== '');
}

/** "Item 1A. Risk Factors", "ITEM 7 — MANAGEMENT’S …", "Item 2.02 Results of …", "Item 1." */
const ITEM_HEADING = /^item\s*(\d{1,2}(?:\.\d{2})?[a-z]?)\s*(?:[.:\u2014\u2013-]\s*)*(.*)$/i;
const PART_HEADING = /^part\s+(iv|iii|ii|i)\b\s*(?:[.:\u2014\u2013-]\s*)*(.*)$/i;
/** The signatures follow the last Item. */
const SIGNATURES = /^signatures?$/i;
/** Lines a printed filing repeats on every page: page numbers and "Table of Contents" links. */
const PAGE_FURNITURE = /^(?:\d{1,3}|[ivx]{1,5}|page \d+|table of contents|index)$/i;
/** A heading is short; a longer paragraph that starts with "Item 7" is prose that refers to an Item. */
const MAX_HEADING_LENGTH = 200;

interface Heading {
  key: string;
  title: string;
  /** Index of the first paragraph of the section's body. */
  from: number;
  /** Index of the heading paragraph. */
  at: number;
}

/** "PART II — OTHER INFORMATION" → II; "Part II, Item 1A of our annual report …" is prose, not a heading. */
function partHeading(paragraph: string): { part: string; rest: string } | undefined {
  if (paragraph.length > MAX_HEADING_LENGTH) return undefined;
  const match = PART_HEADING.exec(paragraph);
  if (!match) return undefined;
  const rest = (match[2] ?? '').trim();
  if (/^[a-z,]/.test(rest)) return undefined;
  return { part: (match[1] ?? '').toUpperCase(), rest };
}

function itemHeading(paragraph: string): { item: string; title: string } | undefined {
  if (paragraph.length > MAX_HEADING_LENGTH) return undefined;
  const match = ITEM_HEADING.exec(paragraph);
  if (!match) return undefined;
  const title = (match[2] ?? '').trim();
  // "Item 7 of this report discusses …": prose, not a heading. Titles start with a capital, a quote or a bracket.
  if (title !== '' && !/^[A-Z“"'‘[(]/.test(title)) return undefined;
  return { item: (match[1] ?? '').toUpperCase(), title };
}

/**
 * The sections of a filing's primary document. `form` decides the numbering: 10-Q Items carry their Part; 10-K and
 * 8-K Items are unique without it. A document with no Item headings (an exhibit, a cover letter) has no sections.
 */
export function extractSections(html: string, form: string): FilingSection[] {
  const paragraphs = htmlParagraphs(html).filter((paragraph) => !PAGE_FURNITURE.test(paragraph));
  const quarterly = /^10-Q/i.test(form);
  let part = '';
  const headings: Heading[] = [];
  for (const [index, paragraph] of paragraphs.entries()) {
    if (SIGNATURES.test(paragraph)) {
      // Ends the section before it; a section of its own that no one asks for.
      headings.push({ key: '', title: '', at: index, from: index });
      continue;
    }
    const partMatch = partHeading(paragraph);
    if (partMatch) {
      part = partMatch.part;
      // "PART II — OTHER INFORMATION Item 1. Legal Proceedings" on one line: the Item follows the Part.
      const rest = itemHeading(partMatch.rest.replace(/^.*?(?=item\s*\d)/i, ''));
      if (!rest) continue;
      headings.push({ key: quarterly && part ? `${part}-${rest.item}` : rest.item, title: rest.title, at: index, from: index + 1 });
      continue;
    }
    const heading = itemHeading(paragraph);
    if (!heading) continue;
    let { title } = heading;
    let from = index + 1;
    // A heading laid out in two cells or lines: "Item 1A." then "Risk Factors".
    const next = paragraphs[index + 1];
    if (title === '' && next !== undefined && next.length <= MAX_HEADING_LENGTH && !itemHeading(next) && !partHeading(next)) {
      title = next;
      from = index + 2;
    }
    headings.push({ key: quarterly && part ? `${part}-${heading.item}` : heading.item, title, at: index, from });
  }

  const bodies = headings.map((heading, index) => {
    const end = headings[index + 1]?.at ?? paragraphs.length;
    // A Part heading between two Items belongs to neither.
    const body = paragraphs
      .slice(heading.from, end)
      .filter((paragraph, offset, all) => !(offset === all.length - 1 && partHeading(paragraph)));
    return { heading, body, length: body.reduce((sum, paragraph) => sum + paragraph.length, 0) };
  });
  const best = new Map<string, (typeof bodies)[number]>();
  for (const candidate of bodies) {
    if (candidate.heading.key === '') continue;
    const current = best.get(candidate.heading.key);
    // Of equal ones the later stays: the contents come first, so an empty "Item 6. [Reserved]" is the body's.
    if (!current || candidate.length >= current.length) best.set(candidate.heading.key, candidate);
  }
  return [...best.values()]
    .sort((a, b) => a.heading.at - b.heading.at)
    .map(({ heading, body }) => FilingSection.parse({ item: heading.key, title: cleanTitle(heading.title), text: body.join('\n\n') }));
}

/** Strips the trailing page number a contents row or a running header leaves, and a trailing period. */
function cleanTitle(title: string): string {
  return title
    .replace(/\s+\d{1,3}$/, '')
    .replace(/\.$/, '')
    .trim();
}
