// The sec_filings tool on its own: listing a company's filings, reading one section (by accession, or the latest
// filing of a form), the answers for an unknown accession or item and for a symbol EDGAR does not know, the size
// bound (a long section in pages, each under the result cap), and what it registers for citations.
import { EdgarError, sampleFilingsSource, type FilingDocument, type FilingsSource } from '@fin/edgar';
import { filingsTool, sectionPages } from '../src/filings-tool';
import { RetrievedDocuments } from '../src/citations';
import type { ToolOutput } from '../src/tools';

const sample = sampleFilingsSource();
const tool = filingsTool(sample);
/** The sample with some of its answers replaced. */
const sampleWith = (changes: Partial<FilingsSource>): FilingsSource => ({
  sample: sample.sample,
  company: (symbol) => sample.company(symbol),
  filings: (symbol, query) => sample.filings(symbol, query),
  document: (symbol, accession) => sample.document(symbol, accession),
  facts: (symbol) => sample.facts(symbol),
  ...changes,
});
const run = (input: Record<string, unknown>, on: typeof tool = tool): Promise<ToolOutput> =>
  on.execute(on.input.parse(input), { signal: new AbortController().signal });
const contentOf = (output: ToolOutput) => output.content as Record<string, unknown>;

async function latest(symbol: string, form: string, item?: string) {
  const found = await sample.filings(symbol, { forms: [form] });
  const filing = found?.filings.find((candidate) => item === undefined || candidate.items.includes(item));
  if (!filing) throw new Error(`no ${form} for ${symbol} in the sample`);
  const document = (await sample.document(symbol, filing.accession)) as FilingDocument;
  return { filing, document };
}

