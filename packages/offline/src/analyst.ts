// The offline mode's stand-in for Claude: a deterministic analyst that answers Messages API requests in-process
// (fetch.ts). It takes the same turns a model would (it asks for market data with tool calls, then answers from
// the tool results), so the engine's real code path — SDK, tool loop, structured output, grounding — runs
// unchanged. Its answers are plausible and contract-valid, built from the bundled sample data, and always say
// they are sample output. Tests also hand it to the fake Messages server of @fin/fakes.
import { STOCK_SYMBOL_PATTERN, type NewsTopic } from '@fin/contracts';
import { briefText, lastUserText, outputSchema, toolNames, toolResults } from './request';
import { jsonTurn, textTurn, toolUse, turn } from './turns';
import { type AssistantReply, type MessagesRequestBody, type RequestContentBlock, type StandInModel } from './wire-types';

type Product = 'news' | 'stock-report' | 'analysis' | 'chat';

interface Article {
  headline: string;
  summary: string;
  source: string;
  url: string;
  published_at: string;
}

interface Overview {
  symbol: string;
  quote?: { price: number; changePercent: number | null };
  profile?: { name: string; industry: string | null; marketCap: number | null; currency: string | null };
  metrics?: Record<string, number | null>;
  error?: string;
}

/** A section of an SEC filing as the sec_filings tool returned it (@fin/ai filings-tool.ts). */
interface FilingSection {
  symbol: string;
  filing: { form: string; filed: string; accession: string; url: string };
  item: string;
  title: string;
  text: string;
}

interface ToolData {
  articles: Map<string, Article[]>;
  overviews: Map<string, Overview>;
  /** Each overview as the tool returned it (with the `source_url` of each part), for citing its figures. */
  raw: Map<string, Record<string, unknown>>;
  /** The filing sections read, by symbol. */
  filings: Map<string, FilingSection[]>;
}

/** A citation as the model claims it: the URL of retrieved material and a passage copied from it. */
interface CitationClaim {
  url: string;
  quote: string;
}

/**
 * The figure `key` of one part (quote, profile, metrics) of a symbol's overview, cited as the model would: the
 * part's `source_url` and the figure's JSON exactly as the tool output spells it (`"peRatioTtm":35.2`).
 */
function figureCitation(data: ToolData, symbol: string, part: 'quote' | 'profile' | 'metrics', key: string): CitationClaim[] {
  const section = data.raw.get(symbol)?.[part];
  if (typeof section !== 'object' || section === null) return [];
  const fields = section as Record<string, unknown>;
  const url = fields.source_url;
  const value = fields[key];
  if (typeof url !== 'string' || value === undefined || value === null) return [];
  return [{ url, quote: JSON.stringify({ [key]: value }).slice(1, -1) }];
}

/** An article cited by its summary (its headline when the summary is too short to be a passage). */
function articleCitation(article: Article): CitationClaim {
  return { url: article.url, quote: article.summary.trim().length >= 20 ? article.summary : article.headline };
}

// ---- SEC filings: sections read with the sec_filings tool, cited by a passage copied from them ----

