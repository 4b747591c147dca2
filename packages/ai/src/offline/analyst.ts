// The offline mode's stand-in for Claude: a deterministic analyst behind the fake Messages API. It takes the
// same turns a model would (it asks for market data with tool calls, then answers from the tool results), so
// the engine's real code path — tool loop, structured output, grounding — runs unchanged. Its answers are
// plausible and contract-valid, built from the bundled sample data, and always say they are sample output.
import {
  jsonReply,
  lastUserText,
  message,
  outputSchema,
  systemText,
  textReply,
  toolNames,
  toolResults,
  toolUse,
  type MessagesRequestBody,
  type Reply,
  type ReplyHandler,
} from '@fin/fakes';

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

interface ToolData {
  articles: Map<string, Article[]>;
  overviews: Map<string, Overview>;
}

export const OFFLINE_NOTICE = 'Offline mode: generated from bundled sample data, not live research.';

const TICKER = /\b[A-Z][A-Z0-9]{0,5}(?:[.-][A-Z0-9]{1,3})?\b/g;

function detectProduct(body: MessagesRequestBody, system: string): Product {
  const schema = outputSchema(body);
  const properties = (schema?.properties ?? {}) as Record<string, unknown>;
  if ('news' in properties || system.includes('news desk')) return 'news';
  if ('detailed_analysis' in properties || system.includes('equity analyst')) return 'stock-report';
  if (system.includes('research assistant')) return 'chat';
  return 'analysis';
}

function listAfter(text: string, pattern: RegExp): string[] {
  const match = pattern.exec(text);
  return match?.[1] ? [...match[1].matchAll(TICKER)].map((m) => m[0]) : [];
}

function symbolsFor(product: Product, system: string, user: string): string[] {
  let symbols: string[];
  if (product === 'news') symbols = listAfter(user, /news items for (.+?)\.?$/m);
  else if (product === 'stock-report') symbols = listAfter(user, /^(?:Analyse|Compare) (.+?)\.?$/m).filter((s) => s !== 'WITH');
  else if (product === 'analysis') {
    symbols = [...listAfter(system, /Symbols in scope: (.+?)\.$/m), ...listAfter(system, /portfolio: (.+?)\.$/m)];
  } else symbols = [...user.matchAll(/\$?\b([A-Z]{2,5})\b/g)].map((m) => m[1]!).filter((s) => s !== 'I' && s.length >= 2);
  return [...new Set(symbols)].slice(0, 10);
}

function toolData(body: MessagesRequestBody): ToolData {
  const data: ToolData = { articles: new Map(), overviews: new Map() };
  for (const result of toolResults(body)) {
    const json = /<tool_output[^>]*>\n?([\s\S]*?)\n?<\/tool_output>/.exec(result.text)?.[1];
    if (!json) continue;
    let value: Record<string, unknown>;
    try {
      value = JSON.parse(json) as Record<string, unknown>;
    } catch {
      continue;
    }
    const symbol = String(value.symbol ?? '');
    if (Array.isArray(value.articles)) data.articles.set(symbol, value.articles as Article[]);
    else data.overviews.set(symbol, value as unknown as Overview);
  }
  return data;
}

const pct = (value: number | null | undefined) => (value === null || value === undefined ? 'n/a' : `${value.toFixed(1)}%`);
const num = (value: number | null | undefined, digits = 1) => (value === null || value === undefined ? 'n/a' : value.toFixed(digits));
const name = (o: Overview | undefined, symbol: string) => o?.profile?.name ?? symbol;

