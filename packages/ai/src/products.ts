import type Anthropic from '@anthropic-ai/sdk';
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages/messages';
import {
  AnalysisResult,
  analysisText,
  DetailedAnalysisCategory,
  DetailedAnalysisItem,
  NewsResult,
  NewsTopic,
  newsWindow,
  sentimentLabel,
  StockReportResult,
  type NewsItem,
  type SymbolSentiment,
  type TickerSentiment,
  type Citation,
  type AnalysisRequest,
  type GenerationMeta,
  type NewsRequest,
  type OutputSchemaTypeName,
  type StockReportRequest,
  QUICK_INSIGHTS_MAX,
  QUICK_INSIGHTS_MIN,
} from '@fin/contracts';
import type { FilingsSource } from '@fin/edgar';
import { citationsResolved, figureChecks } from '@fin/metrics';
import { z } from 'zod';
import { CitationClaim, resolveCitations, type RetrievedDocuments } from './citations';
import type { CacheRun, TailWritePolicy } from './cache-policy';
import type { AiConfig } from './config';
import { allowedSource, type NewsLookup } from './market-data-tool';
import { AiError, withSpentUsage } from './errors';
import { clampScore, GroundingSet } from './grounding';
import { checkReport, figureQuickInsights, loadReportFigures, renderReportFigures } from './fundamentals/report';
import { runToolLoop, type EngineEvent, type LoopParams, type LoopResult, type Usage } from './loop';
import type { CallPriority, ModelBudget } from './model-budget';
import { modelProfile, requestSettings } from './model-settings';
import { loadPrompt, renderCustomData, type Prompt } from './prompts';
import { addUsage, NO_USAGE } from './usage';
import { streamOf, type StreamItem } from './stream';
import { generateStructured } from './structured';
import type { ToolDefinition, ToolRunOwner } from './tools';

/** What a product run needs from the engine. */
export interface ProductDeps {
  client: Anthropic;
  config: AiConfig;
  offline: boolean;
  /** Our data tools (market_data), always offered. */
  dataTools: readonly ToolDefinition[];
  /** The data tools of a news run, bound to its time range and sources (dataTools when absent). */
  newsDataTools?: (lookup: NewsLookup) => readonly ToolDefinition[];
  /** Which calls write their conversation to the prompt cache, learnt per product (cache-policy.ts). */
  cachePolicy: TailWritePolicy;
  /** The organisation's model allowance every call takes its share from (model-budget.ts). */
  budget: ModelBudget;
  /** SEC EDGAR (live or the bundled sample), where a stock report's figures come from; none: reports say so. */
  filings?: FilingsSource;
  /**
   * The tools that read filings' sections (sec_filings), offered to news and analysis runs when a FilingsSource is
   * available; a news run's are bound to its sources.
   */
  filingsTools?: (sources?: NewsLookup['sources']) => readonly ToolDefinition[];
}

export interface RunContext {
  signal?: AbortSignal;
  /** The tenant's enabled customer tools for this product (the engine loads them for `caller` when absent). */
  customerTools?: readonly ToolDefinition[];
  /** The digest of the tool set `customerTools` was loaded from (OfferedTools.toolSet). */
  customerToolSet?: string | null;
  /** Whom the run is for: the engine offers that tenant's customer tools, audited under the job or conversation. */
  caller?: { tenantId: string } & ToolRunOwner;
  /** Progress 0–100 with a sentence a user would understand. */
  onProgress?: (progress: number, currentlyWorkingOn: string) => void;
  /** Told when a model call starts and stops waiting for the organisation's model budget (a job's time limit pauses). */
  onModelWait?: (waiting: boolean) => void;
  /**
   * Which share of the model budget the run's calls take: the engine's streamed entries (a streamed analysis, a chat
   * reply) are interactive whatever their calls look like; a job's runs are queued.
   */
  priority?: CallPriority;
}

export interface ProductOutcome<T> {
  result: T;
  usage: Usage;
}

/** Which variables choose each product's model, thinking and effort. */
function productModel(config: AiConfig, product: 'news' | 'stock-report' | 'analysis' | 'chat') {
  switch (product) {
    case 'news':
      return { model: config.AI_NEWS_MODEL, thinking: config.AI_NEWS_THINKING, effort: config.AI_NEWS_EFFORT };
    case 'stock-report':
      return { model: config.AI_MODEL, thinking: config.AI_STOCK_REPORT_THINKING, effort: config.AI_STOCK_REPORT_EFFORT };
    case 'analysis':
      return { model: config.AI_MODEL, thinking: config.AI_ANALYSIS_THINKING, effort: config.AI_ANALYSIS_EFFORT };
    case 'chat':
      return { model: config.AI_MODEL, thinking: config.AI_CHAT_THINKING, effort: config.AI_CHAT_EFFORT };
  }
}