/** The first sentence of a text (a period after a lower-case letter or digit, so "U.S." does not end one). */
function firstSentence(text: string): string {
  const sentence = /^[\s\S]+?[a-z0-9)%][.!?](?=\s+[A-Z“"‘']|\s*$)/.exec(text.trim())?.[0] ?? text.trim();
  if (sentence.length <= 300) return sentence;
  const cut = sentence.slice(0, 300);
  return cut.slice(0, cut.lastIndexOf(' '));
}

/**
 * The first risk factor of a risk-factors section: 10-Ks open Item 1A with a paragraph on risks in general, then
 * give each risk a heading sentence and a paragraph. Its heading and the passage quoted: its paragraph's first sentence.
 */
function firstRiskFactor(section: FilingSection): { heading: string; quote: string } {
  const paragraphs = section.text.split(/\n{2,}/).filter((paragraph) => paragraph.trim() !== '');
  const [heading, body] = paragraphs.length >= 3 ? [paragraphs[1] ?? '', paragraphs[2] ?? ''] : [section.title, paragraphs[0] ?? ''];
  return { heading: heading.trim(), quote: firstSentence(body) };
}

/** A section cited as the model would: the filing's URL and a passage copied from the text it was shown. */
function sectionCitation(section: FilingSection, quote: string): CitationClaim {
  return { url: section.filing.url, quote };
}

/** The 10-K risk factors (Item 1A) read for each symbol. */
function riskSections(symbols: readonly string[], data: ToolData): FilingSection[] {
  return symbols.flatMap(
    (symbol) =>
      data.filings
        .get(symbol)
        ?.filter((section) => section.item === '1A')
        .slice(0, 1) ?? [],
  );
}

/** A question about risks (risk, risky, risk factors, downside, threats …). */
const ABOUT_RISKS = /\b(?:risk|risks|risky|riskier|riskiest|downside|threats?|headwinds?|vulnerab\w*)\b/i;

/**
 * The filing sections a first round reads beside the market data, as a model would for the task: a news run the
 * latest results 8-K (item 2.02) of each bundled company, an analysis of risks the latest 10-K's risk factors
 * (Item 1A). Only the bundled companies have filings in the sample; a question not about risks reads none.
 */
function filingReads(product: Product, symbols: readonly string[], question: string) {
  const bundled = symbols.filter((symbol) => SAMPLE_COMPANIES.some(([, sample]) => sample === symbol));
  if (product === 'news') return bundled.map((symbol) => toolUse('sec_filings', { symbol, form: '8-K', item: '2.02' }));
  if (product === 'analysis' && ABOUT_RISKS.test(question)) {
    return bundled.map((symbol) => toolUse('sec_filings', { symbol, form: '10-K', item: '1A' }));
  }
  return [];
}

/** What the engine asks after an analysis (CITATION_REQUEST of @fin/ai): the passages the answer rests on. */
const CITATION_REQUEST_START = 'List the passages of the retrieved material';

export const OFFLINE_NOTICE = 'Offline mode: generated from bundled sample data, not live research.';

function detectProduct(body: MessagesRequestBody, system: string): Product {
  const schema = outputSchema(body);
  const properties = (schema?.properties ?? {}) as Record<string, unknown>;
  if ('news' in properties || system.includes('news desk')) return 'news';
  if ('detailed_analysis' in properties || system.includes('equity analyst')) return 'stock-report';
  if (system.includes('research assistant')) return 'chat';
  return 'analysis';
}

/**
 * The symbols of a list the engine wrote into a prompt (`pattern` captures it; `separator` splits it), each
 * entry's first word: every well-formed symbol counts, digits first (7203.T) or ten characters long included.
 */
function listAfter(text: string, pattern: RegExp, separator: string | RegExp = ', '): string[] {
  const list = pattern.exec(text)?.[1];
  if (!list) return [];
  return list
    .split(separator)
    .map((entry) => entry.trim().split(' ')[0] ?? '')
    .filter((symbol) => STOCK_SYMBOL_PATTERN.test(symbol));
}

// ---- chat: which companies a question is about, and whether it needs figures ----

/** Company names of the sample dataset, so "What is Apple's P/E?" is understood like "What is AAPL's P/E?". */
const SAMPLE_COMPANIES: readonly [RegExp, string][] = [
  [/\bapple\b/i, 'AAPL'],
  [/\bmicrosoft\b/i, 'MSFT'],
  [/\bnvidia\b/i, 'NVDA'],
  [/\b(?:alphabet|google)\b/i, 'GOOGL'],
  [/\bamazon\b/i, 'AMZN'],
  [/\btesla\b/i, 'TSLA'],
];
/**
 * Upper-case words that are not tickers. The sample provider invents figures for any symbol, so a word taken
 * for a ticker here would come back as a made-up company.
 */
const NOT_TICKERS = new Set([
  ...['AI', 'CEO', 'CFO', 'ETF', 'EPS', 'GDP', 'IPO', 'PE', 'USA', 'US', 'USD', 'EUR', 'GBP', 'JPY', 'UK', 'EU', 'TTM', 'YOY', 'FAQ', 'OK'],
  ...['SEC', 'FED', 'FOMC', 'CPI', 'PPI', 'ROI', 'ROE', 'ROA', 'DCF', 'FCF', 'EBIT', 'CAGR', 'GAAP', 'IFRS', 'NAV', 'APR', 'APY'],
  ...['ESG', 'REIT', 'IRR', 'NYSE', 'IT', 'API', 'FX', 'LLC', 'INC', 'WHAT', 'HOW', 'WHY', 'IS', 'THE', 'AND', 'OR', 'OF', 'IN'],
]);
/** Words of a question that is answered with figures: prices, multiples, margins, growth, size. */
const NEEDS_FIGURES =
  /\b(?:price|prices|trad(?:e|es|ing)|quote|worth|valu(?:e|ed|ation)|p\/e|pe ratio|multiple|margins?|revenue|sales|growth|grow(?:s|ing)?|earnings|eps|profit(?:s|able|ability)?|beta|debt|market cap|how much|how many|numbers?|figures?|metrics?|doing|performing|performance)\b|\d/i;

function chatTickers(text: string): string[] {
  const named = SAMPLE_COMPANIES.filter(([pattern]) => pattern.test(text)).map(([, symbol]) => symbol);
  const tickers = [...text.matchAll(/\$?\b([A-Z]{2,5})\b/g)].flatMap(([, ticker]) =>
    ticker === undefined || NOT_TICKERS.has(ticker) ? [] : [ticker],
  );
  return [...named, ...tickers];
}

/** Earlier user turns of the conversation, newest first (the history the chat service sends). */
function earlierUserTexts(body: MessagesRequestBody): string[] {
  // The user's own turns (text, a string or text blocks), not the turns that only carry tool results.
  const said = body.messages.flatMap((entry) => {
    if (entry.role !== 'user') return [];
    const text = typeof entry.content === 'string' ? entry.content : textOfBlocks(entry.content);
    return text ? [text] : [];
  });
  return said.slice(0, -1).reverse();
}

function textOfBlocks(content: readonly RequestContentBlock[]): string {
  return content
    .filter((block) => block.type === 'text' && typeof block.text === 'string')
    .map((block) => block.text as string)
    .join('\n');
}

/**
 * The companies a chat question needs figures for: those it names; for a follow-up that names none but asks
 * for figures ("and its margins?"), those of the latest earlier turn that named some.
 */
function chatSymbols(body: MessagesRequestBody, user: string): string[] {
  const named = chatTickers(user);
  if (named.length > 0 || !NEEDS_FIGURES.test(user)) return named;
  for (const earlier of earlierUserTexts(body)) {
    const symbols = chatTickers(earlier);
    if (symbols.length > 0) return symbols;
  }
  return [];
}

function symbolsFor(product: Product, system: string, user: string, body: MessagesRequestBody): string[] {
  let symbols: string[];
  if (product === 'news') symbols = listAfter(user, /news items for (.+?)\.?$/m);
  else if (product === 'stock-report') symbols = listAfter(user, /^(?:Analyse|Compare) (.+?)\.?$/m, ' with ');
  else if (product === 'analysis') {
    symbols = [...listAfter(system, /Symbols in scope: (.+?)\.$/m), ...listAfter(system, /portfolio: (.+?)\.$/m)];
  } else symbols = chatSymbols(body, user);
  return [...new Set(symbols)].slice(0, 10);
}

function toolData(body: MessagesRequestBody): ToolData {
  const data: ToolData = { articles: new Map(), overviews: new Map(), raw: new Map(), filings: new Map() };
  for (const result of toolResults(body)) {
    const output = /<tool_output(?: tool="([^"]*)")?[^>]*>\n?([\s\S]*?)\n?<\/tool_output>/.exec(result.text);
    const json = output?.[2];
    if (!json) continue;
    let value: Record<string, unknown>;
    try {
      value = JSON.parse(json) as Record<string, unknown>;
    } catch {
      continue;
    }
    const symbol = typeof value.symbol === 'string' ? value.symbol : '';
    if (output[1] === 'sec_filings') {
      // A section read (a listing or a note that there are none is not one).
      if (typeof value.text === 'string' && typeof value.item === 'string') {
        data.filings.set(symbol, [...(data.filings.get(symbol) ?? []), value as unknown as FilingSection]);
      }
    } else if (Array.isArray(value.articles)) data.articles.set(symbol, value.articles as Article[]);
    else {
      data.overviews.set(symbol, value as unknown as Overview);
      data.raw.set(symbol, value);
    }
  }
  return data;
}

const pct = (value: number | null | undefined) => (value === null || value === undefined ? 'n/a' : `${value.toFixed(1)}%`);
const num = (value: number | null | undefined, digits = 1) => (value === null || value === undefined ? 'n/a' : value.toFixed(digits));
const name = (o: Overview | undefined, symbol: string) => o?.profile?.name ?? symbol;

/** The topics (NEWS_TOPICS of @fin/contracts) an article is about, by the words of its headline and summary. */
const TOPIC_WORDS: ReadonlyArray<[NewsTopic, RegExp]> = [
  ['earnings', /\b(earnings|revenue|profit|quarter(ly)?|guidance|eps|results|margin)/i],
  ['ipo', /\b(ipo|initial public offering|listing)\b/i],
  ['mergers_and_acquisitions', /\b(acquisi\w*|merger|takeover|buyout|acquire\w*)/i],
  ['economy_monetary', /\b(interest rates?|federal reserve|central bank|inflation)\b/i],
  ['economy_fiscal', /\b(tax(es)?|tariffs?|budget|government spending)\b/i],
  ['economy_macro', /\b(economy|gdp|recession|consumer spending)\b/i],
  ['energy_transportation', /\b(oil|energy|electric vehicles?|evs?|batter(y|ies)|deliveries|airlines?|shipping)\b/i],
  ['finance', /\b(banks?|lending|credit|loans?|insurance|buyback|dividend)\b/i],
  ['life_sciences', /\b(drugs?|fda|trials?|pharma\w*|biotech|health)\b/i],
  ['manufacturing', /\b(factor(y|ies)|manufactur\w*|supply chain|production)\b/i],
  ['real_estate', /\b(real estate|property|housing|reit)\b/i],
  ['retail_wholesale', /\b(retail|stores?|e-commerce|shoppers?)\b/i],
  ['technology', /\b(ai|chips?|software|cloud|semiconductors?|data cent(er|re)s?|iphone|technology|devices?)\b/i],
  ['blockchain', /\b(blockchain|crypto\w*|bitcoin)\b/i],
];

function articleTopics(article: Article): NewsTopic[] {
  const text = `${article.headline} ${article.summary}`;
  const topics = TOPIC_WORDS.filter(([, words]) => words.test(text)).map(([topic]) => topic);
  return topics.length > 0 ? topics : ['financial_markets'];
}

/**
 * The offline sentiment lexicon: phrases before single words (a phrase's words are not counted again), each +1
 * (good for the company's shareholders) or −1. Headline language, not general English: "slip", "margin pressure",
 * "higher input costs", "below consensus" and "warns" are what a reader of financial news takes as bad news.
 */
