import { registry } from '@fin/metrics';
import { RetrievedDocuments, resolveCitations, type RetrievedDocument } from '../src/citations';

const article: RetrievedDocument = {
  url: 'https://news.example.com/2026/11/18/apple-services',
  title: 'Apple services revenue hits a record',
  publisher: 'Example Wire',
  publishedAt: '2026-11-18T09:30:00Z',
  source: 'market_data',
  text: 'Apple services revenue hits a record\nServices revenue rose 14% to a record $26.3 billion, the company said on Thursday.',
};

function documents(...docs: RetrievedDocument[]): RetrievedDocuments {
  const registered = new RetrievedDocuments();
  for (const doc of docs) registered.add(doc);
  return registered;
}

async function dropped(product: string, outcome: string): Promise<number> {
  const metric = await registry.getSingleMetric('fin_citations_total')?.get();
  return metric?.values.find((value) => value.labels.product === product && value.labels.outcome === outcome)?.value ?? 0;
}

describe('resolveCitations', () => {
  it('keeps a claim whose URL was retrieved and whose quote is in the material, completed from the document', () => {
    const { kept, dropped: count } = resolveCitations(
      [{ url: article.url, quote: 'Services revenue rose 14% to a record $26.3 billion' }],
      documents(article),
      'unit',
    );
    expect(count).toBe(0);
    expect(kept).toEqual([
      {
        url: article.url,
        title: 'Apple services revenue hits a record',
        publisher: 'Example Wire',
        published_at: '2026-11-18',
        quote: 'Services revenue rose 14% to a record $26.3 billion',
        source: 'market_data',
      },
    ]);
  });

  it('drops a claim whose URL no tool or search returned, and counts it', async () => {
    const before = await dropped('unit-unknown', 'unknown_url');
    const { kept, dropped: count } = resolveCitations(
      [{ url: 'https://invented.example.org/apple', quote: 'Services revenue rose 14%' }],
      documents(article),
      'unit-unknown',
    );
    expect(kept).toEqual([]);
    expect(count).toBe(1);
    expect(await dropped('unit-unknown', 'unknown_url')).toBe(before + 1);
  });

  it('drops a claim whose quote does not occur in the material of its URL, and counts it', async () => {
    const before = await dropped('unit-quote', 'quote_not_found');
    const { kept } = resolveCitations(
      [
        { url: article.url, quote: 'Services revenue rose 41% to a record' },
        // In the material, but of another document: a quote must come from the URL it names.
        { url: 'https://other.example.com/a', quote: 'Services revenue rose 14%' },
      ],
      documents(article, { url: 'https://other.example.com/a', title: 'Other', source: 'web_search', text: 'Nothing about Apple here.' }),
      'unit-quote',
    );
    expect(kept).toEqual([]);
    expect(await dropped('unit-quote', 'quote_not_found')).toBe(before + 2);
  });

  it('matches across whitespace, case, typographic quotes and dashes, and returns the material’s own spelling', () => {
    const doc = { ...article, text: 'The CEO said:  “We’re   seeing demand\u2014strong demand — across regions.”' };
    const { kept } = resolveCitations(
      [{ url: `${article.url}#top`, quote: '"we\'re seeing DEMAND-strong demand - across regions."' }],
      documents(doc),
      'unit',
    );
    expect(kept.map((citation) => citation.quote)).toEqual(['“We’re   seeing demand\u2014strong demand — across regions.”']);
  });

  it("names the URL's host as publisher when the material names none, and null as date when it has none", () => {
    const doc: RetrievedDocument = {
      url: 'https://www.reuters.example.com/markets/apple',
      title: 'Apple shares',
      source: 'web_search',
      publishedAt: '3 days ago',
      text: 'Apple shares closed higher on Friday.',
    };
    const { kept } = resolveCitations([{ url: doc.url, quote: 'Apple shares closed higher' }], documents(doc), 'unit');
    expect(kept[0]).toMatchObject({ publisher: 'reuters.example.com', published_at: null, source: 'web_search' });
  });

  it('reads a web page age given as a date, and checks quotes against passages added later (cited text)', () => {
    const registered = documents({
      url: 'https://site.example.com/p',
      title: 'Page',
      source: 'web_search',
      publishedAt: 'November 18, 2026',
      text: '',
    });
    registered.addPassage('https://site.example.com/p', 'Microsoft raised its dividend by 10%.');
    registered.addPassage('https://unregistered.example.com/q', 'Ignored: never retrieved.');
    const { kept } = resolveCitations(
      [
        { url: 'https://site.example.com/p', quote: 'raised its dividend by 10%' },
        { url: 'https://unregistered.example.com/q', quote: 'Ignored: never retrieved.' },
      ],
      registered,
      'unit',
    );
    expect(kept).toEqual([
      expect.objectContaining({ url: 'https://site.example.com/p', published_at: '2026-11-18', quote: 'raised its dividend by 10%' }),
    ]);
  });

  it('finds only whole words and numbers: a cut-off figure is not a quote of the figure', () => {
    const figures = { ...article, text: '{"price":187.35,"volume":1200,"note":"rose 14% in a year"}' };
    const claims = [
      '"price":187',
      '"price":1',
      'price":18',
      '"volume":120',
      'rose 1',
      'ose 14% in a year',
      '"price":187.35',
      'rose 14% in a',
    ];
    const { kept } = resolveCitations(
      claims.map((quote) => ({ url: article.url, quote })),
      documents(figures),
      'unit',
    );
    expect(kept.map((citation) => citation.quote)).toEqual(['"price":187.35', 'rose 14% in a']);
  });

  it('drops quotes too short to check, and keeps one of two identical citations', () => {
    const { kept, dropped: count } = resolveCitations(
      [
        { url: article.url, quote: '14%' },
        { url: article.url, quote: 'rose 14% to a record' },
        { url: article.url, quote: 'Rose 14%  to a record' },
      ],
      documents(article),
      'unit',
    );
    expect(count).toBe(1);
    expect(kept).toHaveLength(1);
  });
});
