// The news product's depth (issue 30) through the engine and the fake Messages API: publication times come from the
// sources, never from the model alone; sentiment only for requested symbols, labelled by the documented bands;
// topics, time range, order and sources filter what is kept and shape what the model is asked and offered.
import { NewsRequest } from '@fin/contracts';
import { jsonReply, toolResults, toolUseReply, type FakeAnthropic, type MessagesRequestBody } from '@fin/fakes';
import type { AiEngine } from '../src';
import { scriptedEngine } from './helpers';

interface Article {
  url: string;
  published_at: string;
}

/** The articles the market_data tool returned in the conversation so far. */
function articlesIn(body: MessagesRequestBody): Article[] {
  return toolResults(body).flatMap((result) => {
    const json = /<tool_output[^>]*>\n([\s\S]*)\n<\/tool_output>/.exec(result.text)?.[1];
    return json ? ((JSON.parse(json) as { articles?: Article[] }).articles ?? []) : [];
  });
}

const draftItem = (overrides: Record<string, unknown>) => ({
  title: 'Item',
  content: 'Content.',
  further_reading: [],
  relevance_score: 0.8,
  published_at: null,
  topics: ['earnings'],
  tickers: [],
  ...overrides,
});

describe('news depth through the engine', () => {
  let fake: FakeAnthropic;
  let engine: AiEngine;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ fake, engine, close } = await scriptedEngine({ AI_WEB_SEARCH: 'true' }));
  });
  afterAll(() => close());
  afterEach(() => fake.reset());

  it('takes publication times from the sources, sentiment for requested symbols only, labels from the score', async () => {
    let articles: Article[] = [];
    fake.reply(toolUseReply('market_data', { symbol: 'AAPL', kind: 'news' }), (request) => {
      articles = articlesIn(request.body);
      const [first, second, third] = articles;
      return jsonReply({
        news: [
          draftItem({
            title: 'Claimed on the right day',
            sources: [first?.url],
            published_at: first?.published_at.slice(0, 10),
            tickers: [
              { symbol: 'aapl', relevance_score: 0.9, sentiment_score: 0.5, reasoning: 'Revenue beat. More words here.' },
              { symbol: 'TSLA', relevance_score: 0.9, sentiment_score: -0.9, reasoning: 'Not requested.' },
            ],
          }),
          draftItem({
            title: 'Claimed on a day no source gives',
            sources: [second?.url],
            published_at: '1999-01-01T00:00:00Z',
            tickers: [{ symbol: 'AAPL', relevance_score: 0.5, sentiment_score: -0.2, reasoning: 'Margins slipped.' }],
          }),
          draftItem({
            title: 'No claim',
            sources: [third?.url],
            tickers: [{ symbol: 'AAPL', relevance_score: 2, sentiment_score: 7, reasoning: 'Up.' }],
          }),
        ],
      });
    });
    const { result } = await engine.news(NewsRequest.parse({ symbols: ['AAPL'], n: 3 }));
    const [first, second, third] = result.news;
    expect(first?.published_at).toBe(new Date(articles[0]!.published_at).toISOString());
    expect(second?.published_at).toBe(new Date(articles[1]!.published_at).toISOString());
    expect(third?.published_at).toBe(new Date(articles[2]!.published_at).toISOString());
    expect(first?.tickers).toEqual([
      { symbol: 'AAPL', relevance_score: 0.9, sentiment_score: 0.5, sentiment_label: 'bullish', reasoning: 'Revenue beat.' },
    ]);
    expect(second?.tickers?.[0]).toMatchObject({ sentiment_score: -0.2, sentiment_label: 'somewhat-bearish' });
    expect(third?.tickers?.[0]).toMatchObject({ relevance_score: 1, sentiment_score: 1, sentiment_label: 'bullish' });
    // (0.5·0.9 − 0.2·0.5 + 1·1) ÷ (0.9 + 0.5 + 1)
    expect(result.ticker_sentiment).toEqual([{ symbol: 'AAPL', sentiment_score: 0.563, sentiment_label: 'bullish', items: 3 }]);
  });

  it('never pads: an item whose sources an earlier one cited is dropped, and counted once in ticker_sentiment', async () => {
    fake.reply(toolUseReply('market_data', { symbol: 'AAPL', kind: 'news' }), (request) => {
      const [only, other] = articlesIn(request.body);
      const ticker = (score: number) => [{ symbol: 'AAPL', relevance_score: 0.9, sentiment_score: score, reasoning: 'Wording.' }];
      return jsonReply({
        news: [
          draftItem({ title: 'The story', sources: [only?.url], relevance_score: 0.9, tickers: ticker(0.5) }),
          // The same article relabelled, as a model asked for more items than it has stories writes them.
          draftItem({ title: 'What it means for AAPL: the story', sources: [only?.url], relevance_score: 0.8, tickers: ticker(0.5) }),
          draftItem({
            title: 'Risk check for AAPL: the story',
            sources: [only?.url, only?.url],
            relevance_score: 0.7,
            tickers: ticker(-0.5),
          }),
          // Another story that also cites the first one's source is a story of its own.
          draftItem({ title: 'Another story', sources: [other?.url, only?.url], relevance_score: 0.6, tickers: ticker(0.1) }),
        ],
      });
    });
    const { result } = await engine.news(NewsRequest.parse({ symbols: ['AAPL'], n: 5 }));
    expect(result.news.map((item) => item.title)).toEqual(['The story', 'Another story']);
    expect(result.ticker_sentiment).toEqual([expect.objectContaining({ symbol: 'AAPL', items: 2 })]);
  });

  it('keeps items inside an explicit range, about a requested topic, from allowed sources, newest first', async () => {
    let articles: Article[] = [];
    fake.reply(toolUseReply('market_data', { symbol: 'AAPL', kind: 'news' }), (request) => {
      articles = articlesIn(request.body);
      return jsonReply({
        news: articles.map((article, index) =>
          draftItem({
            title: `Item ${index}`,
            sources: [article.url],
            topics: index % 2 === 0 ? ['technology'] : ['ipo'],
            relevance_score: 0.1 * index,
          }),
        ),
      });
    });
    const request = NewsRequest.parse({
      symbols: ['AAPL'],
      n: 10,
      time_from: '2026-09-01T00:00:00Z',
      time_to: '2026-11-21T00:00:00Z',
      topics: ['technology'],
      sort: 'latest',
      sources: { exclude: ['blocked.example.com'] },
    });
    const { result } = await engine.news(request);
    expect(articles.length).toBeGreaterThan(0);
    for (const article of articles) {
      const time = Date.parse(article.published_at);
      expect(time).toBeGreaterThanOrEqual(Date.parse('2026-09-01T00:00:00Z'));
      expect(time).toBeLessThanOrEqual(Date.parse('2026-11-21T00:00:00Z'));
    }
    expect(result.news.length).toBe(Math.ceil(articles.length / 2));
    for (const item of result.news) expect(item.topics).toContain('technology');
    const times = result.news.map((item) => Date.parse(item.published_at ?? ''));
    expect(times).toEqual([...times].sort((a, b) => b - a));

    // What the model was asked and offered: the range, topics, order and sources; web search limited the same way.
    const body = fake.requests[0]!.body!;
    const brief = JSON.stringify(body.messages[0]);
    expect(brief).toContain('Only news published from 2026-09-01T00:00:00.000Z to 2026-11-21T00:00:00.000Z.');
    expect(brief).toContain('Only news about these topics: technology.');
    expect(brief).toContain('Order the items newest first.');
    expect(brief).toContain('Do not use news from these domains: blocked.example.com.');
    expect(body.tools?.find((tool) => tool.name === 'web_search')).toMatchObject({ blocked_domains: ['blocked.example.com'] });
  });

  it('drops a source its request excludes, and the item with it when it has no other', async () => {
    fake.reply(toolUseReply('market_data', { symbol: 'AAPL', kind: 'news' }), (request) =>
      jsonReply({ news: articlesIn(request.body).map((article) => draftItem({ sources: [article.url] })) }),
    );
    const { result } = await engine.news(NewsRequest.parse({ symbols: ['AAPL'], sources: { include: ['reuters.com'] } }));
    // The tool returns no article outside the allowed domains, and no source outside them is kept.
    expect(result.news).toEqual([]);
    expect(fake.requests[0]!.body!.tools?.find((tool) => tool.name === 'web_search')).toMatchObject({ allowed_domains: ['reuters.com'] });
  });
});