const SENTIMENT_PHRASES: ReadonlyArray<[RegExp, 1 | -1]> = [
  [/\b(?:ahead of|above|tops?|topped|beats?|beat) (?:guidance|consensus|estimates?|expectations|forecasts?)\b/gi, 1],
  [/\b(?:below|short of|misses|missed|miss) (?:guidance|consensus|estimates?|expectations|forecasts?)\b/gi, -1],
  [/\b(?:margin|pricing|cost) pressures?\b/gi, -1],
  [/\b(?:higher|rising|soaring) (?:input |raw[- ]material |labou?r |energy )?costs?\b/gi, -1],
  [/\braises? (?:price targets?|guidance|(?:its |the )?outlook|forecasts?)\b/gi, 1],
  [/\b(?:cuts?|lowers?|slashe[sd]) (?:price targets?|guidance|(?:its |the )?outlook|forecasts?|jobs)\b/gi, -1],
  [/\bwarns? on\b/gi, -1],
  [/\bshare (?:buyback|repurchase)s?\b/gi, 1],
  [/\b(?:holds?|held|holding) up\b/gi, 1],
  [/\b(?:review|probe|investigation) (?:of|into)\b/gi, -1],
];
const SENTIMENT_WORDS: ReadonlyArray<[RegExp, 1 | -1]> = [
  [
    /\b(?:beat\w*|record|surg\w*|grow\w*|grew|rais\w*|upgrad\w*|strong\w*|gain\w*|expan\w*|launch\w*|wins?|won|jump\w*|rall\w*|accelerat\w*|soar\w*|climb\w*|rise[sn]?|rising|rose|outperform\w*|boost\w*|improv\w*)/gi,
    1,
  ],
  [
    /\b(?:miss\w*|declin\w*|fall\w*|fell|cuts?|cutting|lawsuits?|probes?|recall\w*|downgrad\w*|weak\w*|loss\w*|drop\w*|delay\w*|fines?|slow\w*|shortfall|investigat\w*|slip\w*|slid(?:e|es|ing)?|sink\w*|sank|tumbl\w*|plung\w*|slump\w*|warn\w*|headwinds?|pressure[sd]?|squeez\w*|layoffs?|underperform\w*)/gi,
    -1,
  ],
];
/** A negation within the three words before a hit turns it around ("not strong", "no growth", "failed to beat"). */
const NEGATION = /\b(?:not|no|never|without|hardly|fail(?:s|ed)? to)\s+(?:\S+\s+){0,2}$|n't\s+(?:\S+\s+){0,2}$/i;

/** The +1/−1 hits of a text: phrases first (masked out), then words, each turned around by a negation before it. */
function sentimentHits(text: string): number[] {
  const hits: number[] = [];
  let rest = text;
  const collect = (pattern: RegExp, polarity: 1 | -1) => {
    rest = rest.replace(pattern, (match: string, ...args: unknown[]) => {
      const offset = args.find((arg): arg is number => typeof arg === 'number') ?? 0;
      const negated = NEGATION.test(rest.slice(Math.max(0, offset - 40), offset));
      hits.push(negated ? -polarity : polarity);
      return ' '.repeat(match.length);
    });
  };
  for (const [pattern, polarity] of SENTIMENT_PHRASES) collect(pattern, polarity);
  for (const [pattern, polarity] of SENTIMENT_WORDS) collect(pattern, polarity);
  return hits;
}

/**
 * A text's sentiment, −1 to 1, from its good- and bad-news phrases and words (deterministic, and only the text's):
 * (good − bad) ÷ (good + bad + 1), so one clear hit reads ±0.5 and a text with none reads 0.
 */
export function textSentiment(text: string): number {
  const hits = sentimentHits(text);
  const good = hits.filter((hit) => hit > 0).length;
  const bad = hits.length - good;
  return Math.round(((good - bad) / (good + bad + 1)) * 100) / 100;
}

/** An article's sentiment, −1 to 1 (textSentiment of its headline and summary). */
function articleSentiment(article: Article): number {
  return textSentiment(`${article.headline}. ${article.summary}`);
}

function sentimentWords(score: number): string {
  if (score >= 0.35) return 'clearly positive';
  if (score >= 0.15) return 'somewhat positive';
  if (score > -0.15) return 'neither clearly positive nor negative';
  if (score > -0.35) return 'somewhat negative';
  return 'clearly negative';
}

/**
 * The sentiment of an article for each requested symbol it concerns: the symbols whose news it was returned for,
 * and others it names.
 */
function articleTickers(listedFor: readonly string[], article: Article, symbols: readonly string[]) {
  const score = articleSentiment(article);
  const text = `${article.headline} ${article.summary}`;
  const concerned = symbols.filter((other) => listedFor.includes(other) || new RegExp(`\\b${other}\\b`).test(text));
  return concerned.map((other) => ({
    symbol: other,
    relevance_score: listedFor.includes(other) ? 0.9 : 0.4,
    sentiment_score: score,
    reasoning: `The article "${article.headline}" reads ${sentimentWords(score)} for ${other} (its wording, in offline mode).`,
  }));
}

/**
 * One item per article, at most `n`: round-robin over the symbols so that every symbol is represented. Fewer
 * articles than `n` give fewer items (one source, one item: an article is never written up twice under another
 * title, nor counted twice in ticker_sentiment), and an article returned for two symbols is one item about both.
 * The request's topics keep only the articles about one of them; "newest first" orders each symbol's articles by
 * date (the tool has already left out articles outside the request's time range and sources).
 */
function newsAnswer(symbols: string[], user: string, data: ToolData): AssistantReply {
  const n = Number(/the (\d+) most relevant/.exec(user)?.[1] ?? 5);
  const topics = /^Only news about these topics: (.+)\.$/m.exec(user)?.[1]?.split(', ');
  const latest = /^Order the items newest first\.$/m.test(user);
  const chosen = (articles: Article[]) => {
    const matching = topics ? articles.filter((article) => articleTopics(article).some((topic) => topics.includes(topic))) : articles;
    return latest ? [...matching].sort((a, b) => Date.parse(b.published_at) - Date.parse(a.published_at)) : matching;
  };
  const lists = symbols.map((symbol) => ({ symbol, articles: chosen(data.articles.get(symbol) ?? []) }));
  /** The symbols each article was returned for, by its URL. */
  const listedFor = new Map<string, string[]>();
  for (const { symbol, articles } of lists) {
    for (const article of articles) listedFor.set(article.url, [...(listedFor.get(article.url) ?? []), symbol]);
  }
  const picked: { symbol: string; article: Article; next: Article | undefined }[] = [];
  const seen = new Set<string>();
  const longest = Math.max(0, ...lists.map(({ articles }) => articles.length));
  for (let round = 0; round < longest && picked.length < n; round++) {
    for (const { symbol, articles } of lists) {
      const article = articles[round];
      if (article === undefined || picked.length >= n || seen.has(article.url)) continue;
      seen.add(article.url);
      picked.push({ symbol, article, next: articles.slice(round + 1).find((later) => later.url !== article.url) });
    }
  }
  // Each company's latest results 8-K (item 2.02) backs one item about it, its first about earnings (else its first),
  // as a citation beside the article's: the item's sources stay the articles it is written from.
  const resultsCited = new Map<number, FilingSection>();
  for (const symbol of symbols) {
    const results = data.filings.get(symbol)?.find((section) => section.item === '2.02');
    const mine = picked.flatMap((entry, index) => (entry.symbol === symbol ? [index] : []));
    const at = mine.find((index) => articleTopics(picked[index]?.article as Article).includes('earnings')) ?? mine[0];
    if (results && at !== undefined) resultsCited.set(at, results);
  }
  const news = picked.map(({ symbol, article, next }, index) => {
    const results = resultsCited.get(index);
    const reported = results && firstSentence(results.text);
    return {
      title: article.headline,
      content: `${article.summary} This matters for ${symbol} investors as a signal for its near-term outlook.${results ? ` The company's ${results.filing.form} filed ${results.filing.filed} (Item ${results.item}) states: "${reported}"` : ''} (${OFFLINE_NOTICE})`,
      sources: [article.url],
      further_reading: next ? [next.url] : [],
      citations: results && reported ? [articleCitation(article), sectionCitation(results, reported)] : [articleCitation(article)],
      published_at: article.published_at,
      topics: articleTopics(article),
      tickers: articleTickers(listedFor.get(article.url) ?? [symbol], article, symbols),
      relevance_score: Math.max(0.3, 0.95 - index * 0.05),
    };
  });
  return jsonTurn({ news });
}

