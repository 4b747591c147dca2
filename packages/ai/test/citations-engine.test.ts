// Citations end to end through the engine, the real SDK and the fake Messages API: the fake model cites real
// passages and invented ones; only those grounded in what the run retrieved come back, completed from the material.
import { AnalysisRequest, NewsRequest, StockReportRequest, type Citation } from '@fin/contracts';
import {
  citation,
  errorReply,
  jsonReply,
  message,
  text,
  textReply,
  toolResults,
  toolUseReply,
  webSearch,
  type FakeAnthropic,
  type MessagesRequestBody,
} from '@fin/fakes';
import { CITATION_REQUEST } from '../src/products';
import { SampleMarketDataProvider } from '../src/market-data';
import { defineTool, type AiEngine } from '../src';
import { z } from 'zod';
import { scriptedEngine } from './helpers';

interface Article {
  headline: string;
  summary: string;
  source: string;
  url: string;
  published_at: string;
}

/** The articles the market_data tool returned in the conversation so far (what the fake model "read"). */
function articlesIn(body: MessagesRequestBody): Article[] {
  return toolResults(body).flatMap((result) => {
    const json = /<tool_output[^>]*>\n([\s\S]*)\n<\/tool_output>/.exec(result.text)?.[1];
    const value = json ? (JSON.parse(json) as { articles?: Article[] }) : {};
    return value.articles ?? [];
  });
}

/** The figures of a market_data overview in the conversation, as the model reads them (with each part's source_url). */
function overviewIn(body: MessagesRequestBody): { metrics: Record<string, unknown> & { source_url: string } } {
  const json = /<tool_output[^>]*>\n([\s\S]*)\n<\/tool_output>/.exec(toolResults(body)[0]?.text ?? '')?.[1] ?? '{}';
  return JSON.parse(json) as { metrics: Record<string, unknown> & { source_url: string } };
}

