// Filings as sources (issue 38 item 3), through the engine, the real SDK and the fake Messages API: an analysis that
// cites a risk factor quotes its 10-K section (the done-when), a news item cites a results 8-K, a quote a
// section does not contain is dropped, and the tool is offered only where it belongs. The model is the offline
// analyst, which reads the sections as Claude would (sec_filings with form and item) and cites them verbatim.
import { AnalysisRequest, NewsRequest, StockReportRequest, type Citation } from '@fin/contracts';
import { sampleFilingsSource, type Filing, type FilingSection } from '@fin/edgar';
import { jsonReply, type FakeAnthropic, type MessagesRequestBody } from '@fin/fakes';
import { offlineAnalyst } from '@fin/offline';
import type { AiEngine } from '../src';
import { drain, scriptedEngine } from './helpers';

const sample = sampleFilingsSource();

/** The latest filing of a form in the sample (with the 8-K item when given) and one of its sections. */
async function sectionOf(symbol: string, form: string, item: string): Promise<{ filing: Filing; section: FilingSection }> {
  const filing = (await sample.filings(symbol, { forms: [form] }))?.filings.find(
    (candidate) => form !== '8-K' || candidate.items.includes(item),
  );
  const section = filing && (await sample.document(symbol, filing.accession))?.sections.find((candidate) => candidate.item === item);
  if (!filing || !section) throw new Error(`no ${form} item ${item} for ${symbol} in the sample`);
  return { filing, section };
}

const filingCitations = (citations: readonly Citation[]) => citations.filter((citation) => citation.source === 'sec_filing');
const toolsOffered = (body: MessagesRequestBody | undefined) => (body?.tools ?? []).map((tool) => tool.name);

