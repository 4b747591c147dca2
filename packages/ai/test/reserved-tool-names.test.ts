// The tools the engine itself offers the model are the names customer tools may not take (issue 34): the Messages
// API refuses a request whose tools name one tool twice. The list lives in @fin/contracts, where the request
// schemas use it; this fails when the engine offers a tool the list does not name.
import { AnalysisRequest, NewsRequest, RESERVED_TOOL_NAMES, StockReportRequest } from '@fin/contracts';
import { sampleFilingsSource } from '@fin/edgar';
import { errorReply } from '@fin/fakes';
import { drain, scriptedEngine } from './helpers';

it('every tool the engine offers the model, in every product, is a reserved customer tool name', async () => {
  // Market data, filings and web search all on: every tool of our own that a run can offer.
  const { fake, engine, close } = await scriptedEngine({ AI_WEB_SEARCH: 'true' }, { filings: sampleFilingsSource() });
  try {
    // The first request of each run carries its tools; the refusal ends the run there.
    fake.setHandler(() => errorReply('invalid_request_error', { message: 'refused by the test' }));
    const runs: Promise<unknown>[] = [
      engine.news(NewsRequest.parse({ symbols: ['AAPL'] })),
      engine.stockReport(StockReportRequest.parse({ symbols: ['AAPL'] })),
      engine.analysis(AnalysisRequest.parse({ prompt: 'How is Apple doing?' })),
      drain(
        engine.analysisStream(AnalysisRequest.parse({ prompt: 'How is Apple doing?', output_format: { type: 'markdown', stream: true } })),
      ),
      drain(engine.chat({ history: [], message: 'How is Apple doing?' })),
    ];
    await Promise.all(runs.map((run) => run.catch(() => undefined)));
    expect(fake.requests).toHaveLength(runs.length);
    const offered = new Set(fake.requests.flatMap((request) => (request.body?.tools ?? []).map((tool) => tool.name)));
    expect([...offered].sort()).toEqual([...RESERVED_TOOL_NAMES].sort());
  } finally {
    await close();
  }
});