describe('sec_filings', () => {
  it("lists a company's recent filings with their accession numbers, 8-K items and the sections worth reading", async () => {
    const output = await run({ symbol: 'aapl' });
    const content = contentOf(output);
    expect(content).toMatchObject({ symbol: 'AAPL', company: 'Apple Inc.', cik: '0000320193', sample: true });
    const filings = content.filings as {
      form: string;
      filed: string;
      accession: string;
      items?: string[];
      key_sections: string[];
      url: string;
    }[];
    expect(filings.map((filing) => filing.filed)).toEqual([...filings.map((filing) => filing.filed)].sort().reverse());
    const tenK = filings.find((filing) => filing.form === '10-K');
    expect(tenK?.key_sections).toEqual(['1A', '7']);
    expect(filings.find((filing) => filing.form === '10-Q')?.key_sections).toEqual(['I-2', 'II-1A']);
    const results = filings.find((filing) => filing.items?.includes('2.02'));
    expect(results).toMatchObject({ form: '8-K', key_sections: results?.items });
    expect((await latest('AAPL', '10-K')).filing.accession).toBe(tenK?.accession);
    // A listing is no material to quote: only sections read are.
    expect(output.documents ?? []).toEqual([]);
    const eightKs = contentOf(await run({ symbol: 'AAPL', form: '8-k' })).filings as { form: string }[];
    expect(eightKs.length).toBeGreaterThan(0);
    expect(eightKs.every((filing) => filing.form === '8-K')).toBe(true);
  });

  it("reads one section of a filing named by accession, registered with the filing's identity for citations", async () => {
    const { filing, document } = await latest('AAPL', '10-K');
    const risks = document.sections.find((section) => section.item === '1A')!;
    const output = await run({ symbol: 'AAPL', accession: filing.accession, item: 'Item 1a' });
    expect(contentOf(output)).toMatchObject({
      symbol: 'AAPL',
      filing: { form: '10-K', filed: filing.filed, accession: filing.accession, url: filing.url },
      item: '1A',
      title: 'Risk Factors',
      text: risks.text,
    });
    expect(contentOf(output)).not.toHaveProperty('pages');
    expect(output.urls).toEqual([filing.url]);
    expect(output.documents).toEqual([
      {
        url: filing.url,
        title: `Apple Inc. 10-K filed ${filing.filed}`,
        publisher: 'U.S. Securities and Exchange Commission (EDGAR)',
        publishedAt: filing.filed,
        source: 'sec_filing',
        text: risks.text,
        filing: { cik: '0000320193', accession: filing.accession, form: '10-K', filed: filing.filed, item: '1A', concept: null },
      },
    ]);
  });

  it('reads the item of the latest filing of a form: the latest 8-K with item 2.02, the latest 10-Q', async () => {
    const results = await latest('MSFT', '8-K', '2.02');
    const output = await run({ symbol: 'MSFT', form: '8-K', item: '2.02' });
    expect(contentOf(output)).toMatchObject({ item: '2.02', filing: { accession: results.filing.accession } });
    expect(contentOf(output).text).toBe(results.document.sections.find((section) => section.item === '2.02')?.text);
    expect(output.documents?.[0]?.filing).toMatchObject({ form: '8-K', item: '2.02', accession: results.filing.accession });

    const quarterly = await latest('MSFT', '10-Q');
    const mdna = await run({ symbol: 'MSFT', form: '10-Q', item: 'I-2' });
    expect(contentOf(mdna)).toMatchObject({ item: 'I-2', filing: { accession: quarterly.filing.accession } });
    expect(contentOf(mdna).title).toMatch(/Management’s Discussion and Analysis/);
  });

  it('answers an unknown accession, an unknown item or an unnamed filing as content, registering nothing', async () => {
    const { filing } = await latest('AAPL', '10-K');
    const unknown = await run({ symbol: 'AAPL', accession: '0000789019-25-900114', item: '1A' });
    expect(contentOf(unknown)).toMatchObject({ error: 'unknown_accession' });
    expect(unknown.documents).toBeUndefined();

    const noItem = await run({ symbol: 'AAPL', accession: filing.accession, item: '2.02' });
    expect(contentOf(noItem)).toMatchObject({ error: 'unknown_item', filing: { accession: filing.accession } });
    expect(contentOf(noItem).available_items).toEqual(expect.arrayContaining([{ item: '1A', title: 'Risk Factors' }]));
    expect(noItem.documents).toBeUndefined();

    expect(contentOf(await run({ symbol: 'AAPL', form: '8-K', item: '3.01' }))).toMatchObject({ error: 'no_such_filing' });
    expect(contentOf(await run({ symbol: 'AAPL', item: '1A' }))).toMatchObject({ error: 'filing_not_named' });
  });

  it('says a non-US symbol has no SEC filings, as content rather than an error', async () => {
    for (const input of [{ symbol: '7203.T' }, { symbol: '7203.T', form: '10-K', item: '1A' }]) {
      const output = await run(input);
      expect(contentOf(output)).toMatchObject({
        symbol: '7203.T',
        note: expect.stringMatching(/^No SEC filings for this market/) as unknown,
      });
      expect(output.documents).toBeUndefined();
    }
  });

  it("reads no section in a news run whose sources leave the filing's site out", async () => {
    const only = filingsTool(sample, { sources: { include: ['reuters.com'] } });
    const output = await run({ symbol: 'AAPL', form: '8-K', item: '2.02' }, only);
    expect(contentOf(output)).toMatchObject({ error: 'source_not_allowed' });
    expect(output.documents).toBeUndefined();
    const allowed = filingsTool(sample, { sources: { exclude: ['reuters.com'] } });
    expect((await run({ symbol: 'AAPL', form: '8-K', item: '2.02' }, allowed)).documents).toHaveLength(1);
  });

  it("answers EDGAR's failures as content the model can carry on from", async () => {
    const failing = sampleWith({
      filings: () => Promise.reject(new EdgarError('blocked', 'SEC EDGAR is holding requests back until 12:10 UTC.')),
    });
    expect(contentOf(await run({ symbol: 'AAPL' }, filingsTool(failing)))).toEqual({
      symbol: 'AAPL',
      error: 'edgar_blocked',
      message: 'SEC EDGAR is holding requests back until 12:10 UTC.',
    });
  });

  describe('a section longer than the result cap', () => {
    // Sixty risk factors of about 1.7 KB each: about 100 KB, several times the tool's result cap.
    const long = Array.from(
      { length: 60 },
      (_, index) =>
        `Risk ${index + 1}: “${'Supply disruptions could raise costs and delay shipments. '.repeat(30)}”\n\nIts heading ${index + 1}.`,
    ).join('\n\n');
    const source = sampleWith({
      document: async (symbol, accession) => {
        const document = await sample.document(symbol, accession);
        return document && { ...document, sections: [{ item: '1A', title: 'Risk Factors', text: long }] };
      },
    });
    const paged = filingsTool(source);

    it('is read in pages that each fit under the cap and together are the whole section', async () => {
      const { filing } = await latest('AAPL', '10-K');
      const first = await run({ symbol: 'AAPL', accession: filing.accession, item: '1A' }, paged);
      const pages = contentOf(first).pages as number;
      expect(pages).toBeGreaterThan(3);
      expect(contentOf(first)).toMatchObject({ page: 1, note: `Page 1 of ${pages} of this section; ask with page 2 for more.` });
      const texts: string[] = [];
      for (let page = 1; page <= pages; page++) {
        const output = await run({ symbol: 'AAPL', accession: filing.accession, item: '1A', page }, paged);
        expect(Buffer.byteLength(JSON.stringify(output.content))).toBeLessThanOrEqual(paged.maxResultBytes!);
        // What a quote must occur in is the page the model was shown, not the section it did not read.
        expect(output.documents?.[0]?.text).toBe(contentOf(output).text);
        texts.push(contentOf(output).text as string);
      }
      expect(texts.join('\n\n')).toBe(long);
      expect(contentOf(await run({ symbol: 'AAPL', accession: filing.accession, item: '1A', page: pages + 1 }, paged))).toMatchObject({
        error: 'no_such_page',
      });
    });

    it('cuts a paragraph longer than a page between sentences', () => {
      const paragraph = 'Demand could fall. '.repeat(2_000).trim();
      const pages = sectionPages(paragraph, 4_096);
      expect(pages.length).toBeGreaterThan(8);
      for (const page of pages) {
        expect(Buffer.byteLength(JSON.stringify(page))).toBeLessThanOrEqual(4_096);
        expect(page).toMatch(/^Demand could fall\.( Demand could fall\.)*$/);
      }
    });
  });

  it('makes a quote of a section read a sec_filing citation naming the item, and drops one the section does not contain', async () => {
    const { filing, document } = await latest('NVDA', '10-K');
    const output = await run({ symbol: 'NVDA', form: '10-K', item: '7' });
    const documents = new RetrievedDocuments();
    for (const read of output.documents ?? []) documents.add(read);
    const mdna = document.sections.find((section) => section.item === '7')!.text;
    const quote = `${mdna.split('\n\n')[1]!.split('. ')[0]!}.`;
    expect(documents.resolve({ url: filing.url, quote })).toEqual({
      citation: {
        url: filing.url,
        title: `NVIDIA CORP 10-K filed ${filing.filed}`,
        publisher: 'U.S. Securities and Exchange Commission (EDGAR)',
        published_at: filing.filed,
        quote,
        source: 'sec_filing',
        filing: { cik: filing.cik, accession: filing.accession, form: '10-K', filed: filing.filed, item: '7', concept: null },
      },
    });
    expect(documents.resolve({ url: filing.url, quote: 'The Company expects revenue to double next year.' })).toEqual({
      dropped: 'quote_not_found',
    });
    // Item 1A of the same filing was not read: its text is no material of this run.
    const risks = document.sections.find((section) => section.item === '1A')!.text.split('\n\n')[2]!;
    expect(documents.resolve({ url: filing.url, quote: risks })).toEqual({ dropped: 'quote_not_found' });
  });
});