// ---- stock report: one symbol is described; two are compared, so every insight weighs one against the other ----

interface Side {
  symbol: string;
  o: Overview | undefined;
}

/** A figure or ratio of a <sec_figures> block of the request (the engine's reported figures), by name. */
interface SecFigure {
  value: number;
  /** "Revenue, fiscal year 2025" */
  label: string;
  /** "10-K filed 2025-10-31" for a reported figure; '' for a ratio. */
  filing: string;
}

/**
 * The reported figures and ratios the engine gave for each symbol (packages/ai/src/fundamentals/report.ts renders
 * them as `- name = value unit; label; …`).
 */
function secFigures(brief: string): Map<string, Map<string, SecFigure>> {
  const bySymbol = new Map<string, Map<string, SecFigure>>();
  for (const block of brief.matchAll(/<sec_figures symbol="([^"]+)"[^>]*>([\s\S]*?)<\/sec_figures>/g)) {
    const named = new Map<string, SecFigure>();
    for (const line of (block[2] ?? '').matchAll(
      /^- (\w+) = (-?[\d,]+(?:\.\d+)?)[^;\n]*; ([^;\n]+)(?:; (\S+ filed \d{4}-\d{2}-\d{2}))?/gm,
    )) {
      named.set(line[1] ?? '', {
        value: Number((line[2] ?? '').replaceAll(',', '')),
        label: (line[3] ?? '').trim(),
        filing: line[4] ?? '',
      });
    }
    if (named.size > 0) bySymbol.set(block[1] ?? '', named);
  }
  return bySymbol;
}

/** Amounts as an analyst writes them: $416.2 billion, -$1.2 billion, $812.4 million. */
const money = (value: number) => {
  const sign = value < 0 ? '-' : '';
  const size = Math.abs(value);
  return size >= 1e9 ? `${sign}$${(size / 1e9).toFixed(1)} billion` : `${sign}$${(size / 1e6).toFixed(1)} million`;
};
const perShare = (value: number) => `${value < 0 ? '-' : ''}$${Math.abs(value).toFixed(2)}`;
const times = (value: number) => `${value.toFixed(2)}x`;

/** An insight on reported figures: the measures its keyMetric shows, and the one it ranks two companies by. */
interface FigurePlan {
  category: string;
  title: string;
  measures: [name: string, label: string, format: (value: number) => string][];
  rank: string;
  higherIsBetter: boolean;
  /** A single company: what its ranking figure means. */
  single: (symbol: string, value: number, shown: string) => { implication: string; thesis: string };
}

const FIGURE_PLANS: FigurePlan[] = [
  {
    category: 'growth',
    title: 'Reported growth',
    measures: [
      ['revenue', 'revenue', money],
      ['revenue_growth_yoy', 'revenue growth year on year', pct],
      ['eps_diluted', 'diluted EPS', perShare],
      ['eps_growth_yoy', 'EPS growth year on year', pct],
    ],
    rank: 'revenue_growth_yoy',
    higherIsBetter: true,
    single: (symbol, growth, shown) =>
      growth < 0
        ? { implication: `${symbol}'s reported revenue shrank ${shown} year on year.`, thesis: `Reported revenue is shrinking (${shown}).` }
        : { implication: `${symbol}'s reported revenue grew ${shown} year on year.`, thesis: `Reported revenue is growing (${shown}).` },
  },
  {
    category: 'profitability',
    title: 'Reported margins',
    measures: [
      ['gross_margin', 'gross margin', pct],
      ['operating_margin', 'operating margin', pct],
      ['net_margin', 'net margin', pct],
    ],
    rank: 'net_margin',
    higherIsBetter: true,
    single: (symbol, margin, shown) => ({
      implication: `${symbol} kept ${shown} of its revenue as net income.`,
      thesis:
        margin >= 20
          ? `High reported margins (net ${shown}) underpin earnings quality.`
          : `Reported margins (net ${shown}) leave little room for cost increases.`,
    }),
  },
  {
    category: 'risk',
    title: 'Balance sheet',
    measures: [
      ['current_ratio', 'current ratio', times],
      ['debt_to_equity', 'long-term debt to equity', times],
      ['cash', 'cash', money],
    ],
    rank: 'debt_to_equity',
    higherIsBetter: false,
    single: (symbol, leverage, shown) => ({
      implication: `${symbol}'s long-term debt is ${shown} its equity.`,
      thesis:
        leverage > 1
          ? `Leverage (${shown} debt to equity) raises sensitivity to interest rates.`
          : `Leverage (${shown} debt to equity) is moderate.`,
    }),
  },
  {
    category: 'profitability',
    title: 'Cash generation',
    measures: [
      ['free_cash_flow', 'free cash flow', money],
      ['operating_cash_flow', 'operating cash flow', money],
      ['capital_expenditure', 'capital expenditure', money],
    ],
    rank: 'free_cash_flow',
    higherIsBetter: true,
    single: (symbol, cash, shown) => ({
      implication: `${symbol} generated ${shown} of free cash flow after capital expenditure.`,
      thesis: cash > 0 ? `Free cash flow (${shown}) funds investment and returns.` : `Negative free cash flow (${shown}) needs financing.`,
    }),
  },
];

/** At most three insights on reported figures, so that a report keeps to 8 insights. */
const FIGURE_INSIGHTS_MAX = 3;

/**
 * Insights on the reported figures the engine gave (when every symbol has the ranking figure): the figures as
 * given, rounded as an analyst would, and which company is ahead. They claim no citations: the engine cites the
 * filings of the figures they state.
 */
function figureItems(symbols: string[], reported: Map<string, Map<string, SecFigure>>, subject: string) {
  const sides = symbols.slice(0, 2);
  const [a = '', b] = sides;
  const items = [];
  for (const plan of FIGURE_PLANS) {
    if (items.length >= FIGURE_INSIGHTS_MAX) break;
    const ranks = sides.map((symbol) => reported.get(symbol)?.get(plan.rank));
    if (ranks.some((figure) => figure === undefined)) continue;
    const format = plan.measures.find(([name]) => name === plan.rank)?.[2] ?? pct;
    const rankLabel = plan.measures.find(([name]) => name === plan.rank)?.[1] ?? plan.rank;
    const shown = plan.measures.filter(([name]) => sides.every((symbol) => reported.get(symbol)?.has(name)));
    const period = /fiscal year \d{4}/.exec(reported.get(a)?.get(plan.rank)?.label ?? '')?.[0] ?? 'latest fiscal year';
    const filing = [...(reported.get(a)?.values() ?? [])].find((figure) => figure.filing)?.filing ?? '';
    const keyMetric = shown
      .map(([name, label, fmt]) =>
        b === undefined
          ? `${label} ${fmt(reported.get(a)?.get(name)?.value ?? 0)}`
          : `${label}: ${sides.map((symbol) => `${symbol} ${fmt(reported.get(symbol)?.get(name)?.value ?? 0)}`).join(' vs ')}`,
      )
      .join('; ');
    const [va = 0, vb = 0] = ranks.map((figure) => figure?.value ?? 0);
    if (b === undefined) {
      const text = plan.single(a, va, format(va));
      items.push({
        title: `${plan.title}: ${subject}`,
        keyMetric: `${keyMetric} (${period}, ${filing ? `${filing}, ` : ''}SEC filing)`,
        implications: [text.implication, `These are the company's own figures as filed with the SEC, not estimates.`],
        investmentThesis: text.thesis,
        category: plan.category,
        citations: [],
      });
    } else {
      const aLeads = va >= vb === plan.higherIsBetter;
      const [lead, lag] = aLeads ? [a, b] : [b, a];
      items.push({
        title: `${plan.title}: ${subject}`,
        keyMetric: `${keyMetric} (latest fiscal years, SEC filings)`,
        implications: [
          `${lead} is ahead of ${lag} on ${rankLabel} in their latest annual reports.`,
          `Both ${a}'s and ${b}'s figures are their own as filed with the SEC, not estimates.`,
        ],
        investmentThesis: `${lead} is the stronger of the two on reported ${rankLabel}.`,
        category: plan.category,
        citations: [],
      });
    }
  }
  return items;
}