describe('filings as sources, through the engine and the fake Messages API', () => {
  let fake: FakeAnthropic;
  let engine: AiEngine;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ fake, engine, close } = await scriptedEngine({}, { filings: sampleFilingsSource() }));
  });
  afterAll(() => close());
  beforeEach(() => fake.setHandler(offlineAnalyst()));
  afterEach(() => fake.reset());

  it("an analysis that cites a risk factor quotes its 10-K section (Item 1A), under the filing's document URL", async () => {
    const { filing, section } = await sectionOf('AAPL', '10-K', '1A');
    for (const output_format of [{ type: 'markdown' }, { type: 'json' }, { type: 'json_schema', schema: { summary: 'string' } }]) {
      const { result } = await engine.analysis(
        AnalysisRequest.parse({ prompt: 'What are the main risks of holding Apple?', symbols: ['AAPL'], output_format }),
      );
      const cited = filingCitations(result.citations);
      expect(cited).toHaveLength(1);
      const [risk] = cited;
      expect(risk?.filing).toEqual({
        cik: '0000320193',
        accession: filing.accession,
        form: '10-K',
        filed: filing.filed,
        item: '1A',
        concept: null,
      });
      expect(risk?.url).toBe(filing.url);
      expect(risk?.quote.length).toBeGreaterThan(40);
      expect(section.text).toContain(risk?.quote);
      expect(risk).toMatchObject({ title: `Apple Inc. 10-K filed ${filing.filed}`, published_at: filing.filed });
      // The market figures are still cited beside it.
      expect(result.citations.some((citation) => citation.source === 'market_data')).toBe(true);
    }
    // The model read the section, not the filing: the latest 10-K's Item 1A, asked for by form and item.
    const calls = fake.requests.flatMap((request) =>
      (request.body?.messages ?? []).flatMap((message) =>
        typeof message.content === 'string'
          ? []
          : message.content.filter((block) => block.type === 'tool_use' && block.name === 'sec_filings'),
      ),
    );
    expect(calls.map((call) => call.input)).toContainEqual({ symbol: 'AAPL', form: '10-K', item: '1A' });
  });

  it('says in a markdown analysis which risk factor the filing names', async () => {
    const { section } = await sectionOf('TSLA', '10-K', '1A');
    const { result } = await engine.analysis(AnalysisRequest.parse({ prompt: 'How risky is TSLA?', symbols: ['TSLA'] }));
    expect(result.format).toBe('markdown');
    const heading = section.text.split('\n\n')[1]!;
    expect(result.content).toContain('## Risk factors in the filings');
    expect(result.content).toContain(heading);
  });

  it('a question not about risks reads no filing', async () => {
    const { result } = await engine.analysis(AnalysisRequest.parse({ prompt: 'Is AAPL expensive?', symbols: ['AAPL'] }));
    expect(filingCitations(result.citations)).toEqual([]);
    expect(toolsOffered(fake.requests[0]?.body)).toContain('sec_filings');
    expect(JSON.stringify(fake.requests.map((request) => request.body?.messages))).not.toContain('"sec_filings"');
  });

  it("a news item cites the company's latest results 8-K (item 2.02) beside its article", async () => {
    const { filing, section } = await sectionOf('MSFT', '8-K', '2.02');
    const { result } = await engine.news(NewsRequest.parse({ symbols: ['MSFT'], n: 3 }));
    const citing = result.news.filter((item) => filingCitations(item.citations).length > 0);
    expect(citing).toHaveLength(1);
    const [item] = citing;
    const [results] = filingCitations(item!.citations);
    expect(results?.filing).toEqual({
      cik: filing.cik,
      accession: filing.accession,
      form: '8-K',
      filed: filing.filed,
      item: '2.02',
      concept: null,
    });
    expect(results?.url).toBe(filing.url);
    expect(section.text).toContain(results?.quote);
    expect(item?.content).toContain(results?.quote);
    // The article the item is written from is still cited first, and is still its source.
    expect(item?.citations[0]?.source).toBe('market_data');
    expect(item?.sources).toEqual([item?.citations[0]?.url]);
  });

  it('drops a quote of a filing that its section does not contain, and one of a section the run did not read', async () => {
    const { filing } = await sectionOf('AAPL', '10-K', '1A');
    const { section: mdna } = await sectionOf('AAPL', '10-K', '7');
    const analyst = offlineAnalyst();
    fake.setHandler(async (request, context) => {
      const reply = await analyst(request, context);
      const block = reply.content[0];
      if (block?.type !== 'text' || !block.text.startsWith('{"citations"')) return reply;
      // Asked for its citations, the model also claims a passage the risk factors never say, and one of Item 7.
      const claims = JSON.parse(block.text) as { citations: { url: string; quote: string }[] };
      return jsonReply({
        citations: [
          ...claims.citations,
          { url: filing.url, quote: 'The Company faces no material risks from its suppliers.' },
          { url: filing.url, quote: mdna.text.split('\n\n')[1]!.split('. ')[0]! },
        ],
      });
    });
    const { result } = await engine.analysis(AnalysisRequest.parse({ prompt: 'Summarise the risks of holding AAPL.', symbols: ['AAPL'] }));
    const cited = filingCitations(result.citations);
    expect(cited).toHaveLength(1);
    expect(cited[0]?.filing?.item).toBe('1A');
    expect(JSON.stringify(result)).not.toContain('no material risks');
  });

  it('offers sec_filings to news and analysis, not to stock reports or chat', async () => {
    // The first request of each run carries its tools; an empty answer ends the run there.
    const offered = async (run: () => Promise<unknown>) => {
      fake.reset();
      fake.setHandler(() => jsonReply({}));
      await run().catch(() => undefined);
      return toolsOffered(fake.requests[0]?.body);
    };
    expect({
      news: await offered(() => engine.news(NewsRequest.parse({ symbols: ['AAPL'] }))),
      analysis: await offered(() =>
        engine.analysis(AnalysisRequest.parse({ prompt: 'How is Apple doing?', output_format: { type: 'json' } })),
      ),
      stockReport: await offered(() => engine.stockReport(StockReportRequest.parse({ symbols: ['AAPL'] }))),
      chat: await offered(() => drain(engine.chat({ history: [], message: 'How is Apple doing?' }))),
    }).toEqual({
      news: ['market_data', 'sec_filings'],
      analysis: ['market_data', 'sec_filings'],
      stockReport: ['market_data'],
      chat: ['market_data'],
    });
  });
});

it('offers no sec_filings tool online without a FilingsSource', async () => {
  const { fake, engine, close } = await scriptedEngine();
  try {
    fake.setHandler(offlineAnalyst());
    await engine.analysis(AnalysisRequest.parse({ prompt: 'What are the risks of AAPL?', symbols: ['AAPL'] }));
    expect(toolsOffered(fake.requests[0]?.body)).toEqual(['market_data']);
  } finally {
    await close();
  }
});
