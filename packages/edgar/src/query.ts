// What the live client and the sample share once EDGAR's files are parsed: symbols as EDGAR's ticker map spells
// them, and the filtering of a company's filings.
import { type Filing, type FilingsQuery } from './types';

/** Upper case, and the dot of a share class as EDGAR writes it ("BRK.B" → "BRK-B"). */
export const normaliseSymbol = (symbol: string): string => symbol.trim().toUpperCase().replaceAll('.', '-');

/** Filings (newest first) matching the query's forms and date, at most `limit` of them. */
export function selectFilings(filings: readonly Filing[], query: FilingsQuery = {}): Filing[] {
  const forms = query.forms ? new Set(query.forms) : undefined;
  const selected = filings.filter((filing) => (!forms || forms.has(filing.form)) && (!query.since || filing.filed >= query.since));
  return query.limit === undefined ? selected : selected.slice(0, Math.max(0, query.limit));
}