/** A quick insight on the reported figures: revenue, growth and net margin of one company, or which of two leads. */
function figureQuickInsight(symbols: string[], reported: Map<string, Map<string, SecFigure>>): string | undefined {
  const [a = '', b] = symbols;
  if (b === undefined) {
    const figures = reported.get(a);
    const revenue = figures?.get('revenue');
    const growth = figures?.get('revenue_growth_yoy');
    const margin = figures?.get('net_margin');
    if (!revenue || !growth || !margin) return undefined;
    return `${a} reported revenue of ${money(revenue.value)} (${pct(growth.value)} year on year) and a net margin of ${pct(margin.value)} in its latest annual report.`;
  }
  const [ma, mb] = [reported.get(a)?.get('net_margin'), reported.get(b)?.get('net_margin')];
  if (!ma || !mb) return undefined;
  const lead = ma.value >= mb.value ? a : b;
  return `${lead} reported the higher net margin of the two in its latest annual report (${a} ${pct(ma.value)} vs ${b} ${pct(mb.value)}).`;
}

/** A figure of the market_data overview that an insight rests on. */
interface Measure {
  label: string;
  value(side: Side): number | null;
  format(value: number | null): string;
  /** Whether more is better for an investor (growth, margins) or worse (P/E, beta). */
  higherIsBetter: boolean;
}

/**
 * How a beta reads: below 0.8 the stock has moved less than the market, 0.8 to 1.1 about as much, above 1.1 to 1.5
 * moderately more, above 1.5 much more (so 1.21 is "moderately above the market", 1.74 "high").
 */
type BetaBand = 'low' | 'market' | 'moderate' | 'high';
const BETA_BANDS_NOTE = 'below 0.8 low, 0.8–1.1 close to the market, 1.1–1.5 moderately above it, over 1.5 high';
function betaBand(beta: number): BetaBand {
  if (beta < 0.8) return 'low';
  if (beta <= 1.1) return 'market';
  if (beta <= 1.5) return 'moderate';
  return 'high';
}
const BETA_MOVES: Record<BetaBand, string> = {
  low: 'moved less than the market',
  market: 'moved about as much as the market',
  moderate: 'moved somewhat more than the market: deeper drawdowns in sell-offs',
  high: 'moved much more than the market: larger drawdowns in sell-offs',
};
const BETA_RISK: Record<BetaBand, string> = {
  low: 'low relative to the market',
  market: "close to the market's",
  moderate: 'moderately above the market',
  high: 'high relative to the market',
};

const metric = (key: string) => (side: Side) => side.o?.metrics?.[key] ?? null;
const billions = (value: number | null) => (value === null ? 'n/a' : `${Math.round(value / 1e9).toLocaleString('en-US')}bn`);

const MEASURES = {
  growth: { label: 'revenue growth', value: metric('revenueGrowthTtmYoyPercent'), format: pct, higherIsBetter: true },
  margin: { label: 'net profit margin', value: metric('netProfitMarginTtmPercent'), format: pct, higherIsBetter: true },
  pe: { label: 'price/earnings', value: metric('peRatioTtm'), format: (v) => num(v), higherIsBetter: false },
  beta: { label: 'beta', value: metric('beta'), format: (v) => num(v, 2), higherIsBetter: false },
  leverage: { label: 'debt/equity', value: metric('debtToEquity'), format: (v) => num(v, 2), higherIsBetter: false },
  size: { label: 'market capitalisation', value: (side) => side.o?.profile?.marketCap ?? null, format: billions, higherIsBetter: true },
} satisfies Record<string, Measure>;

const figures = (sides: Side[], measure: Measure) =>
  sides.map((side) => `${side.symbol} ${measure.format(measure.value(side))}`).join(' vs ');

/** The better and the weaker of two companies on a measure; undefined when a figure is missing. */
function ranked(a: Side, b: Side, measure: Measure): { lead: string; lag: string } | undefined {
  const [va, vb] = [measure.value(a), measure.value(b)];
  if (va === null || vb === null) return undefined;
  return va >= vb === measure.higherIsBetter ? { lead: a.symbol, lag: b.symbol } : { lead: b.symbol, lag: a.symbol };
}

/** The top-level names of the client's data (`<client_data>` in the system prompt), to say it was weighed. */
function clientDataNames(system: string): string[] {
  const json = /<client_data>\n?([\s\S]*?)\n?<\/client_data>/.exec(system)?.[1];
  if (!json) return [];
  try {
    return Object.keys(JSON.parse(json) as Record<string, unknown>).slice(0, 5);
  } catch {
    return [];
  }
}

/** A single company whose figure is missing: nothing is claimed about it. */
function missing(side: Side, measure: Measure): { implications: string[]; thesis: string } {
  return {
    implications: [`The available data has no ${measure.label} for ${side.symbol}.`, `Check ${side.symbol}'s next reported figures.`],
    thesis: `${measure.label[0]?.toUpperCase() ?? ''}${measure.label.slice(1)} cannot be judged on the available data.`,
  };
}

interface InsightPlan {
  category: string;
  title: string;
  measure: Measure;
  /** The figures of the overview the insight cites: [part, key]. */
  cites: [part: 'quote' | 'profile' | 'metrics', key: string][];
  keyMetric: (sides: Side[]) => string;
  /** A single company: what its figure means, derived from the figure (none said when it is missing). */
  single: (side: Side) => { implications: string[]; thesis: string };
  /** Two companies: what the difference means for choosing between them. */
  compared: (lead: string, lag: string) => { implications: string[]; thesis: string };
}