/**
 * The `max_tokens` of a product's calls (docs/ai.md#output-size). The organisation's output allowance is taken at
 * `max_tokens` when a call starts and the unused part given back when it ends (model-budget.ts, as the API's own
 * limiter does), so a call sized for the longest answer any product could write holds back allowance that other
 * calls could start with. Where the request fixes the answer's shape (news: `n` items; a stock report: one or two
 * symbols) the calls ask for room for that answer with a margin; an answer cut off there is asked again with
 * AI_MAX_OUTPUT_TOKENS (generateStructured). Where the customer shapes the answer (analysis, chat) and wherever the
 * model thinks before it answers (thinking tokens count against max_tokens), calls take AI_MAX_OUTPUT_TOKENS.
 */
function outputRoom(config: AiConfig, product: 'news' | 'stock-report' | 'analysis' | 'chat', answerTokens?: number): number {
  const ceiling = config.AI_MAX_OUTPUT_TOKENS;
  if (answerTokens === undefined) return ceiling;
  const { model, thinking, effort } = productModel(config, product);
  const thinks = requestSettings(modelProfile(model), thinking, effort).thinking;
  const thinksFirst = thinks !== undefined && thinks.type !== 'disabled' && thinks.type !== 'between_tools';
  return thinksFirst ? ceiling : Math.min(ceiling, answerTokens);
}

/**
 * A news answer's room: the JSON around the items, and per item its title, paragraph, source and further-reading
 * URLs, a quoted citation, scores, topics and tickers (about 250–350 tokens as models write them), with a margin.
 */
const newsAnswerTokens = (n: number): number => 512 + 448 * n;

/** A stock report's room: at least three categories of insights with citations, and quick insights; more for two symbols. */
const stockReportAnswerTokens = (symbols: number): number => (symbols > 1 ? 6_144 : 4_096);

/** The loop parameters every product's run shares, its model's request settings built from the model table. */
function baseParams(
  deps: ProductDeps,
  ctx: RunContext,
  {
    product,
    system,
    messages,
    cacheRun,
    answerTokens,
  }: {
    product: 'news' | 'stock-report' | 'analysis' | 'chat';
    system: string;
    messages: MessageParam[];
    cacheRun: CacheRun;
    /** The room the request's answer needs (outputRoom); the configured most per call when the answer's size is open. */
    answerTokens?: number;
  },
) {
  const { config } = deps;
  const { model, thinking, effort } = productModel(config, product);
  const profile = modelProfile(model);
  return {
    client: deps.client,
    budget: deps.budget,
    model,
    system,
    messages,
    settings: requestSettings(profile, thinking, effort),
    promptCache: config.AI_PROMPT_CACHE ? { ttl: config.AI_PROMPT_CACHE_TTL, run: cacheRun } : false,
    // Analyses may read filings' sections; a news run adds its own (generateNews), bound to its sources.
    tools: [...deps.dataTools, ...(product === 'analysis' ? (deps.filingsTools?.() ?? []) : []), ...(ctx.customerTools ?? [])],
    webSearch:
      config.AI_WEB_SEARCH && !deps.offline
        ? { toolType: profile.webSearchToolVersions[0] ?? 'web_search_20250305', maxUses: config.AI_WEB_SEARCH_MAX_USES }
        : undefined,
    maxOutputTokens: outputRoom(config, product, answerTokens),
    caps: { maxRounds: config.AI_MAX_ROUNDS, maxToolCalls: config.AI_MAX_TOOL_CALLS, maxTotalTokens: config.AI_MAX_TOTAL_TOKENS },
    signal: ctx.signal,
    onBudgetWait: ctx.onModelWait,
    priority: ctx.priority ?? 'queued',
    tenant: ctx.caller?.tenantId,
  } satisfies Omit<LoopParams, 'onEvent'>;
}

function meta(deps: ProductDeps, model: string, prompt: Prompt): GenerationMeta {
  return {
    model: deps.offline ? 'offline-analyst' : model,
    prompt_version: prompt.id,
    offline: deps.offline,
    generated_at: new Date().toISOString(),
  };
}

/** Progress while tools run: from `from` towards `to`, one step per tool call, described for the user. */
function toolProgress(ctx: RunContext, from: number, to: number): (event: EngineEvent) => void {
  let calls = 0;
  return (event) => {
    if (event.type !== 'tool_start') return;
    calls += 1;
    const progress = Math.min(to, from + calls * 5);
    const what =
      event.tool === 'market_data'
        ? 'Looking up market data'
        : event.tool === 'sec_filings'
          ? 'Reading SEC filings'
          : `Consulting ${event.tool}`;
    ctx.onProgress?.(progress, what);
  };
}

// ---------------------------------------------------------------------------------------------- news

const TickerDraft = z.object({
  symbol: z.string(),
  relevance_score: z.number(),
  sentiment_score: z.number(),
  reasoning: z.string(),
});