function newsAnswer(symbols: string[], user: string, data: ToolData): Reply {
  const n = Number(/the (\d+) most relevant/.exec(user)?.[1] ?? 5);
  const queues = symbols.map((symbol) => [...(data.articles.get(symbol) ?? [])]);
  const picked: { symbol: string; article: Article; rest: Article[] }[] = [];
  // Round-robin over the symbols so every symbol is represented.
  while (picked.length < n && queues.some((queue) => queue.length > 0)) {
    queues.forEach((queue, index) => {
      const article = queue.shift();
      if (article && picked.length < n) picked.push({ symbol: symbols[index]!, article, rest: queue });
    });
  }
  const news = picked.map(({ symbol, article, rest }, index) => ({
    title: article.headline,
    content: `${article.summary} This matters for ${symbol} investors as a signal for its near-term outlook. (${OFFLINE_NOTICE})`,
    sources: [article.url],
    further_reading: rest.slice(0, 1).map((other) => other.url),
    relevance_score: Math.max(0.3, 0.95 - index * 0.05),
  }));
  return jsonReply({ news });
}

function reportItems(symbols: string[], data: ToolData) {
  const [a, b] = symbols.map((symbol) => ({ symbol, o: data.overviews.get(symbol) }));
  const metric = (x: typeof a, key: string) => x?.o?.metrics?.[key] ?? null;
  const line = (key: string, format: (v: number | null) => string) =>
    [a, b].filter((x) => x !== undefined).map((x) => `${x!.symbol} ${format(metric(x, key))}`).join(' vs ');
  const compare = b !== undefined;
  const stronger = (key: string, higherIsBetter = true) => {
    if (!compare) return '';
    const va = metric(a, key) ?? Number.NaN;
    const vb = metric(b, key) ?? Number.NaN;
    if (Number.isNaN(va) || Number.isNaN(vb)) return ' The comparison is inconclusive on the available data.';
    const winner = (va > vb) === higherIsBetter ? a!.symbol : b.symbol;
    return ` ${winner} is the stronger of the two on this measure.`;
  };
  const subject = compare ? `${a!.symbol} versus ${b.symbol}` : name(a?.o, a!.symbol);
  return [
    {
      title: `Revenue growth: ${subject}`,
      keyMetric: `Revenue growth (TTM, year on year): ${line('revenueGrowthTtmYoyPercent', pct)}`,
      implications: ['Growth above the sector supports a premium multiple.', 'A slowdown would pressure estimates.'],
      investmentThesis: `Growth is the main driver of the investment case.${stronger('revenueGrowthTtmYoyPercent')}`,
      category: 'growth',
    },
    {
      title: `Profitability: ${subject}`,
      keyMetric: `Net profit margin (TTM): ${line('netProfitMarginTtmPercent', pct)}`,
      implications: ['High margins fund buybacks and investment.', 'Margin pressure would hit earnings more than revenue.'],
      investmentThesis: `Profitability underpins earnings quality.${stronger('netProfitMarginTtmPercent')}`,
      category: 'profitability',
    },
    {
      title: `Valuation: ${subject}`,
      keyMetric: `Price/earnings (TTM): ${line('peRatioTtm', (v) => num(v))}`,
      implications: ['A high multiple leaves less room for disappointment.', 'Earnings growth must justify the price.'],
      investmentThesis: `Valuation sets the margin of safety.${stronger('peRatioTtm', false)}`,
      category: 'valuation',
    },
    {
      title: `Risk profile: ${subject}`,
      keyMetric: `Beta: ${line('beta', (v) => num(v, 2))}; debt/equity: ${line('debtToEquity', (v) => num(v, 2))}`,
      implications: ['Higher beta means larger drawdowns in sell-offs.', 'Leverage raises sensitivity to interest rates.'],
      investmentThesis: `Risk is moderate relative to the market.${stronger('beta', false)}`,
      category: 'risk',
    },
  ];
}

function stockReportAnswer(symbols: string[], data: ToolData): Reply {
  const items = reportItems(symbols, data);
  const [a, b] = symbols;
  const quick = b
    ? [
        `${a} and ${b} differ most in growth and valuation, per the sample data.`,
        `Weigh ${a}'s margins against ${b}'s before choosing between them.`,
        OFFLINE_NOTICE,
      ]
    : [`${a}'s investment case rests on growth and margins, per the sample data.`, OFFLINE_NOTICE];
  return jsonReply({ detailed_analysis: items, quick_insights: quick });
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
  return Object.fromEntries([...listed.matchAll(/"(\w+)" \((\w+)\)/g)].map((m) => [m[1]!, m[2]!]));
}