const INSIGHTS: InsightPlan[] = [
  {
    category: 'growth',
    cites: [['metrics', 'revenueGrowthTtmYoyPercent']],
    title: 'Revenue growth',
    measure: MEASURES.growth,
    keyMetric: (sides) => `Revenue growth (TTM, year on year): ${figures(sides, MEASURES.growth)}`,
    single: (side) => {
      const growth = MEASURES.growth.value(side);
      const figure = pct(growth);
      if (growth === null) return missing(side, MEASURES.growth);
      if (growth < 0)
        return {
          implications: [
            `Revenue is shrinking (${figure} year on year): the multiple has to be earned by a return to growth.`,
            'Estimates are more likely to be cut than raised until the decline stops.',
          ],
          thesis: `Shrinking revenue (${figure}) weighs on the investment case.`,
        };
      if (growth < 10)
        return {
          implications: [
            `Revenue growth of ${figure} is modest: it does little to justify a premium multiple.`,
            'A slowdown would leave little growth at all.',
          ],
          thesis: `Modest growth (${figure}) makes valuation and margins matter more.`,
        };
      return {
        implications: [`Revenue growth of ${figure} supports a premium multiple.`, 'A slowdown from this pace would pressure estimates.'],
        thesis: `Strong growth (${figure}) is the main driver of the investment case.`,
      };
    },
    compared: (lead, lag) => ({
      implications: [
        `${lead}'s faster growth can justify a higher multiple than ${lag}'s.`,
        `A slowdown at ${lead} would narrow its lead over ${lag}.`,
      ],
      thesis: `${lead} is the stronger grower of the two; ${lag} has to win on other measures.`,
    }),
  },
  {
    category: 'profitability',
    cites: [['metrics', 'netProfitMarginTtmPercent']],
    title: 'Profitability',
    measure: MEASURES.margin,
    keyMetric: (sides) => `Net profit margin (TTM): ${figures(sides, MEASURES.margin)}`,
    single: (side) => {
      const margin = MEASURES.margin.value(side);
      const figure = pct(margin);
      if (margin === null) return missing(side, MEASURES.margin);
      if (margin < 0)
        return {
          implications: [
            `The company is losing money (net margin ${figure}).`,
            'It depends on its cash and on financing until it turns a profit.',
          ],
          thesis: `Losses (${figure} net margin) make profitability the first thing to fix.`,
        };
      if (margin < 10)
        return {
          implications: [
            `A thin net margin (${figure}) leaves little room for cost increases.`,
            'Margin pressure would hit earnings harder than revenue.',
          ],
          thesis: `Thin margins (${figure}) limit earnings quality.`,
        };
      return {
        implications: [`A net margin of ${figure} funds buybacks and investment.`, 'Margin pressure would hit earnings more than revenue.'],
        thesis: `High margins (${figure}) underpin earnings quality.`,
      };
    },
    compared: (lead, lag) => ({
      implications: [
        `${lead} keeps more of each dollar of revenue than ${lag}, leaving more to reinvest or return.`,
        `Margin pressure would hurt ${lag}'s earnings more than ${lead}'s.`,
      ],
      thesis: `${lead} is the more profitable of the two.`,
    }),
  },
  {
    category: 'valuation',
    cites: [['metrics', 'peRatioTtm']],
    title: 'Valuation',
    measure: MEASURES.pe,
    keyMetric: (sides) => `Price/earnings (TTM): ${figures(sides, MEASURES.pe)}`,
    single: (side) => {
      const pe = MEASURES.pe.value(side);
      const figure = num(pe);
      if (pe === null) return missing(side, MEASURES.pe);
      if (pe <= 0)
        return {
          implications: [
            'Without earnings there is no meaningful price/earnings multiple.',
            'The price rests on expected, not current, profits.',
          ],
          thesis: 'Valuation cannot be judged on earnings yet.',
        };
      if (pe > 40)
        return {
          implications: [
            `A multiple of ${figure} times earnings leaves little room for disappointment.`,
            'Earnings growth must be strong for years to justify the price.',
          ],
          thesis: `The valuation (P/E ${figure}) is demanding: the margin of safety is thin.`,
        };
      if (pe < 15)
        return {
          implications: [
            `At ${figure} times earnings the price assumes little growth.`,
            'A low multiple can also reflect doubts about future earnings.',
          ],
          thesis: `The valuation (P/E ${figure}) leaves a margin of safety if earnings hold.`,
        };
      return {
        implications: [
          `At ${figure} times earnings the price assumes steady growth.`,
          'Earnings growth must keep up to justify the price.',
        ],
        thesis: `The valuation (P/E ${figure}) is neither cheap nor stretched.`,
      };
    },
    compared: (lead, lag) => ({
      implications: [
        `${lag}'s higher multiple leaves less room for disappointment than ${lead}'s.`,
        `${lag} needs faster earnings growth than ${lead} to justify its price.`,
      ],
      thesis: `${lead} is the cheaper of the two on earnings.`,
    }),
  },
  {
    category: 'risk',
    cites: [
      ['metrics', 'beta'],
      ['metrics', 'debtToEquity'],
    ],
    title: 'Risk profile',
    measure: MEASURES.beta,
    keyMetric: (sides) => `Beta: ${figures(sides, MEASURES.beta)}; debt/equity: ${figures(sides, MEASURES.leverage)}`,
    single: (side) => {
      const beta = MEASURES.beta.value(side);
      const leverage = MEASURES.leverage.value(side);
      if (beta === null) return missing(side, MEASURES.beta);
      const figure = num(beta, 2);
      const debt =
        leverage === null
          ? 'Leverage is not in the available data.'
          : leverage > 1
            ? `Debt/equity of ${num(leverage, 2)} raises sensitivity to interest rates.`
            : `Debt/equity of ${num(leverage, 2)} keeps interest-rate sensitivity low.`;
      const band = betaBand(beta);
      return {
        // No band limits here: a stock report states only figures it was given (the engine's figure check).
        implications: [`A beta of ${figure} means the stock has ${BETA_MOVES[band]}.`, debt],
        thesis: `Risk is ${BETA_RISK[band]} (beta ${figure}).`,
      };
    },
    compared: (lead, lag) => ({
      implications: [
        `${lag} is likely to fall further than ${lead} in a market sell-off.`,
        `For the same risk budget, a position in ${lag} should be smaller than one in ${lead}.`,
      ],
      thesis: `${lead} is the steadier holding of the two.`,
    }),
  },
  {
    category: 'competitive',
    cites: [['profile', 'marketCap']],
    title: 'Scale',
    measure: MEASURES.size,
    keyMetric: (sides) => `Market capitalisation: ${figures(sides, MEASURES.size)}`,
    single: (side) => {
      const size = MEASURES.size.value(side);
      if (size === null) return missing(side, MEASURES.size);
      const figure = billions(size);
      if (size >= 100e9)
        return {
          implications: [
            `A market value of ${figure} funds research and distribution that smaller rivals cannot match.`,
            'Size alone does not protect against disruption.',
          ],
          thesis: `Scale (${figure}) is a competitive advantage.`,
        };
      return {
        implications: [
          `At ${figure} the company is smaller than the largest rivals in its market.`,
          'It has room to grow before size slows it down.',
        ],
        thesis: `Scale (${figure}) is not yet an advantage; focus and execution have to be.`,
      };
    },
    compared: (lead, lag) => ({
      implications: [
        `${lead}'s larger scale gives it more to spend on research and distribution than ${lag}.`,
        `${lag} has more room than ${lead} to grow before size slows it down.`,
      ],
      thesis: `${lead} is the larger competitor of the two.`,
    }),
  },
];

function reportItems(symbols: string[], data: ToolData, clientData: string[], reported: Map<string, Map<string, SecFigure>>) {
  const citationsOf = (plan: InsightPlan) =>
    symbols.slice(0, 2).flatMap((symbol) => plan.cites.flatMap(([part, key]) => figureCitation(data, symbol, part, key)));
  const sides = symbols.slice(0, 2).map((symbol) => ({ symbol, o: data.overviews.get(symbol) }));
  const [a, b] = sides as [Side, Side | undefined];
  const subject = b ? `${a.symbol} versus ${b.symbol}` : name(a.o, a.symbol);
  const uses =
    clientData.length > 0
      ? `The client's data (${clientData.join(', ')}) was weighed ${b ? `for both ${a.symbol} and ${b.symbol}` : 'alongside the market data'}.`
      : undefined;
  const fromMarketData = INSIGHTS.map((plan, index) => {
    const order = b && ranked(a, b, plan.measure);
    const text = !b
      ? plan.single(a)
      : order
        ? plan.compared(order.lead, order.lag)
        : {
            implications: [
              `The available data cannot rank ${a.symbol} against ${b.symbol} on ${plan.measure.label}.`,
              `Compare ${a.symbol}'s and ${b.symbol}'s next reported figures before choosing.`,
            ],
            thesis: `${plan.title} does not separate ${a.symbol} from ${b.symbol} on the available data.`,
          };
    return {
      title: `${plan.title}: ${subject}`,
      keyMetric: `${plan.keyMetric(sides)}${index === 0 ? ` (${OFFLINE_NOTICE})` : ''}`,
      implications: index === 0 && uses ? [...text.implications, uses] : text.implications,
      investmentThesis: text.thesis,
      category: plan.category,
      citations: citationsOf(plan),
    };
  });
  return [...fromMarketData, ...figureItems(symbols, reported, subject)];
}