const NewsDraft = z.object({
  news: z.array(
    z.object({
      title: z.string().min(1),
      content: z.string().min(1),
      sources: z.array(z.string()),
      further_reading: z.array(z.string()),
      citations: z.array(CitationClaim).optional(),
      relevance_score: z.number(),
      published_at: z.string().nullable(),
      topics: z.array(NewsTopic),
      tickers: z.array(TickerDraft),
    }),
  ),
});

/** The request's own part of the news prompt: the window, topics, order and sources it asks for, when it does. */
function newsBriefParts(request: NewsRequest): Record<'window' | 'topics' | 'sort' | 'sources', string> {
  const explicit = request.time_from !== undefined || request.time_to !== undefined;
  const window = newsWindow(request);
  return {
    window: explicit ? `Only news published from ${window.from} to ${window.to}.\n` : '',
    topics: request.topics ? `Only news about these topics: ${request.topics.join(', ')}.\n` : '',
    sort: request.sort === 'latest' ? 'Order the items newest first.\n' : '',
    sources: request.sources?.include
      ? `Use only news from these domains: ${request.sources.include.join(', ')}.\n`
      : request.sources?.exclude
        ? `Do not use news from these domains: ${request.sources.exclude.join(', ')}.\n`
        : '',
  };
}

/** The first sentence of a model's reasoning, at most 300 characters. */
function oneSentence(text: string): string {
  const trimmed = text.trim().replace(/\s+/g, ' ');
  const sentence = /^.+?[.!?](?=\s|$)/.exec(trimmed)?.[0] ?? trimmed;
  return sentence.length > 300 ? `${sentence.slice(0, 299)}…` : sentence;
}

/**
 * An item's publication time, grounded: the model's published_at when one of the item's sources was published
 * on that day (as the retrieved material gives it), else the first source's own date; null when no source has
 * one. A date no source gives is never kept.
 */
function groundedPublishedAt(claimed: string | null, sources: readonly string[], documents: RetrievedDocuments): string | null {
  const dates = sources.map((url) => documents.publishedTime(url)).filter((date): date is string => date !== null);
  if (claimed !== null && !Number.isNaN(Date.parse(claimed))) {
    const day = new Date(claimed).toISOString().slice(0, 10);
    const match = dates.find((date) => date.slice(0, 10) === day);
    if (match !== undefined) return match;
  }
  return dates[0] ?? null;
}

/** The item's sentiment per requested symbol: other symbols dropped, each symbol once, scores clamped, label from the score. */
function groundedTickers(tickers: readonly z.infer<typeof TickerDraft>[], requested: readonly string[]): TickerSentiment[] {
  const seen = new Set<string>();
  const kept: TickerSentiment[] = [];
  for (const ticker of tickers) {
    const symbol = ticker.symbol.trim().toUpperCase();
    if (!requested.includes(symbol) || seen.has(symbol) || !ticker.reasoning.trim()) continue;
    seen.add(symbol);
    const sentiment = Math.max(-1, Math.min(1, Number.isFinite(ticker.sentiment_score) ? ticker.sentiment_score : 0));
    const score = Math.round(sentiment * 1000) / 1000;
    kept.push({
      symbol,
      relevance_score: clampScore(ticker.relevance_score),
      sentiment_score: score,
      sentiment_label: sentimentLabel(score),
      reasoning: oneSentence(ticker.reasoning),
    });
  }
  return kept;
}

/** Per requested symbol that any item concerns: the relevance-weighted mean of its scores, its label and item count. */
function symbolSentiment(items: readonly NewsItem[], requested: readonly string[]): SymbolSentiment[] {
  return requested.flatMap((symbol) => {
    const scores = items.flatMap((item) => item.tickers?.filter((ticker) => ticker.symbol === symbol) ?? []);
    if (scores.length === 0) return [];
    const weight = scores.reduce((sum, ticker) => sum + ticker.relevance_score, 0);
    const mean =
      weight > 0
        ? scores.reduce((sum, ticker) => sum + ticker.sentiment_score * ticker.relevance_score, 0) / weight
        : scores.reduce((sum, ticker) => sum + ticker.sentiment_score, 0) / scores.length;
    const score = Math.round(mean * 1000) / 1000;
    return [{ symbol, sentiment_score: score, sentiment_label: sentimentLabel(score), items: scores.length }];
  });
}

/**
 * A filter that keeps an item only when it cites a source no item before it did: an item whose sources were all
 * cited already is the same story again under another title (a model padding a short list to `n`), and would be
 * counted twice in ticker_sentiment. Fewer than `n` items is the honest answer when fewer stories exist.
 */
function newSources(): (item: { sources: readonly string[] }) => boolean {
  const cited = new Set<string>();
  return (item) => {
    const fresh = item.sources.some((url) => !cited.has(url));
    for (const url of item.sources) cited.add(url);
    return fresh;
  };
}