function analysisAnswer(body: MessagesRequestBody, system: string, symbols: string[], data: ToolData): Reply {
  const question = /Client question:\n([\s\S]*?)(?:\n\nThe client supplied|$)/.exec(system)?.[1]?.trim() ?? lastUserText(body);
  const facts = symbols.map((symbol) => {
    const o = data.overviews.get(symbol);
    return o?.metrics
      ? `${name(o, symbol)} (${symbol}): revenue growth ${pct(o.metrics.revenueGrowthTtmYoyPercent)}, net margin ${pct(o.metrics.netProfitMarginTtmPercent)}, P/E ${num(o.metrics.peRatioTtm)}, beta ${num(o.metrics.beta, 2)}`
      : `${symbol}: no sample data available`;
  });
  const summary = `Sample analysis of: ${question.slice(0, 200)}`;
  const fields = fieldsOf(body, system);
  if (fields) {
    const content: Record<string, unknown> = {};
    for (const [field, type] of Object.entries(fields)) {
      if (type === 'string') content[field] = `${summary} (${OFFLINE_NOTICE})`;
      else if (type === 'number') content[field] = 0.5;
      else if (type === 'integer') content[field] = symbols.length;
      else if (type === 'boolean') content[field] = false;
      else if (type === 'array') content[field] = facts;
      else content[field] = { symbols, notice: OFFLINE_NOTICE };
    }
    return jsonReply(content);
  }
  if (system.includes('a single JSON object')) {
    return jsonReply({ summary, findings: facts, notice: OFFLINE_NOTICE });
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
    '- Diversification limits the impact of any single holding.',
    '- Valuation and interest rates drive returns over the next year.',
    '',
    `_${OFFLINE_NOTICE}_`,
  ].join('\n');
  return textReply(body_);
}

function chatAnswer(symbols: string[], user: string, data: ToolData): Reply {
  const lines = symbols
    .map((symbol) => data.overviews.get(symbol))
    .filter((o): o is Overview => o !== undefined && o.quote !== undefined)
    .map((o) => `${name(o, o.symbol)} (${o.symbol}) last traded at ${num(o.quote?.price, 2)} ${o.profile?.currency ?? ''} (${pct(o.quote?.changePercent)} on the day); P/E ${num(o.metrics?.peRatioTtm)}.`.replace('  ', ' '));
  const text =
    lines.length > 0
      ? `${lines.join(' ')} ${OFFLINE_NOTICE}`
      : `You asked: "${user.slice(0, 160)}". In offline mode I answer from a small sample dataset (AAPL, MSFT, NVDA, GOOGL, AMZN, TSLA); ask about one of those for figures. ${OFFLINE_NOTICE}`;
  return textReply(text);
}

/** The reply handler for the fake Messages API in offline mode. Deterministic: the same request gets the same reply. */
export function offlineAnalyst(): ReplyHandler {
  return (request) => {
    const body = request.body;
    const system = systemText(body);
    const user = lastUserText(body);
    const product = detectProduct(body, system);
    const symbols = symbolsFor(product, system, user);
    const canCallTools = toolNames(body).includes('market_data') && body.tool_choice?.type !== 'none';
    const answered = toolResults(body).length > 0;
    if (!answered && canCallTools && symbols.length > 0) {
      const kind = product === 'news' ? 'news' : 'overview';
      return message(symbols.map((symbol) => toolUse('market_data', { symbol, kind })));
    }
    const data = toolData(body);
    if (product === 'news') return newsAnswer(symbols, user, data);
    if (product === 'stock-report') return stockReportAnswer(symbols, data);
    if (product === 'analysis') return analysisAnswer(body, system, symbols, data);
    return chatAnswer(symbols, user, data);
  };
}