/** The market data figures a quick insight states, cited as the model would (the figures' JSON fragments). */
function measureCitations(data: ToolData, symbols: readonly string[], measures: readonly Measure[]): CitationClaim[] {
  const keys = new Map<Measure, [part: 'quote' | 'profile' | 'metrics', key: string]>([
    [MEASURES.growth, ['metrics', 'revenueGrowthTtmYoyPercent']],
    [MEASURES.margin, ['metrics', 'netProfitMarginTtmPercent']],
    [MEASURES.pe, ['metrics', 'peRatioTtm']],
    [MEASURES.beta, ['metrics', 'beta']],
  ]);
  return symbols.flatMap((symbol) =>
    measures.flatMap((measure) => {
      const where = keys.get(measure);
      return where ? figureCitation(data, symbol, where[0], where[1]) : [];
    }),
  );
}

interface QuickInsight {
  text: string;
  citations: CitationClaim[];
}

/** Two companies: one sentence per measure, each naming both and which is ahead, on the sample figures. */
function comparedInsights(a: Side, b: Side, data: ToolData): QuickInsight[] {
  const sentences: [Measure, (lead: string, lag: string) => string][] = [
    [MEASURES.growth, (lead, lag) => `${lead} is growing revenue faster than ${lag}`],
    [MEASURES.pe, (lead, lag) => `${lead} is cheaper than ${lag} on earnings`],
    [MEASURES.beta, (lead, lag) => `${lead} has been the less volatile stock, ${lag} the more`],
  ];
  return sentences.map(([measure, sentence]) => {
    const order = ranked(a, b, measure);
    const said = order
      ? sentence(order.lead, order.lag)
      : `The sample data cannot rank ${a.symbol} against ${b.symbol} on ${measure.label}`;
    return {
      text: `${said} (${measure.label} ${figures([a, b], measure)}, sample data).`,
      citations: measureCitations(data, [a.symbol, b.symbol], [measure]),
    };
  });
}

/** One company: its growth and margin as they are, on the sample figures. */
function singleInsight(side: Side, data: ToolData): QuickInsight {
  const growth = MEASURES.growth.value(side);
  const margin = MEASURES.margin.value(side);
  if (growth === null || margin === null)
    return { text: `The sample data has no revenue growth or net margin for ${side.symbol}.`, citations: [] };
  const trend = growth < 0 ? 'shrinking revenue' : growth < 10 ? 'modest revenue growth' : 'strong revenue growth';
  const profit = margin < 0 ? 'losses' : margin < 10 ? 'a thin net margin' : 'a high net margin';
  return {
    text: `${side.symbol} combines ${trend} (${pct(growth)}) with ${profit} (${pct(margin)}), per the sample data.`,
    citations: measureCitations(data, [side.symbol], [MEASURES.growth, MEASURES.margin]),
  };
}

function stockReportAnswer(symbols: string[], data: ToolData, system: string): AssistantReply {
  const reported = secFigures(system);
  const items = reportItems(symbols, data, clientDataNames(system), reported);
  const [a = '', b] = symbols;
  const fromFigures = figureQuickInsight(symbols, reported);
  const figureInsight: QuickInsight[] = fromFigures ? [{ text: fromFigures, citations: [] }] : [];
  const quick = b
    ? [...comparedInsights({ symbol: a, o: data.overviews.get(a) }, { symbol: b, o: data.overviews.get(b) }, data), ...figureInsight]
    : [singleInsight({ symbol: a, o: data.overviews.get(a) }, data), ...figureInsight, { text: OFFLINE_NOTICE, citations: [] }];
  return jsonTurn({ detailed_analysis: items, quick_insights: quick });
}

function fieldsOf(body: MessagesRequestBody, system: string): Record<string, string> | undefined {
  const schema = outputSchema(body);
  if (schema?.properties) {
    return Object.fromEntries(
      Object.entries(schema.properties as Record<string, { type?: string }>).map(([key, value]) => [key, value.type ?? 'string']),
    );
  }
  const listed = /exactly these fields and types, and nothing else: (.+)\.$/m.exec(system)?.[1];
  if (!listed) return undefined;
  return Object.fromEntries([...listed.matchAll(/"(\w+)" \((\w+)\)/g)].map(([, name = '', type = '']) => [name, type]));
}

/**
 * The client's question, as the analysis prompt (packages/ai/prompts/analysis) puts it: after "Client question:",
 * before the client's data and before the untrusted-data rule the engine appends to every system prompt. Neither
 * of those is the client's question, and the answer must not echo them.
 */
function clientQuestion(system: string): string | undefined {
  const marker = 'Client question:\n';
  const start = system.indexOf(marker);
  if (start === -1) return undefined;
  let question = system.slice(start + marker.length);
  for (const end of ['\n\nContent inside <tool_output> elements', '\nThe client supplied this data (treat it as data']) {
    const at = question.lastIndexOf(end);
    if (at !== -1) question = question.slice(0, at);
  }
  return question.trim();
}

/** The holdings of the client's portfolio (`The client's portfolio: AAPL 60%, MSFT 40%.`), with their weights. */
function portfolioOf(system: string): Map<string, number> {
  const list = /^The client's portfolio: (.+?)\.$/m.exec(system)?.[1] ?? '';
  const holdings = new Map<string, number>();
  for (const [, symbol = '', weight = ''] of list.matchAll(/([A-Z0-9.-]+) (\d+(?:\.\d+)?)%/g)) holdings.set(symbol, Number(weight));
  return holdings;
}

/** The weighted average of a figure over the holdings that have it, and the weight they cover. */
function weighted(holdings: Map<string, number>, data: ToolData, key: string): { value: number; covered: number } | undefined {
  let sum = 0;
  let covered = 0;
  for (const [symbol, weight] of holdings) {
    const value = data.overviews.get(symbol)?.metrics?.[key];
    if (value === null || value === undefined) continue;
    sum += value * weight;
    covered += weight;
  }
  return covered === 0 ? undefined : { value: sum / covered, covered };
}

/** What the figures shown say, as statements that follow from them (never from nothing). */
function considerations(symbols: string[], holdings: Map<string, number>, data: ToolData): string[] {
  const lines: string[] = [];
  if (holdings.size > 0) {
    const [largest, share] = [...holdings].reduce((top, entry) => (entry[1] > top[1] ? entry : top));
    lines.push(
      share > 40
        ? `${largest} is ${String(share)}% of the portfolio: the portfolio is concentrated, and ${largest}'s results drive it.`
        : `The largest holding, ${largest}, is ${String(share)}% of the portfolio: no single holding dominates.`,
    );
    const beta = weighted(holdings, data, 'beta');
    if (beta !== undefined) {
      lines.push(
        `Weighted by the holdings, beta is ${num(beta.value, 2)}: the portfolio has ${BETA_MOVES[betaBand(beta.value)]} (${BETA_BANDS_NOTE}).`,
      );
    }
    const growth = weighted(holdings, data, 'revenueGrowthTtmYoyPercent');
    if (growth !== undefined) lines.push(`Weighted revenue growth is ${pct(growth.value)} year on year.`);
    return lines;
  }
  const sides = symbols.map((symbol) => ({ symbol, o: data.overviews.get(symbol) }));
  const extreme = (measure: Measure, pick: 'max' | 'min') => {
    const known = sides.filter((side) => measure.value(side) !== null);
    if (known.length < 2) return undefined;
    return known.reduce((best, side) => {
      const [a, b] = [measure.value(side) ?? 0, measure.value(best) ?? 0];
      return (pick === 'max' ? a > b : a < b) ? side : best;
    });
  };
  const volatile = extreme(MEASURES.beta, 'max');
  if (volatile)
    lines.push(`${volatile.symbol} has the highest beta (${num(MEASURES.beta.value(volatile), 2)}): it moves the most with the market.`);
  const cheapest = extreme(MEASURES.pe, 'min');
  if (cheapest) lines.push(`${cheapest.symbol} has the lowest P/E (${num(MEASURES.pe.value(cheapest))}) of the symbols in scope.`);
  const shrinking = sides.filter((side) => (MEASURES.growth.value(side) ?? 0) < 0);
  for (const side of shrinking) lines.push(`${side.symbol}'s revenue is shrinking (${pct(MEASURES.growth.value(side))} year on year).`);
  return lines;
}

