// SEC EDGAR: the primary source for US companies' filings and XBRL facts (issue 38). See docs/filings.md.
export * from './types';
export { EdgarError } from './errors';
export { sampleFilingsSource } from './sample';
export { EdgarClient, type EdgarClientOptions } from './client';
export { filingsSource } from './source';
export { edgarConfigShape, edgarOnline } from './config';