/**
 * News for 1–10 symbols. Every URL in `sources`/`further_reading` was returned by a tool or web search in this
 * run and is allowed by the request's sources (others are dropped); an item left without a source is dropped;
 * scores are clamped to 0–1; items are ordered by relevance (or newest first), an item whose sources an earlier
 * one already cited is dropped (newSources: one source, one item), and at most `n` are returned. Each
 * item's citations are the model's {url, quote} claims that hold against the documents the run retrieved
 * (citations.ts), completed from those documents; its publication time is its sources' (never the model's
 * alone); its ticker sentiments are for requested symbols only. A time range leaves out items published
 * outside it, or with no date; topics leave out items about none of them.
 */
export async function generateNews(deps: ProductDeps, request: NewsRequest, ctx: RunContext = {}): Promise<ProductOutcome<NewsResult>> {
  const prompt = loadPrompt('news');
  const model = deps.config.AI_NEWS_MODEL;
  const brief = prompt.request({
    n: String(request.n),
    symbols: request.symbols.join(', '),
    ...newsBriefParts(request),
    language: request.language,
    data: renderCustomData(request.data),
  });
  const explicitWindow = request.time_from !== undefined || request.time_to !== undefined;
  const window = newsWindow(request);
  const lookup = {
    window: { from: new Date(window.from), to: new Date(window.to), exact: explicitWindow },
    sources: request.sources,
  };
  ctx.onProgress?.(10, `Searching recent news for ${request.symbols.join(', ')}`);
  const cacheRun = deps.cachePolicy.start('news');
  const params = baseParams(deps, ctx, {
    product: 'news',
    system: prompt.system,
    messages: [{ role: 'user', content: brief }],
    cacheRun,
    answerTokens: newsAnswerTokens(request.n),
  });
  const out = await generateStructured({
    ...params,
    tools: [
      ...(deps.newsDataTools?.(lookup) ?? deps.dataTools),
      ...(deps.filingsTools?.(request.sources) ?? []),
      ...(ctx.customerTools ?? []),
    ],
    webSearch: params.webSearch && {
      ...params.webSearch,
      ...(request.sources?.include ? { allowedDomains: request.sources.include } : {}),
      ...(request.sources?.exclude ? { blockedDomains: request.sources.exclude } : {}),
    },
    schema: NewsDraft,
    roomOnCutOff: deps.config.AI_MAX_OUTPUT_TOKENS,
    stream: false,
    onEvent: toolProgress(ctx, 10, 70),
  }).finally(cacheRun.finish);
  ctx.onProgress?.(85, 'Checking every source link');
  const grounding = new GroundingSet(out.groundingUrls);
  const allowed = (urls: string[]) => grounding.filter(urls).kept.filter((url) => allowedSource(url, request.sources));
  const from = Date.parse(window.from);
  const to = Date.parse(window.to);
  const news = out.value.news
    .map((item) => {
      const sources = allowed(item.sources);
      return {
        title: item.title.trim(),
        content: item.content.trim(),
        sources,
        further_reading: allowed(item.further_reading),
        citations: resolveCitations(item.citations, out.documents, 'news').kept,
        relevance_score: clampScore(item.relevance_score),
        published_at: groundedPublishedAt(item.published_at, sources, out.documents),
        topics: [...new Set(item.topics)],
        tickers: groundedTickers(item.tickers, request.symbols),
      };
    })
    .filter((item) => item.sources.length > 0)
    .filter((item) => !request.topics || item.topics.some((topic) => request.topics?.includes(topic)))
    .filter((item) => {
      if (!explicitWindow) return true;
      const published = item.published_at === null ? Number.NaN : Date.parse(item.published_at);
      return published >= from && published <= to;
    })
    .sort((a, b) =>
      request.sort === 'latest'
        ? (b.published_at === null ? 0 : Date.parse(b.published_at)) - (a.published_at === null ? 0 : Date.parse(a.published_at)) ||
          b.relevance_score - a.relevance_score
        : b.relevance_score - a.relevance_score,
    )
    .filter(newSources())
    .slice(0, request.n);
  const result = NewsResult.parse({ news, ticker_sentiment: symbolSentiment(news, request.symbols), meta: meta(deps, model, prompt) });
  return { result, usage: out.usage };
}

// -------------------------------------------------------------------------------------- stock report

const MIN_CATEGORIES = 3;

/** An insight as the model writes it: its citations are claims ({url, quote}), resolved against the run's documents. */
const InsightDraft = DetailedAnalysisItem.omit({ citations: true }).extend({ citations: z.array(CitationClaim).optional() });

/** A quick insight as the model writes it: a sentence and its citation claims, like an insight's. */
const QuickInsightDraft = z.object({ text: z.string().min(1), citations: z.array(CitationClaim).optional() });

