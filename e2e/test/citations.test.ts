import { FinnhubProvider, offlineAnalyst } from '@fin/ai';
import {
  AnalysisResponse,
  AsyncJobResponse,
  JobResultResponseByType,
  JobStatusResponse,
  type AnalysisRequestInput,
  type Citation,
} from '@fin/contracts';
import {
  citation,
  message,
  SAMPLE_MARKET_DATA,
  startFakeAnthropic,
  startFakeFinnhub,
  systemText,
  text,
  toolNames,
  toolResults,
  webSearch,
  type FakeAnthropic,
  type FakeFinnhub,
  type MessageReply,
} from '@fin/fakes';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { sharedEnv, startSystem, type System } from '../src/system';

/** The web search result the fake Claude finds for NVDA news, and the passage the API cites from it. */
const SEARCH_RESULT = {
  url: 'https://www.reuters.example.com/technology/nvidia-data-center-2026-11-19',
  title: 'Nvidia data-center sales climb again',
  pageAge: 'November 19, 2026',
};
const CITED_TEXT = 'Data-center revenue climbed 35% from the prior quarter, the company said.';

/**
 * Citations through the whole system (gateway, product APIs and workers, jobs service, Kafka, Postgres): the fake
 * Claude is the offline analyst, which cites what the fake Finnhub served; for NVDA news it also searches the web
 * and cites a passage the search returned, next to passages nobody served. Every citation that comes back must
 * quote what the fake providers served, under the URL it was served at.
 */