describe('citations through the engine and the fake Messages API', () => {
  let fake: FakeAnthropic;
  let engine: AiEngine;
  let close: () => Promise<void>;
  const sample = new SampleMarketDataProvider();

  beforeAll(async () => {
    ({ fake, engine, close } = await scriptedEngine({ AI_MAX_ROUNDS: '3', AI_TIMEOUT_MS: '2000' }));
  });
  afterAll(() => close());
  afterEach(() => fake.reset());

  it('keeps the news citations grounded in the returned articles, completed from them, and drops invented ones', async () => {
    let article: Article | undefined;
    fake.reply(toolUseReply('market_data', { symbol: 'AAPL', kind: 'news' }), (request) => {
      article = articlesIn(request.body)[0];
      if (!article) throw new Error('the tool returned no article');
      const passage = article.summary.split('. ')[0] ?? article.summary;
      return jsonReply({
        news: [
          {
            title: 'Real',
            content: 'Grounded.',
            sources: [article.url],
            further_reading: [],
            citations: [
              // A real passage, with its whitespace and case changed as a model may.
              { url: article.url, quote: `  ${passage.toUpperCase().replace(/ /g, '\n ')} ` },
              { url: 'https://invented.example.org/apple', quote: passage },
              { url: article.url, quote: 'Apple announced it will buy the moon.' },
            ],
            relevance_score: 0.9,
            published_at: null,
            topics: ['earnings'],
            tickers: [],
          },
        ],
      });
    });
    const { result } = await engine.news(NewsRequest.parse({ symbols: ['AAPL'], n: 1 }));
    const found = article;
    if (!found) throw new Error('the model was never shown an article');
    expect(result.news[0]?.citations).toEqual<Citation[]>([
      {
        url: found.url,
        title: found.headline,
        publisher: found.source,
        published_at: found.published_at.slice(0, 10),
        quote: found.summary.split('. ')[0] ?? found.summary,
        source: 'market_data',
      },
    ]);
    // The model is asked for {url, quote} only: title, publisher and date are never its to say.
    const schema = JSON.stringify((fake.requests[0]?.body as { output_config: unknown }).output_config);
    expect(schema).toContain('"citations"');
    expect(schema).toContain('"quote"');
    expect(schema).not.toContain('"publisher"');
  });

  it('cites web search results by the passages the API cited from them, never by unretrieved text', async () => {
    const results = [
      { url: 'https://www.reuters.example.com/markets/apple-q4', title: 'Apple Q4 beats estimates', pageAge: 'November 19, 2026' },
    ];
    const { fake: searching, engine: withSearch, close: closeSearch } = await scriptedEngine({ AI_WEB_SEARCH: 'true' });
    try {
      searching.reply(
        message(
          [
            ...webSearch('Apple news', results),
            text('Apple beat estimates.', [citation(results[0]!, 'Revenue rose 8% to $102.5 billion.')]),
          ],
          {
            stopReason: 'pause_turn',
          },
        ),
        jsonReply({
          news: [
            {
              title: 'Apple beats',
              content: 'Q4 beat.',
              sources: [results[0]!.url],
              further_reading: [],
              citations: [
                { url: results[0]!.url, quote: 'revenue rose 8% to $102.5 billion' },
                { url: results[0]!.url, quote: 'Revenue rose 18% to $112 billion.' },
              ],
              relevance_score: 0.8,
              published_at: null,
              topics: ['earnings'],
              tickers: [],
            },
          ],
        }),
      );
      const { result } = await withSearch.news(NewsRequest.parse({ symbols: ['AAPL'], n: 1 }));
      expect(result.news[0]?.citations).toEqual([
        {
          url: results[0]!.url,
          title: 'Apple Q4 beats estimates',
          publisher: 'reuters.example.com',
          published_at: '2026-11-19',
          quote: 'Revenue rose 8% to $102.5 billion',
          source: 'web_search',
        },
      ]);
    } finally {
      await closeSearch();
    }
  });

  it('cites the figures of a stock report insight by the resource they were read from', async () => {
    const report = (citations: unknown[]) => ({
      detailed_analysis: [
        { title: 'Growth', keyMetric: 'x', implications: ['a'], investmentThesis: 't', category: 'growth', citations },
        { title: 'Margins', keyMetric: 'y', implications: ['b'], investmentThesis: 't', category: 'profitability' },
        { title: 'Risk', keyMetric: 'z', implications: ['c'], investmentThesis: 't', category: 'risk', citations: [] },
      ],
      quick_insights: [{ text: 'One.' }, { text: 'Two.' }],
    });
    fake.reply(toolUseReply('market_data', { symbol: 'MSFT', kind: 'overview' }), (request) => {
      const { metrics } = overviewIn(request.body);
      const real = `"peRatioTtm":${JSON.stringify(metrics.peRatioTtm)}`;
      return jsonReply(
        report([
          { url: metrics.source_url, quote: real },
          { url: metrics.source_url, quote: '"peRatioTtm":1.5' },
          { url: 'https://finnhub.io/api/v1/stock/metric?symbol=MSFT&metric=all', quote: real },
        ]),
      );
    });
    const { result } = await engine.stockReport(StockReportRequest.parse({ symbols: ['MSFT'] }));
    const metrics = await sample.metrics('MSFT');
    expect(result.detailed_analysis[0]?.citations).toEqual([
      {
        url: sample.resourceUrl('metrics', 'MSFT'),
        title: 'MSFT key financial metrics',
        publisher: sample.publisher,
        published_at: null,
        quote: `"peRatioTtm":${JSON.stringify(metrics.peRatioTtm)}`,
        source: 'market_data',
      },
    ]);
    // An insight the model gave no citations reads as an empty list.
    expect(result.detailed_analysis[1]?.citations).toEqual([]);
  });

  it('asks an analysis for its citations after the answer, and keeps only the grounded ones', async () => {
    fake.reply(
      toolUseReply('market_data', { symbol: 'NVDA', kind: 'quote' }),
      textReply('## NVDA\n\nThe stock trades near its high.'),
      (request) => {
        // The citation request follows the answer: the tool results are two messages back.
        const earlier = { ...request.body, messages: request.body.messages.slice(0, -2) };
        const quote = JSON.parse(
          /<tool_output[^>]*>\n([\s\S]*)\n<\/tool_output>/.exec(toolResults(earlier)[0]?.text ?? '')?.[1] ?? '{}',
        ) as {
          price: number;
          source_url: string;
        };
        return jsonReply({
          citations: [
            { url: quote.source_url, quote: `"price":${quote.price}` },
            { url: quote.source_url, quote: '"price":1' },
          ],
        });
      },
    );
    const { result } = await engine.analysis(AnalysisRequest.parse({ prompt: 'Where does NVDA trade?', symbols: ['NVDA'] }));
    const quote = await sample.quote('NVDA');
    expect(result.citations).toEqual([
      {
        url: sample.resourceUrl('quote', 'NVDA'),
        title: 'NVDA stock quote',
        publisher: sample.publisher,
        published_at: quote.asOf.slice(0, 10),
        quote: `"price":${quote.price}`,
        source: 'market_data',
      },
    ]);
    expect(result.content).toBe('## NVDA\n\nThe stock trades near its high.');
    const answerRound = fake.requests[1]!.body!;
    const citationRound = fake.requests[2]!.body!;
    expect(JSON.stringify(citationRound.messages.at(-1))).toContain(CITATION_REQUEST.slice(0, 40));
    // The answer's request with one more turn: the same tools, tool_choice and (no) output schema, so the citation
    // call reads the whole conversation from the prompt cache.
    expect(citationRound.output_config).toBeUndefined();
    expect(citationRound.tool_choice).toEqual(answerRound.tool_choice);
    expect(citationRound.tools).toEqual(answerRound.tools);
    // As the prompt is read: a string content is the one text block it stands for, and breakpoints are no content.
    const withoutBreakpoints = (messages: MessagesRequestBody['messages']) =>
      JSON.stringify(
        messages.map(({ role, content }) => ({ role, content: typeof content === 'string' ? [{ type: 'text', text: content }] : content })),
      ).replaceAll(',"cache_control":{"type":"ephemeral"}', '');
    expect(withoutBreakpoints(citationRound.messages.slice(0, answerRound.messages.length))).toBe(withoutBreakpoints(answerRound.messages));
  });

  it('makes no citation round for an analysis that retrieved nothing', async () => {
    fake.reply(textReply('General answer.'));
    const { result } = await engine.analysis(AnalysisRequest.parse({ prompt: 'What is diversification?' }));
    expect(result.citations).toEqual([]);
    expect(fake.requests).toHaveLength(1);
  });

  it('stores an analysis without citations when the citation round fails, rather than failing it', async () => {
    fake.reply(toolUseReply('market_data', { symbol: 'NVDA', kind: 'quote' }), textReply('Answer.'), errorReply('invalid_request_error'));
    const { result } = await engine.analysis(AnalysisRequest.parse({ prompt: 'NVDA?', symbols: ['NVDA'] }));
    expect(result).toMatchObject({ format: 'markdown', content: 'Answer.', citations: [] });
  });

  it("cites a tool's documents, under the URL the tool names", async () => {
    const tool = defineTool({
      name: 'crm_notes',
      description: 'Notes',
      input: z.object({}),
      execute: () =>
        Promise.resolve({
          content: 'Client note: the client holds 40% in NVDA.',
          documents: [
            {
              url: 'https://crm.example.net/api/notes',
              title: 'crm_notes',
              source: 'customer_tool' as const,
              text: 'Client note: the client holds 40% in NVDA.',
            },
          ],
        }),
    });
    fake.reply(
      toolUseReply('crm_notes', {}),
      // A structured answer carries its citations itself: no citation round (which would void the cached conversation).
      jsonReply({
        summary: 'Concentrated.',
        _citations: [{ url: 'https://crm.example.net/api/notes', quote: 'the client holds 40% in NVDA' }],
      }),
    );
    const { result } = await engine.analysis(
      AnalysisRequest.parse({
        prompt: 'Is my portfolio concentrated?',
        output_format: { type: 'json_schema', schema: { summary: 'string' } },
      }),
      { customerTools: [tool] },
    );
    expect(result.citations).toEqual([
      {
        url: 'https://crm.example.net/api/notes',
        title: 'crm_notes',
        publisher: 'crm.example.net',
        published_at: null,
        quote: 'the client holds 40% in NVDA',
        source: 'customer_tool',
      },
    ]);
    // The model was told where the tool's answer came from, next to the answer.
    expect(JSON.stringify(fake.requests[1]?.body)).toContain(
      '<tool_output tool=\\"crm_notes\\" source_url=\\"https://crm.example.net/api/notes\\">',
    );
    expect(result.content).toEqual({ summary: 'Concentrated.' });
    expect(fake.requests).toHaveLength(2);
  });
});