const StockReportDraft = z
  .object({
    detailed_analysis: z.array(InsightDraft).min(1),
    quick_insights: z.array(QuickInsightDraft).min(QUICK_INSIGHTS_MIN).max(QUICK_INSIGHTS_MAX),
  })
  .superRefine((value, ctx) => {
    const categories = new Set(value.detailed_analysis.map((item) => item.category));
    if (categories.size < Math.min(MIN_CATEGORIES, DetailedAnalysisCategory.options.length)) {
      ctx.addIssue({
        code: 'custom',
        path: ['detailed_analysis'],
        message: `cover at least ${MIN_CATEGORIES} different categories (got ${[...categories].join(', ') || 'none'})`,
      });
    }
  });

/**
 * One symbol: a single-stock analysis. Two: a comparison, in which every insight weighs one against the other.
 * The figures come first: each symbol's reported figures (XBRL facts from SEC EDGAR) and the ratios computed from
 * them are given to the model as data, and after the answer every figure the report states is checked against them
 * (checkReport): parts stating a figure that matches none are removed, and each part cites the filings of its
 * figures. The figures and ratios are part of the result.
 */
export async function generateStockReport(
  deps: ProductDeps,
  request: StockReportRequest,
  ctx: RunContext = {},
): Promise<ProductOutcome<StockReportResult>> {
  const prompt = loadPrompt('stock-report');
  const model = deps.config.AI_MODEL;
  const [first, second] = request.symbols;
  const comparing = second !== undefined;
  ctx.onProgress?.(5, 'Reading reported figures from SEC filings');
  const reported = await loadReportFigures(deps.filings, request.symbols);
  const brief = prompt.request({
    task: comparing ? `Compare ${first} with ${second}.` : `Analyse ${first}.`,
    figures: renderReportFigures(reported),
    language: request.language,
    data: renderCustomData(request.data),
  });
  ctx.onProgress?.(10, comparing ? `Gathering data on ${first} and ${second}` : `Gathering data on ${first}`);
  const cacheRun = deps.cachePolicy.start('stock-report');
  const out = await generateStructured({
    ...baseParams(deps, ctx, {
      product: 'stock-report',
      system: prompt.system,
      messages: [{ role: 'user', content: brief }],
      cacheRun,
      answerTokens: stockReportAnswerTokens(request.symbols.length),
    }),
    schema: StockReportDraft,
    roomOnCutOff: deps.config.AI_MAX_OUTPUT_TOKENS,
    stream: false,
    onEvent: toolProgress(ctx, 10, 70),
  }).finally(cacheRun.finish);
  ctx.onProgress?.(90, 'Checking every figure against the filings');
  const resolved = (claims: readonly CitationClaim[] | undefined) => ({
    citations: resolveCitations(claims, out.documents, 'stock-report').kept,
    claimed: claims?.length ?? 0,
  });
  const checked = checkReport(
    {
      detailed: out.value.detailed_analysis.map((item) => ({ ...item, ...resolved(item.citations) })),
      quick: out.value.quick_insights.map((insight) => ({ text: insight.text, ...resolved(insight.citations) })),
    },
    reported,
    request.data,
  );
  if (checked.detailed.length === 0) {
    throw withSpentUsage(
      new AiError('invalid_output', 'Every insight of the report stated a figure that matches none given, or cited nothing verifiable.'),
      out.usage,
    );
  }
  figureChecks.inc({ part: 'insight', outcome: 'kept' }, checked.detailed.length);
  figureChecks.inc({ part: 'insight', outcome: 'removed' }, checked.removed.insights);
  figureChecks.inc({ part: 'implication', outcome: 'removed' }, checked.removed.implications);
  figureChecks.inc({ part: 'quick_insight', outcome: 'kept' }, checked.quick.length);
  figureChecks.inc({ part: 'quick_insight', outcome: 'removed' }, checked.removed.quickInsights);
  // The model's quick insights that held, topped up to the contract's minimum with sentences the service writes from
  // the figures (cited to their filings).
  const quick = [...checked.quick];
  for (const sentence of figureQuickInsights(reported)) {
    if (quick.length >= QUICK_INSIGHTS_MIN) break;
    quick.push(sentence);
    figureChecks.inc({ part: 'quick_insight', outcome: 'service_written' });
  }
  if (quick.length < QUICK_INSIGHTS_MIN) {
    throw withSpentUsage(
      new AiError('invalid_output', 'Too few quick insights held: their figures match none given, or they cited nothing verifiable.'),
      out.usage,
    );
  }
  const result = StockReportResult.parse({
    detailed_analysis: checked.detailed,
    quick_insights: quick.map((insight) => insight.text),
    quick_insight_citations: quick.map((insight) => insight.citations),
    figures: reported.figures,
    ratios: reported.ratios,
    figure_notes: reported.notes,
    meta: meta(deps, model, prompt),
  });
  return { result, usage: out.usage };
}

// ------------------------------------------------------------------------------------------ analysis

const FIELD_SCHEMAS: Record<OutputSchemaTypeName, z.ZodType> = {
  string: z.string(),
  number: z.number(),
  integer: z.int(),
  boolean: z.boolean(),
  array: z.array(z.unknown()),
  object: z.record(z.string(), z.unknown()),
};

