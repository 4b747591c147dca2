// SEC EDGAR: the primary source for US companies' filings and XBRL facts (issue 38). See docs/filings.md.
export * from './types';
export { EdgarError, type EdgarErrorKind } from './errors';
export { sampleFilingsSource } from './sample';
