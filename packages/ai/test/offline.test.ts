import { Writable } from 'node:stream';
import { parseConfig } from '@fin/config';
import {
  AnalysisRequest,
  NewsRequest,
  NewsResult,
  StockReportRequest,
  StockReportResult,
  AnalysisResult,
  type Citation,
} from '@fin/contracts';
import { createLogger } from '@fin/log';
import { aiConfigShape, createAiEngine, OFFLINE_NOTICE, OfflineModeConflictError, type AiEngine } from '../src';
import { SampleMarketDataProvider } from '../src/market-data';
import { drain, silentLogger } from './helpers';

describe('offline mode', () => {
  let engine: AiEngine;
  const logLines: string[] = [];

  beforeAll(async () => {
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(chunk.toString());
        done();
      },
    });
    engine = await createAiEngine({
      config: parseConfig(aiConfigShape, {}),
      logger: createLogger({ service: 'ai-offline-test', destination }),
    });
  });
  afterAll(() => engine.close());

  it('switches on without a key, loudly', () => {
    expect(engine.offline).toBe(true);
    expect(logLines.join('')).toMatch(/AI OFFLINE MODE/);
  });

  it('never switches on where a real key is configured', async () => {
    const config = parseConfig(aiConfigShape, { ANTHROPIC_API_KEY: 'sk-ant-real-1234567890', AI_OFFLINE: 'true' });
    await expect(createAiEngine({ config, logger: silentLogger })).rejects.toBeInstanceOf(OfflineModeConflictError);
    const online = await createAiEngine({
      config: parseConfig(aiConfigShape, { ANTHROPIC_API_KEY: 'sk-ant-real-1234567890' }),
      logger: silentLogger,
    });
    expect(online.offline).toBe(false);
    await online.close();
  });

  it('writes contract-valid news grounded in the sample articles, marked offline', async () => {
    const progress: number[] = [];
    const { result, usage } = await engine.news(NewsRequest.parse({ symbols: ['aapl', 'MSFT'], n: 3 }), {
      onProgress: (value) => progress.push(value),
    });
    expect(NewsResult.parse(result)).toEqual(result);
    expect(result.news).toHaveLength(3);
    for (const item of result.news) {
      expect(item.sources.length).toBeGreaterThan(0);
      for (const url of [...item.sources, ...item.further_reading]) expect(url).toMatch(/^https:\/\/news\.example\.com\//);
    }
    expect(result.meta).toMatchObject({ offline: true, model: 'offline-analyst', prompt_version: 'news@4' });
    expect(usage.inputTokens + usage.cacheCreationInputTokens + usage.cacheReadInputTokens).toBeGreaterThan(0);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
  });

  const newsOf = async (symbols: string[], n?: number) => {
    const { result } = await engine.news(NewsRequest.parse({ symbols, n }));
    expect(NewsResult.parse(result)).toEqual(result);
    return result.news;
  };

  it('answers n news items for a sample symbol, and no more than the articles there are: one source, one item', async () => {
    for (const [n, expected] of [
      [undefined, 5],
      [4, 4],
      [1, 1],
      // Above the tool's page of ten articles for one symbol: ten items, never the same article again.
      [20, 10],
    ] as const) {
      const news = await newsOf(['NVDA'], n);
      expect(news).toHaveLength(expected);
      expect(new Set(news.map((item) => item.title)).size).toBe(expected);
      expect(new Set(news.map((item) => item.sources[0])).size).toBe(expected);
      expect(news.map((item) => item.title).join('\n')).not.toMatch(/What it means for|Risk check for|in context:/);
      for (const item of news) {
        expect(item.sources.length).toBeGreaterThan(0);
        for (const url of [...item.sources, ...item.further_reading]) expect(url).toMatch(/^https:\/\/news\.example\.com\//);
        expect(item.content).toContain(OFFLINE_NOTICE);
      }
    }
  });

  it('answers a narrow time range with the one article in it: one item, counted once in ticker_sentiment', async () => {
    const { result } = await engine.news(
      NewsRequest.parse({ symbols: ['AAPL'], n: 4, time_from: '2026-11-19T00:00:00Z', time_to: '2026-11-19T23:59:59Z' }),
    );
    expect(result.news.map((item) => item.title)).toEqual([
      'Apple services revenue sets another quarterly record as device sales hold steady',
    ]);
    expect(result.news[0]?.sources).toEqual([expect.stringContaining('apple-services-revenue-record-quarter')]);
    expect(result.ticker_sentiment).toEqual([expect.objectContaining({ symbol: 'AAPL', items: 1 })]);
  });

  it('answers exactly n news items for symbols outside the sample, different for each symbol and the same on every run', async () => {
    const meta = await newsOf(['META']);
    const zzzz = await newsOf(['ZZZZ'], 3);
    expect(meta).toHaveLength(5);
    expect(zzzz).toHaveLength(3);
    expect(meta.every((item) => item.title.includes('META') || item.content.includes('META'))).toBe(true);
    expect(zzzz.every((item) => item.title.includes('ZZZZ') || item.content.includes('ZZZZ'))).toBe(true);
    expect(meta.map((item) => item.sources[0])).not.toEqual(zzzz.map((item) => item.sources[0]));
    expect(await newsOf(['META'])).toEqual(meta);
    expect(await newsOf(['7203.T', 'ABCDEFGHIJ'], 4)).toHaveLength(4);
    // n is per request: spread over the symbols, each of them represented.
    const mixed = await newsOf(['AAPL', 'META', 'ZZZZ'], 7);
    expect(mixed).toHaveLength(7);
    for (const symbol of ['AAPL', 'META', 'ZZZZ']) expect(mixed.some((item) => item.content.includes(symbol))).toBe(true);
  });

  it('writes a stock report and a comparison for symbols outside the sample, on figures rather than gaps', async () => {
    for (const symbols of [['ZZZZ'], ['META', 'ZZZZ'], ['NVDA', '7203.T']]) {
      const { result } = await engine.stockReport(StockReportRequest.parse({ symbols }));
      expect(StockReportResult.parse(result)).toEqual(result);
      expect(result.detailed_analysis.length).toBeGreaterThanOrEqual(3);
      expect(result.quick_insights.length).toBeGreaterThanOrEqual(2);
      const text = JSON.stringify(result);
      expect(text).not.toMatch(/n\/a|cannot rank|no sample data/);
      for (const symbol of symbols) expect(text).toContain(symbol);
      expect(text).toContain(OFFLINE_NOTICE);
    }
  });

  it('analyses symbols outside the sample with their figures', async () => {
    const request = AnalysisRequest.parse({
      prompt: 'Is ZZZZ a better buy than META?',
      symbols: ['ZZZZ', 'META'],
      output_format: { type: 'markdown' },
    });
    const { result } = await engine.analysis(request);
    expect(AnalysisResult.parse(result)).toEqual(result);
    expect(result.format).toBe('markdown');
    const content = result.format === 'markdown' ? result.content : '';
    expect(content).toMatch(/\(ZZZZ\): revenue growth -?\d+\.\d%/);
    expect(content).toMatch(/\(META\): revenue growth -?\d+\.\d%/);
    expect(content).not.toContain('no sample data');
    expect(content).toContain(OFFLINE_NOTICE);
  });

  it('writes a comparison for two symbols in which every insight and quick insight weighs one against the other', async () => {
    const { result } = await engine.stockReport(StockReportRequest.parse({ symbols: ['NVDA', 'MSFT'] }));
    expect(StockReportResult.parse(result)).toEqual(result);
    expect(new Set(result.detailed_analysis.map((item) => item.category)).size).toBeGreaterThanOrEqual(3);
    const both = (text: string) => text.includes('NVDA') && text.includes('MSFT');
    for (const item of result.detailed_analysis) {
      expect(item.keyMetric).toMatch(/NVDA.*vs MSFT/);
      expect(both(item.title)).toBe(true);
      expect(item.implications.every(both)).toBe(true);
      // The thesis names the company ahead on the measure (which one depends on the figures).
      expect(item.investmentThesis).toMatch(/NVDA|MSFT/);
      expect(item.investmentThesis).toMatch(/of the two/);
    }
    expect(result.quick_insights.length).toBeGreaterThanOrEqual(2);
    expect(result.quick_insights.length).toBeLessThanOrEqual(4);
    for (const insight of result.quick_insights) {
      expect(both(insight)).toBe(true);
      // One sentence: a single full stop, at the end (decimals aside).
      expect(insight.replace(/\d\.\d/g, '').match(/\./g)).toHaveLength(1);
      expect(insight.endsWith('.')).toBe(true);
    }
  });

  it('says in a stock report that it weighed the client data', async () => {
    const request = StockReportRequest.parse({ symbols: ['AAPL', 'MSFT'], data: { recent_earnings: { AAPL: 'EPS beat by 4%' } } });
    const { result } = await engine.stockReport(request);
    expect(JSON.stringify(result.detailed_analysis)).toContain("The client's data (recent_earnings) was weighed for both AAPL and MSFT.");
  });

  it('answers json_schema analysis with exactly the requested fields and types', async () => {
    const request = AnalysisRequest.parse({
      prompt: 'How exposed is this portfolio to rate rises?',
      portfolio_composition: [
        { symbol: 'AAPL', percentage: 60 },
        { symbol: 'TSLA', percentage: 40 },
      ],
      output_format: {
        type: 'json_schema',
        schema: { summary: 'string', risk_score: 'number', holdings: 'integer', hedged: 'boolean', notes: 'array' },
      },
    });
    const { result } = await engine.analysis(request);
    expect(AnalysisResult.parse(result)).toEqual(result);
    expect(result.format).toBe('json_schema');
    const content = result.content as Record<string, unknown>;
    expect(Object.keys(content).sort()).toEqual(['hedged', 'holdings', 'notes', 'risk_score', 'summary']);
    expect(typeof content.summary).toBe('string');
    expect(Number.isInteger(content.holdings)).toBe(true);
    expect(Array.isArray(content.notes)).toBe(true);
  });

  // Issue 27 item 7: offline answers echoed the untrusted-data rule of the system prompt, made claims their own
  // figures contradicted, and ignored the portfolio's weights.
  it.each([
    ['markdown', { type: 'markdown' }],
    ['json', { type: 'json' }],
    ['json_schema', { type: 'json_schema', schema: { summary: 'string', notes: 'array' } }],
  ] as const)('quotes the client question in a %s analysis, never the system prompt around it', async (_name, outputFormat) => {
    const question = 'Is Microsoft a defensive holding?\n\nConsider the last two years.';
    for (const data of [undefined, { note: 'x' }]) {
      const request = AnalysisRequest.parse({
        prompt: question,
        symbols: ['MSFT'],
        output_format: outputFormat,
        ...(data ? { data } : {}),
      });
      const { result } = await engine.analysis(request);
      const text = JSON.stringify(result.content);
      expect(text).toContain(JSON.stringify(`Sample analysis of: ${question}`).slice(1, -1));
      expect(text).not.toMatch(/untrusted|tool_output|instructions|client supplied|client_data/i);
    }
  });

  it('derives single-company statements from the figures it shows: shrinking growth is not "above the sector", a beta of 1.74 is not "moderate"', async () => {
    const { result: tesla } = await engine.stockReport(StockReportRequest.parse({ symbols: ['TSLA'] }));
    const growth = tesla.detailed_analysis.find((item) => item.category === 'growth');
    expect(growth?.keyMetric).toContain('-1.6%');
    expect(JSON.stringify(growth)).not.toMatch(/above the sector|supports a premium/);
    expect(growth?.investmentThesis).toBe('Shrinking revenue (-1.6%) weighs on the investment case.');
    expect(tesla.quick_insights[0]).toMatch(/^TSLA combines shrinking revenue \(-1\.6%\)/);

    const { result: nvidia } = await engine.stockReport(StockReportRequest.parse({ symbols: ['NVDA'] }));
    const risk = nvidia.detailed_analysis.find((item) => item.category === 'risk');
    expect(risk?.keyMetric).toContain('Beta: NVDA 1.74');
    expect(risk?.investmentThesis).toBe('Risk is high relative to the market (beta 1.74).');
    // The bands are stated beside the figure ("1.1–1.5 moderately above it"); 1.74 itself is never called moderate.
    expect(JSON.stringify(nvidia)).not.toMatch(/Risk is moderate|1\.74 means the stock has moved somewhat/);
  });

  it('places a beta in stated bands: 1.21 is moderately above the market, 0.9 close to it, 1.74 high', async () => {
    const riskOf = async (symbol: string) =>
      (await engine.stockReport(StockReportRequest.parse({ symbols: [symbol] }))).result.detailed_analysis.find(
        (item) => item.category === 'risk',
      );
    const apple = await riskOf('AAPL');
    expect(apple?.investmentThesis).toBe('Risk is moderately above the market (beta 1.21).');
    expect(apple?.implications[0]).toBe(
      'A beta of 1.21 means the stock has moved somewhat more than the market: deeper drawdowns in sell-offs.',
    );
    expect(JSON.stringify(apple)).not.toContain('high relative to the market');
    expect((await riskOf('MSFT'))?.investmentThesis).toBe("Risk is close to the market's (beta 0.90).");
    expect((await riskOf('NVDA'))?.investmentThesis).toBe('Risk is high relative to the market (beta 1.74).');
  });

  it('reads bad news in the sample headlines as bad: margin pressure and slipping shares are bearish', async () => {
    const news = await newsOf(['META'], 20);
    const sentimentOf = (words: string) => news.find((item) => item.title.includes(words))?.tickers?.[0];
    for (const words of ['flags margin pressure from higher input costs', 'shares slip after a peer']) {
      const ticker = sentimentOf(words);
      expect(ticker).toBeDefined();
      expect(ticker?.sentiment_score).toBeLessThan(-0.3);
      expect(ticker?.sentiment_label).toMatch(/bearish/);
      expect(ticker?.reasoning).toContain('negative');
    }
    expect(sentimentOf('quarterly revenue comes in ahead of guidance')?.sentiment_score).toBeGreaterThan(0.3);
  });

  it("weighs a portfolio by the request's weights", async () => {
    const answer = async (apple: number) => {
      const { result } = await engine.analysis(
        AnalysisRequest.parse({
          prompt: 'How risky is this portfolio?',
          portfolio_composition: [
            { symbol: 'AAPL', percentage: apple },
            { symbol: 'TSLA', percentage: 100 - apple },
          ],
          output_format: { type: 'markdown' },
        }),
      );
      return result.format === 'markdown' ? result.content : '';
    };
    const [mostlyApple, mostlyTesla] = await Promise.all([answer(90), answer(10)]);
    expect(mostlyApple).toContain('(AAPL, 90% of the portfolio)');
    expect(mostlyApple).toContain('AAPL is 90% of the portfolio: the portfolio is concentrated');
    expect(mostlyTesla).toContain('TSLA is 90% of the portfolio');
    const beta = (text: string) => Number(/Weighted by the holdings, beta is (\d+\.\d+)/.exec(text)?.[1]);
    expect(beta(mostlyTesla)).toBeGreaterThan(beta(mostlyApple));
    expect(beta(mostlyTesla)).toBeGreaterThan(2);
  });

  it('streams a markdown analysis in chunks that add up to the stored result', async () => {
    const request = AnalysisRequest.parse({
      prompt: 'Is Microsoft a defensive holding?',
      symbols: ['MSFT'],
      output_format: { type: 'markdown', stream: true },
    });
    const items = await drain(engine.analysisStream(request));
    const chunks = items.flatMap((item) => (item.kind === 'event' && item.event.type === 'text' ? [item.event.text] : []));
    const last = items.at(-1);
    expect(last?.kind).toBe('result');
    expect(chunks.length).toBeGreaterThan(1);
    if (last?.kind === 'result') expect(last.result.result.content).toBe(chunks.join('').trim());
  });

  it('chats with research and tool events before the answer', async () => {
    const items = await drain(engine.chat({ history: [], message: 'How is AAPL doing?' }));
    const events = items.flatMap((item) => (item.kind === 'event' ? [item.event] : []));
    const kinds = events.map((event) =>
      event.type === 'text' || event.type === 'thinking' ? event.type : `${event.type}:${'node' in event ? event.node : event.tool}`,
    );
    expect(kinds.slice(0, 3)).toEqual(['node_start:research', 'tool_start:market_data', 'tool_end:market_data']);
    expect(kinds).toContain('node_start:answer');
    const reply = items.at(-1);
    expect(reply?.kind === 'result' && reply.result.result.text).toMatch(/Apple/);
  });

  it('looks up market data for a chat question that needs figures, by company name or from the earlier turns', async () => {
    const toolsOf = async (history: { role: 'user' | 'assistant'; content: string }[], message: string) => {
      const items = await drain(engine.chat({ history, message }));
      const tools = items.flatMap((item) => (item.kind === 'event' && item.event.type === 'tool_start' ? [item.event.tool] : []));
      const last = items.at(-1);
      return { tools, text: last?.kind === 'result' ? last.result.result.text : '' };
    };
    const byName = await toolsOf([], "What is Nvidia's P/E ratio?");
    expect(byName.tools).toEqual(['market_data']);
    expect(byName.text).toMatch(/NVIDIA.*P\/E \d/);
    const followUp = await toolsOf(
      [
        { role: 'user', content: 'Tell me about Microsoft.' },
        { role: 'assistant', content: byName.text },
      ],
      'And its margins?',
    );
    expect(followUp.tools).toEqual(['market_data']);
    expect(followUp.text).toMatch(/MSFT.*net margin/);
    const general = await toolsOf([], 'What is a dividend?');
    expect(general.tools).toEqual([]);
    expect(general.text).toMatch(/sample dataset/);
  });

  describe('citations from the bundled sample data', () => {
    const sample = new SampleMarketDataProvider();
    /** What the market_data tool could have returned for a symbol: its articles and its figure resources. */
    const materialOf = async (symbol: string) => {
      const to = new Date();
      const news = await sample.companyNews(symbol, { from: new Date(to.getTime() - 14 * 86_400_000), to, limit: 10 });
      const { annual: _annual, ...metrics } = await sample.metrics(symbol);
      const figures: [string, unknown][] = [
        [sample.resourceUrl('quote', symbol), await sample.quote(symbol)],
        [sample.resourceUrl('profile', symbol), await sample.profile(symbol)],
        [sample.resourceUrl('metrics', symbol), metrics],
      ];
      return new Map<string, { text: string; title: string; publisher: string; date: string | null }>([
        ...news.items.map(
          (item) =>
            [
              item.url,
              {
                text: `${item.headline}\n${item.summary}`,
                title: item.headline,
                publisher: item.source,
                date: item.publishedAt.slice(0, 10),
              },
            ] as const,
        ),
        ...figures.map(
          ([url, value]) => [url, { text: JSON.stringify(value), title: '', publisher: sample.publisher, date: null }] as const,
        ),
      ]);
    };
    const expectGrounded = (
      citations: Citation[],
      material: Map<string, { text: string; title: string; publisher: string; date: string | null }>,
    ) => {
      for (const citation of citations) {
        const found = material.get(citation.url);
        expect(found).toBeDefined();
        // Verbatim: the quote is a passage of the sample data itself.
        expect(found?.text).toContain(citation.quote);
        expect(citation.publisher).toBe(found?.publisher);
        if (citation.source === 'market_data' && found?.title) {
          expect(citation.title).toBe(found.title);
          expect(citation.published_at).toBe(found.date);
        }
      }
    };

    it('cites the sample article behind every news item, with its title, outlet, date and a verbatim passage', async () => {
      const { result } = await engine.news(NewsRequest.parse({ symbols: ['AAPL', 'ZZZZ'], n: 4 }));
      const material = new Map([...(await materialOf('AAPL')), ...(await materialOf('ZZZZ'))]);
      for (const item of result.news) {
        expect(item.citations.length).toBeGreaterThan(0);
        expect(item.citations[0]?.source).toBe('market_data');
        const articles = item.citations.filter((citation) => citation.source !== 'sec_filing');
        expect(articles.map((citation) => citation.url)).toEqual(item.sources);
        expectGrounded(articles, material);
      }
      // A bundled company's latest results 8-K backs one of its items (the invented ZZZZ files nothing).
      const filings = result.news.flatMap((item) => item.citations.filter((citation) => citation.source === 'sec_filing'));
      expect(filings.map((citation) => [citation.filing?.cik, citation.filing?.form, citation.filing?.item])).toEqual([
        ['0000320193', '8-K', '2.02'],
      ]);
    });

    it('cites the sample figures behind every stock report insight', async () => {
      const { result } = await engine.stockReport(StockReportRequest.parse({ symbols: ['NVDA', 'MSFT'] }));
      const material = new Map([...(await materialOf('NVDA')), ...(await materialOf('MSFT'))]);
      for (const insight of result.detailed_analysis) {
        expect(insight.citations.length).toBeGreaterThan(0);
        expectGrounded(
          insight.citations.filter((citation) => citation.source !== 'sec_filing'),
          material,
        );
        // A filing's citation is of a figure of the report (its accession and concept).
        for (const citation of insight.citations.filter((cited) => cited.source === 'sec_filing')) {
          expect(
            result.figures.some((figure) => figure.accession === citation.filing?.accession && figure.concept === citation.filing.concept),
          ).toBe(true);
        }
      }
      const growth = result.detailed_analysis.find((insight) => insight.category === 'growth');
      expect(growth?.citations.map((citation) => citation.url)).toEqual([
        sample.resourceUrl('metrics', 'NVDA'),
        sample.resourceUrl('metrics', 'MSFT'),
      ]);
    });

    it('cites the sample figures an analysis rests on, in every output format', async () => {
      for (const output_format of [{ type: 'markdown' }, { type: 'json' }, { type: 'json_schema', schema: { summary: 'string' } }]) {
        const { result } = await engine.analysis(AnalysisRequest.parse({ prompt: 'How risky is TSLA?', symbols: ['TSLA'], output_format }));
        const figures = result.citations.filter((citation) => citation.source !== 'sec_filing');
        expect(figures.length).toBeGreaterThan(0);
        expectGrounded(figures, await materialOf('TSLA'));
        // A question about risks also cites the risk factors of the latest 10-K (packages/ai/test/filings-sources.test.ts).
        expect(result.citations.filter((citation) => citation.source === 'sec_filing').map((citation) => citation.filing?.item)).toEqual([
          '1A',
        ]);
      }
    });
  });

  it('is deterministic', async () => {
    for (const symbols of [['AAPL'], ['ZZZZ']]) {
      const request = StockReportRequest.parse({ symbols });
      const first = await engine.stockReport(request);
      const second = await engine.stockReport(request);
      expect({ ...second.result, meta: undefined }).toEqual({ ...first.result, meta: undefined });
    }
    const news = NewsRequest.parse({ symbols: ['NVDA', 'ZZZZ'], n: 6 });
    expect((await engine.news(news)).result.news).toEqual((await engine.news(news)).result.news);
  });
});