/** The zod schema of a `json_schema` answer: exactly the requested fields with the requested types. */
export function schemaForFields(fields: Readonly<Record<string, OutputSchemaTypeName>>): z.ZodObject {
  return z.strictObject(Object.fromEntries(Object.entries(fields).map(([name, type]) => [name, FIELD_SCHEMAS[type]])));
}

/**
 * The field of a structured (json_schema) answer that carries its citations, left out of the content. A
 * constrained answer (the API's structured output) cites in the answer itself: a citation round after it would
 * send another output format, which voids the cached conversation it should read (docs/benchmarks.md).
 */
const CITED_FIELD = '_citations';

/** Whether the API's strict structured output can express the caller's fields (not free-form objects or arrays). */
function constrainedFields(request: AnalysisRequest): Readonly<Record<string, OutputSchemaTypeName>> | undefined {
  const format = request.output_format;
  if (format.type !== 'json_schema') return undefined;
  const fields = format.schema ?? {};
  return Object.values(fields).every((type) => type !== 'array' && type !== 'object') ? fields : undefined;
}

/** Whether the answer itself carries its citations (a constrained answer whose fields leave the name free). */
function citesInAnswer(request: AnalysisRequest): boolean {
  const fields = constrainedFields(request);
  return fields !== undefined && !Object.hasOwn(fields, CITED_FIELD);
}

/** The analysis request's own part: scope, portfolio, output format, the question and the client's data. */
function analysisBrief(request: AnalysisRequest): string {
  const format = request.output_format;
  let formatText: string;
  if (format.type === 'markdown') formatText = 'Markdown text with headings and bullet points where they help; no JSON.';
  else if (format.type === 'json')
    formatText = 'a single JSON object, structured as suits the question, and nothing else (no prose, no code fences).';
  else {
    const fields = Object.entries(format.schema ?? {}).map(([name, type]) => `"${name}" (${type})`);
    formatText = `a single JSON object with exactly these fields and types, and nothing else: ${fields.join(', ')}.`;
    if (citesInAnswer(request)) {
      formatText +=
        ` Add the field "${CITED_FIELD}": the passages of the retrieved material (tool results and web search results) the answer rests on, ` +
        'as [{"url": "…", "quote": "…"}], each url exactly as it was returned and each quote copied word for word; an empty list when you used none.';
    }
  }
  return loadPrompt('analysis').request({
    symbols: request.symbols?.length ? `\nSymbols in scope: ${request.symbols.join(', ')}.` : '',
    portfolio: request.portfolio_composition?.length
      ? `\nThe client's portfolio: ${request.portfolio_composition.map((h) => `${h.symbol} ${h.percentage}%`).join(', ')}.`
      : '',
    format: formatText,
    prompt: request.prompt,
    data: renderCustomData(request.data),
  });
}

/**
 * The markdown answer exactly as the client is streamed it: every text delta of every round, in order, without
 * the whitespace that opens or closes the whole, and with one blank line where the model stopped writing to use
 * tools. Whitespace at the end of a delta is held back until more text follows, so the chunks sent concatenate
 * to the stored `content` character for character.
 */
function markdownSynthesis(emit: (event: EngineEvent) => void) {
  let content = '';
  let held = '';
  let atStart = true;
  return {
    onEvent(event: EngineEvent): void {
      if (event.type === 'tool_start' && content !== '') atStart = true;
      if (event.type !== 'text') return;
      let text = event.text;
      if (atStart) {
        text = text.trimStart();
        if (text === '') return;
        atStart = false;
        held = content === '' ? '' : '\n\n';
      }
      const body = text.trimEnd();
      if (body !== '') {
        const chunk = held + body;
        held = '';
        content += chunk;
        emit({ type: 'text', text: chunk });
      }
      held += text.slice(body.length);
    },
    get content(): string {
      return content;
    },
  };
}

/** Largest `text` event the JSON of a structured answer is sent in (split at line ends where it can be). */
const JSON_CHUNK_CHARS = 1024;

function jsonChunks(text: string): string[] {
  const chunks: string[] = [];
  let current = '';
  for (const line of text.split(/(?<=\n)/)) {
    if (current !== '' && current.length + line.length > JSON_CHUNK_CHARS) {
      chunks.push(current);
      current = '';
    }
    current += line;
  }
  if (current !== '') chunks.push(current);
  return chunks;
}

/**
 * One analysis run. Markdown is streamed as the model writes it (see markdownSynthesis). A JSON answer is
 * streamed only once it has been validated (and repaired if needed), as `analysisText` of the result: the model's
 * raw text could be a first attempt that fails validation, and a client must never be sent JSON that is then
 * replaced.
 */