describe('citations through the whole system', () => {
  let db: TestDatabase;
  let claude: FakeAnthropic;
  let finnhub: FakeFinnhub;
  let provider: FinnhubProvider;
  let system: System;
  let key: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    const analyst = offlineAnalyst();
    claude = await startFakeAnthropic({
      handler: async (request, context) => {
        const { body } = request;
        const newsOfNvda = systemText(body).includes('news desk') && JSON.stringify(body.messages[0]).includes('NVDA');
        const searched = JSON.stringify(body.messages).includes('web_search_tool_result');
        if (newsOfNvda && toolNames(body).includes('web_search') && !searched && toolResults(body).length === 0) {
          return message([...webSearch('NVDA news', [SEARCH_RESULT]), text('Nvidia grew.', [citation(SEARCH_RESULT, CITED_TEXT)])], {
            stopReason: 'pause_turn',
          });
        }
        const reply = await analyst(request, context);
        return newsOfNvda ? withWebCitations(reply) : reply;
      },
    });
    finnhub = await startFakeFinnhub({ token: 'finnhub-e2e-token' });
    provider = new FinnhubProvider({ token: 'finnhub-e2e-token', baseUrl: finnhub.apiBaseUrl });
    const env = sharedEnv({
      databaseUrl: db.url,
      anthropicUrl: claude.url,
      finnhubUrl: finnhub.apiBaseUrl,
      finnhubToken: 'finnhub-e2e-token',
    });
    system = await startSystem(
      env,
      {},
      { products: ['news', 'stock-report', 'analysis'], productEnv: { news: { AI_WEB_SEARCH: 'true' } } },
    );
    key = system.tenantKey('acme');
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([claude?.close(), finnhub?.close()]);
    await db?.drop();
  });

  /** The analyst's news answer with the web search result cited on every item: once truly, twice invented. */
  function withWebCitations(reply: MessageReply | Awaited<ReturnType<ReturnType<typeof offlineAnalyst>>>): MessageReply {
    const block = reply.content[0];
    if (block?.type !== 'text' || !block.text.startsWith('{"news"')) return reply;
    const value = JSON.parse(block.text) as { news: { citations: unknown[] }[] };
    for (const item of value.news) {
      item.citations.push(
        { url: SEARCH_RESULT.url, quote: 'data-center revenue climbed 35%' },
        { url: SEARCH_RESULT.url, quote: 'Data-center revenue fell 90% from the prior quarter' },
        { url: 'https://invented.example.org/nvidia', quote: CITED_TEXT },
      );
    }
    return { ...reply, content: [{ ...block, text: JSON.stringify(value) }] };
  }

  function api(path: string, init: RequestInit = {}) {
    return fetch(`${system.gatewayUrl}${path}`, {
      ...init,
      headers: { 'Content-Type': 'application/json', 'X-API-Key': key },
    });
  }

  async function completedResult(path: string, request: unknown): Promise<unknown> {
    const res = await api(path, { method: 'POST', body: JSON.stringify(request) });
    expect([200, 202]).toContain(res.status);
    const answer: unknown = await res.json();
    // Analysis answers with its own envelope (pending, or completed inline); both name the job's URLs.
    const envelope = path === '/api/analysis' ? AnalysisResponse.parse(answer) : AsyncJobResponse.parse(answer);
    await waitFor(
      async () => {
        const status = JobStatusResponse.parse(await (await api(envelope.status_url)).json());
        if (status.status === 'failed') throw new Error(`job failed: ${JSON.stringify(status.error)}`);
        return status.status === 'completed';
      },
      { timeoutMs: 30_000, intervalMs: 100, what: `job ${envelope.job_id}` },
    );
    return (await api(envelope.result_url)).json();
  }

  /**
   * Whether the citation quotes what a fake provider served at its URL: an article Finnhub served (headline or
   * summary), a figure of a Finnhub resource as our provider reads it from the fake's answer, or the passage the
   * fake Claude's web search cited.
   */
  async function expectServed(citation: Citation): Promise<void> {
    if (citation.source === 'web_search') {
      expect(citation).toMatchObject({ url: SEARCH_RESULT.url, title: SEARCH_RESULT.title, published_at: '2026-11-19' });
      expect(CITED_TEXT).toContain(citation.quote);
      return;
    }
    if (citation.source === 'sec_filing') {
      // A filing of EDGAR's bundled sample (EDGAR_OFFLINE in this system), named by its accession number, in its folder.
      expect(citation.filing?.accession).toMatch(/^\d{10}-\d{2}-\d{6}$/);
      expect(new URL(citation.url).pathname).toMatch(/^\/Archives\/edgar\/data\/\d+\/\d{18}\//);
      return;
    }
    expect(citation.source).toBe('market_data');
    const url = new URL(citation.url);
    if (url.origin === new URL(finnhub.apiBaseUrl).origin) {
      const symbol = url.searchParams.get('symbol') ?? '';
      const served = finnhub.requests.filter((request) => request.query.symbol === symbol && request.status === 200);
      const resource = url.pathname.endsWith('/quote') ? 'quote' : url.pathname.endsWith('/profile2') ? 'profile' : 'metrics';
      expect(served.map((request) => request.endpoint)).toContain(url.pathname.slice(new URL(finnhub.apiBaseUrl).pathname.length));
      expect(provider.resourceUrl(resource, symbol)).toBe(citation.url);
      const figures =
        resource === 'quote'
          ? await provider.quote(symbol)
          : resource === 'profile'
            ? await provider.profile(symbol)
            : await provider.metrics(symbol);
      expect(JSON.stringify(figures)).toContain(citation.quote);
      return;
    }
    const articles = Object.values(SAMPLE_MARKET_DATA.symbols).flatMap((entry) => entry.news);
    const article = articles.find((item) => item.url === citation.url);
    expect(article).toBeDefined();
    expect(`${article?.headline}\n${article?.summary}`).toContain(citation.quote);
    expect(citation).toMatchObject({ title: article?.headline, publisher: article?.source });
    expect(finnhub.requests.some((request) => request.endpoint === '/company-news' && request.status === 200)).toBe(true);
  }

  it('news: every item cites what Finnhub and the web search served, and nothing invented survives', async () => {
    const body = JobResultResponseByType.news.parse(await completedResult('/api/products/news', { symbols: ['NVDA', 'AAPL'], n: 4 }));
    const { news } = body.result;
    expect(news).toHaveLength(4);
    const citations = news.flatMap((item) => item.citations);
    for (const item of news) expect(item.citations.length).toBeGreaterThan(0);
    for (const found of citations) await expectServed(found);
    expect(citations.filter((found) => found.source === 'web_search')).toHaveLength(4);
    expect(citations.filter((found) => found.source === 'market_data').length).toBeGreaterThanOrEqual(4);
    const raw = JSON.stringify(body);
    expect(raw).not.toContain('invented.example.org');
    expect(raw).not.toContain('fell 90%');
    // sources stay as they were: the articles each item is based on.
    for (const item of news) expect(item.sources.length).toBeGreaterThan(0);
  });

  it('stock report: every insight cites the Finnhub figures or the filings it rests on', async () => {
    const body = JobResultResponseByType['stock-report'].parse(
      await completedResult('/api/products/stock-report', { symbols: ['MSFT', 'GOOGL'] }),
    );
    const { figures } = body.result;
    let filed = 0;
    for (const insight of body.result.detailed_analysis) {
      expect(insight.citations.length).toBeGreaterThan(0);
      const symbols = new Set<string | null | undefined>();
      for (const found of insight.citations) {
        if (found.source === 'sec_filing') {
          // A reported figure of the report, quoted as the model was given it, from the filing it names.
          const figure = figures.find(
            (candidate) => candidate.accession === found.filing?.accession && candidate.concept === found.filing.concept,
          );
          expect(figure).toBeDefined();
          expect(found.quote).toContain(figure!.accession);
          symbols.add(figure?.symbol);
          filed += 1;
        } else {
          await expectServed(found);
          symbols.add(new URL(found.url).searchParams.get('symbol'));
        }
      }
      expect([...symbols].sort()).toEqual(['GOOGL', 'MSFT']);
    }
    expect(filed).toBeGreaterThan(0);
  });

  it('analysis: the result cites the figures the answer was written from, in markdown and JSON alike', async () => {
    const requests: AnalysisRequestInput[] = [
      { prompt: 'How risky is TSLA?', symbols: ['TSLA'] },
      { prompt: 'Summarise AMZN.', symbols: ['AMZN'], output_format: { type: 'json_schema', schema: { summary: 'string' } } },
    ];
    for (const request of requests) {
      const body = JobResultResponseByType.analysis.parse(await completedResult('/api/analysis', request));
      expect(body.result.citations.length).toBeGreaterThan(0);
      for (const found of body.result.citations) await expectServed(found);
    }
  });
});