function analysisAnswer(body: MessagesRequestBody, system: string, symbols: string[], data: ToolData): AssistantReply {
  const question = clientQuestion(system) ?? lastUserText(body);
  const holdings = portfolioOf(system);
  const facts = symbols.map((symbol) => {
    const o = data.overviews.get(symbol);
    const weight = holdings.get(symbol);
    const held = weight === undefined ? '' : `, ${String(weight)}% of the portfolio`;
    return o?.metrics
      ? `${name(o, symbol)} (${symbol}${held}): revenue growth ${pct(o.metrics.revenueGrowthTtmYoyPercent)}, net margin ${pct(o.metrics.netProfitMarginTtmPercent)}, P/E ${num(o.metrics.peRatioTtm)}, beta ${num(o.metrics.beta, 2)}`
      : `${symbol}${held}: no sample data available`;
  });
  const notes = considerations(symbols, holdings, data);
  // The risk factors read from each company's latest 10-K, in its own words.
  const risks = riskSections(symbols, data).map((section) => {
    const risk = firstRiskFactor(section);
    return `${section.symbol}'s ${section.filing.form} filed ${section.filing.filed} (Item ${section.item}, ${section.title}) names: ${risk.heading} "${risk.quote}"`;
  });
  const summary = `Sample analysis of: ${question.slice(0, 200)}`;
  const fields = fieldsOf(body, system);
  if (fields) {
    const content: Record<string, unknown> = {};
    for (const [field, type] of Object.entries(fields)) {
      // The engine asks a structured answer for its citations in this field (the analysis prompt says so).
      if (field === '_citations' && type === 'array') content[field] = citationClaims(symbols, data);
      else if (type === 'string') content[field] = `${summary} (${OFFLINE_NOTICE})`;
      else if (type === 'number') content[field] = 0.5;
      else if (type === 'integer') content[field] = symbols.length;
      else if (type === 'boolean') content[field] = false;
      else if (type === 'array') content[field] = facts;
      else content[field] = { symbols, notice: OFFLINE_NOTICE };
    }
    return jsonTurn(content);
  }
  if (system.includes('a single JSON object')) {
    return jsonTurn({
      summary,
      findings: facts,
      considerations: notes,
      ...(risks.length > 0 ? { risk_factors: risks } : {}),
      notice: OFFLINE_NOTICE,
    });
  }
  const body_ = [
    `## Summary`,
    '',
    summary,
    '',
    `## Key figures`,
    '',
    ...(facts.length > 0 ? facts.map((fact) => `- ${fact}`) : ['- No symbols were given; the answer is general.']),
    '',
    `## Considerations`,
    '',
    ...(notes.length > 0 ? notes.map((note) => `- ${note}`) : ['- The sample data gives no figures to weigh for this question.']),
    '',
    ...(risks.length > 0 ? ['## Risk factors in the filings', '', ...risks.map((risk) => `- ${risk}`), ''] : []),
    `_${OFFLINE_NOTICE}_`,
  ].join('\n');
  return textTurn(body_);
}

function chatAnswer(symbols: string[], user: string, data: ToolData): AssistantReply {
  const lines = symbols
    .map((symbol) => data.overviews.get(symbol))
    .filter((o): o is Overview => o !== undefined && o.quote !== undefined)
    .map((o) =>
      [
        `${name(o, o.symbol)} (${o.symbol}) last traded at ${num(o.quote?.price, 2)}${o.profile?.currency ? ` ${o.profile.currency}` : ''} (${pct(o.quote?.changePercent)} on the day).`,
        `P/E ${num(o.metrics?.peRatioTtm)}, revenue growth ${pct(o.metrics?.revenueGrowthTtmYoyPercent)}, net margin ${pct(o.metrics?.netProfitMarginTtmPercent)} (trailing twelve months, from market data).`,
      ].join(' '),
    );
  const text =
    lines.length > 0
      ? `${lines.join(' ')} ${OFFLINE_NOTICE}`
      : `You asked: "${user.slice(0, 160)}". In offline mode I answer from a sample dataset (AAPL, MSFT, NVDA, GOOGL, AMZN, TSLA, and invented figures for any other ticker); name a ticker for figures. ${OFFLINE_NOTICE}`;
  return textTurn(text);
}

/**
 * The conversation up to its last tool results: the citation request follows the answer, which follows the
 * tool results the answer was written from.
 */
function upToLastToolResults(body: MessagesRequestBody): MessagesRequestBody {
  const last = body.messages.findLastIndex(
    (entry) => entry.role === 'user' && typeof entry.content !== 'string' && entry.content.some((block) => block.type === 'tool_result'),
  );
  return last === -1 ? body : { ...body, messages: body.messages.slice(0, last + 1) };
}

/** The passages an analysis rests on: the figures it quoted for each symbol, and the articles the tools returned. */
function citationsAnswer(symbols: string[], data: ToolData): AssistantReply {
  return jsonTurn({ citations: citationClaims(symbols, data) });
}

function citationClaims(symbols: string[], data: ToolData) {
  const figures: [part: 'quote' | 'profile' | 'metrics', key: string][] = [
    ['metrics', 'revenueGrowthTtmYoyPercent'],
    ['metrics', 'netProfitMarginTtmPercent'],
    ['metrics', 'peRatioTtm'],
    ['metrics', 'beta'],
  ];
  const citations = [
    ...symbols.flatMap((symbol) => figures.flatMap(([part, key]) => figureCitation(data, symbol, part, key))),
    ...[...data.articles.values()].flatMap((articles) => articles.slice(0, 2).map(articleCitation)),
    ...riskSections(symbols, data).map((section) => sectionCitation(section, firstRiskFactor(section).quote)),
  ];
  return citations;
}

/** The offline mode's model. Deterministic: the same request gets the same reply. */
export function offlineAnalyst(): StandInModel {
  return (request) => {
    const body = request.body;
    const system = briefText(body);
    const user = lastUserText(body);
    const product = detectProduct(body, system);
    const symbols = symbolsFor(product, system, user, body);
    // The engine's citation request follows the answer with the answer's tool settings: it is answered, not researched.
    if (user.startsWith(CITATION_REQUEST_START)) return citationsAnswer(symbols, toolData(upToLastToolResults(body)));
    const canCallTools = toolNames(body).includes('market_data') && body.tool_choice?.type !== 'none';
    const answered = toolResults(body).length > 0;
    if (!answered && canCallTools && symbols.length > 0) {
      const kind = product === 'news' ? 'news' : 'overview';
      const filings = toolNames(body).includes('sec_filings') ? filingReads(product, symbols, clientQuestion(system) ?? user) : [];
      return turn([...symbols.map((symbol) => toolUse('market_data', { symbol, kind })), ...filings]);
    }
    const data = toolData(body);
    if (product === 'news') return newsAnswer(symbols, user, data);
    if (product === 'stock-report') return stockReportAnswer(symbols, data, system);
    if (product === 'analysis') return analysisAnswer(body, system, symbols, data);
    return chatAnswer(symbols, user, data);
  };
}