async function runAnalysis(
  deps: ProductDeps,
  request: AnalysisRequest,
  ctx: RunContext,
  emit: ((event: EngineEvent) => void) | undefined,
): Promise<ProductOutcome<AnalysisResult>> {
  const cacheRun = deps.cachePolicy.start('analysis');
  try {
    return await analysisRun(deps, request, ctx, emit, cacheRun);
  } finally {
    cacheRun.finish();
  }
}

async function analysisRun(
  deps: ProductDeps,
  request: AnalysisRequest,
  ctx: RunContext,
  emit: ((event: EngineEvent) => void) | undefined,
  cacheRun: CacheRun,
): Promise<ProductOutcome<AnalysisResult>> {
  const prompt = loadPrompt('analysis');
  const model = deps.config.AI_MODEL;
  const params = baseParams(deps, ctx, {
    product: 'analysis',
    system: prompt.system,
    messages: [{ role: 'user', content: analysisBrief(request) }],
    cacheRun,
  });
  const progress = toolProgress(ctx, 10, 60);
  ctx.onProgress?.(10, 'Researching the question');
  const format = request.output_format;
  const generatedMeta = () => meta(deps, model, prompt);
  if (format.type === 'markdown') {
    const synthesis = markdownSynthesis(emit ?? (() => undefined));
    // Streamed only when a client reads the synthesis as it is written; a job's run takes each answer whole.
    const out = await runToolLoop({
      ...params,
      stream: emit !== undefined,
      onEvent: (event) => {
        progress(event);
        synthesis.onEvent(event);
      },
    });
    if (out.stopReason === 'max_tokens') {
      throw withSpentUsage(new AiError('invalid_output', 'The answer was cut off at the output token limit.'), out.usage);
    }
    if (synthesis.content === '') throw withSpentUsage(new AiError('invalid_output', 'The model returned an empty answer.'), out.usage);
    const cited = await citationsFor(params, out).catch((error: unknown) => {
      throw withSpentUsage(error, out.usage);
    });
    const result = AnalysisResult.parse({
      format: 'markdown',
      content: synthesis.content,
      citations: cited.citations,
      meta: generatedMeta(),
    });
    return { result, usage: addUsage(out.usage, cited.usage) };
  }
  const fields = format.type === 'json_schema' ? (format.schema ?? {}) : undefined;
  // The API's strict structured output cannot express free-form objects or arrays of anything.
  const constrained = constrainedFields(request) !== undefined;
  if (citesInAnswer(request) && fields) {
    const schema = schemaForFields(fields).extend({ [CITED_FIELD]: z.array(CitationClaim) });
    const out = await generateStructured({ ...params, schema, constrained, stream: false, onEvent: progress });
    ctx.onProgress?.(90, 'Checking the answer');
    const { [CITED_FIELD]: claims, ...content } = out.value as Record<string, unknown> & { [CITED_FIELD]: CitationClaim[] };
    const citations = resolveCitations(claims, out.documents, 'analysis').kept;
    const result = AnalysisResult.parse({ format: format.type, content, citations, meta: generatedMeta() });
    if (emit) for (const text of jsonChunks(analysisText(result))) emit({ type: 'text', text });
    return { result, usage: out.usage };
  }
  const schema = fields ? schemaForFields(fields) : z.record(z.string(), z.unknown());
  // A JSON answer is sent only once validated, so its rounds never need to stream.
  const out = await generateStructured({ ...params, schema, constrained, stream: false, onEvent: progress });
  ctx.onProgress?.(90, 'Checking the answer');
  const cited = await citationsFor(params, { ...out.loop, documents: out.documents }).catch((error: unknown) => {
    throw withSpentUsage(error, out.usage);
  });
  const result = AnalysisResult.parse({ format: format.type, content: out.value, citations: cited.citations, meta: generatedMeta() });
  if (emit) for (const text of jsonChunks(analysisText(result))) emit({ type: 'text', text });
  return { result, usage: addUsage(out.usage, cited.usage) };
}

/** What the model is asked, after it has answered, for the passages its answer rests on. */
export const CITATION_REQUEST =
  'List the passages of the retrieved material (tool results and web search results in this conversation) that support your answer. ' +
  "For each, give the url of the material exactly as it was returned (an article's url, a figure resource's source_url, the source_url of a <tool_output>, a search result's URL) " +
  'and the quote, copied word for word from that material. Cite only material you used; an empty list is right when you used none. ' +
  'Reply with only a JSON object of the form {"citations": [{"url": "…", "quote": "…"}]}, and nothing else.';

const CitationList = z.object({ citations: z.array(CitationClaim) });

/**
 * The citations of an analysis. Its content is free-form (text, or an object of the caller's shape), so there is
 * no place in it for them: after the answer, one more round of the same conversation asks for {url, quote} claims
 * as structured output (tools offered but not callable), and they are resolved against the run's documents.
 * No round when the run retrieved nothing. A failure of this round leaves the analysis without citations rather
 * than failing it (counted as fin_citations_total{outcome="unavailable"}), and what the round spent stays in the
 * analysis's usage; an abort still aborts (with what it spent, in the error).
 */
async function citationsFor(
  params: Omit<LoopParams, 'onEvent'>,
  answered: Pick<LoopResult, 'messages' | 'documents' | 'toolChoice' | 'webSearchMaxUses'>,
): Promise<{ citations: Citation[]; usage: Usage }> {
  if (answered.documents.size === 0) return { citations: [], usage: NO_USAGE };
  try {
    // The request the answer's last round sent, with one more user turn: the same tools, tool_choice and output
    // settings (no structured output here: a schema other than the answer's would void the cached conversation),
    // so the call reads the whole conversation from the prompt cache. A tool call in it fails the call.
    const out = await generateStructured({
      ...params,
      constrained: false,
      toolChoice: answered.toolChoice,
      webSearch: params.webSearch && { ...params.webSearch, maxUses: answered.webSearchMaxUses ?? params.webSearch.maxUses },
      caps: { ...params.caps, maxRounds: 1 },
      messages: [...answered.messages, { role: 'user', content: CITATION_REQUEST }],
      schema: CitationList,
      stream: false,
    });
    return { citations: resolveCitations(out.value.citations, answered.documents, 'analysis').kept, usage: out.usage };
  } catch (error) {
    if (error instanceof AiError && error.kind === 'aborted') throw error;
    citationsResolved.inc({ product: 'analysis', outcome: 'unavailable' });
    // The round was billed all the same (its errors carry what it spent): that is the analysis's usage too.
    return { citations: [], usage: (error instanceof AiError ? error.usage : undefined) ?? NO_USAGE };
  }
}

/** A custom analysis in the requested output format; the result always satisfies it or the run fails. */
export function generateAnalysis(
  deps: ProductDeps,
  request: AnalysisRequest,
  ctx: RunContext = {},
): Promise<ProductOutcome<AnalysisResult>> {
  return runAnalysis(deps, request, ctx, undefined);
}

/**
 * The same run, streamed: `text` events are the synthesis (the analysis service sends them as `synthesis_chunk`),
 * then the validated result, whose `analysisText` is exactly the concatenated text events. A failure is thrown
 * from the iterator.
 */
export function streamAnalysis(
  deps: ProductDeps,
  request: AnalysisRequest,
  ctx: RunContext = {},
): AsyncIterable<StreamItem<EngineEvent, ProductOutcome<AnalysisResult>>> {
  return streamOf((emit, signal) => runAnalysis(deps, request, { ...ctx, signal }, emit), ctx.signal);
}

// ---------------------------------------------------------------------------------------------- chat

export interface ChatTurn {
  role: 'user' | 'assistant';
  content: string;
}

export interface ChatInput {
  /** Earlier turns, oldest first (the chat service keeps about 10 pairs). */
  history: readonly ChatTurn[];
  message: string;
}

/** Chat phases, streamed as `node_start`: research (tools are being used) and answer (the reply is being written). */
export const CHAT_NODES = ['research', 'answer'] as const;

/**
 * A chat reply, streamed: node_start, tool_start/tool_end and text events, then the full reply. The data tools
 * and the tenant's customer tools may be used. The reply is every text the user was streamed, in order (a
 * sentence written before a tool call included), so what is stored is exactly what was shown.
 */
export function streamChat(
  deps: ProductDeps,
  input: ChatInput,
  ctx: RunContext = {},
): AsyncIterable<StreamItem<EngineEvent, ProductOutcome<{ text: string }>>> {
  return streamOf(async (emit, signal) => {
    let node: (typeof CHAT_NODES)[number] | undefined;
    const shown: string[] = [];
    // A turn's first call is read by the conversation's next turn too.
    const cacheRun = deps.cachePolicy.start('chat', { firstCallRead: true });
    const out = await runToolLoop({
      ...baseParams(
        deps,
        { ...ctx, signal },
        {
          product: 'chat',
          system: loadPrompt('chat').system,
          messages: [
            ...input.history.map((turn) => ({ role: turn.role, content: turn.content })),
            { role: 'user', content: input.message },
          ],
          cacheRun,
        },
      ),
      onEvent(event) {
        const next = event.type === 'tool_start' ? 'research' : event.type === 'text' ? 'answer' : node;
        if (next !== node && next !== undefined) {
          node = next;
          emit({ type: 'node_start', node: next });
        }
        if (event.type === 'text') shown.push(event.text);
        emit(event);
      },
    }).finally(cacheRun.finish);
    const text = shown.join('');
    if (!text.trim()) throw withSpentUsage(new AiError('invalid_output', 'The model returned an empty reply.'), out.usage);
    if (out.stopReason === 'max_tokens') {
      throw withSpentUsage(new AiError('invalid_output', 'The reply was cut off at the output token limit.'), out.usage);
    }
    return { result: { text }, usage: out.usage };
  }, ctx.signal);
}
