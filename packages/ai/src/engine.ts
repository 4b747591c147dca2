import Anthropic from '@anthropic-ai/sdk';
import type { AnalysisRequest, AnalysisResult, NewsRequest, NewsResult, StockReportRequest, StockReportResult } from '@fin/contracts';
import { sampleFilingsSource, type FilingsSource } from '@fin/edgar';
import type { Logger } from '@fin/log';
import { TailWritePolicy } from './cache-policy';
import { isOffline, type AiConfig } from './config';
import type { EngineEvent } from './loop';
import { FinnhubProvider, SampleMarketDataProvider, type MarketDataProvider } from './market-data';
import { filingsTool } from './filings-tool';
import { marketDataTool } from './market-data-tool';
import { UNLIMITED_MODEL_BUDGET, type ModelBudget } from './model-budget';
import { modelProfile } from './model-settings';
import { messagesApiFetch, offlineAnalyst } from '@fin/offline';
import {
  generateAnalysis,
  generateNews,
  generateStockReport,
  streamAnalysis,
  streamChat,
  type ChatInput,
  type ProductDeps,
  type ProductOutcome,
  type RunContext,
} from './products';
import type { CustomerToolSource, ToolProduct } from './tools';
import type { StreamItem } from './stream';
import { createHttpFetch } from './transport';

/** A product run's outcome, with the customer tool set it offered the model (what its result may be cached for). */
export interface EngineOutcome<T> extends ProductOutcome<T> {
  /** The digest of the customer tools offered (OfferedTools.toolSet); null when none were. */
  customerToolSet: string | null;
}

/** Everything the products need from the AI: one object per process, created at start and closed at shutdown. */
export interface AiEngine {
  /** True in offline mode: results come from the deterministic analyst over sample data. */
  readonly offline: boolean;
  news(request: NewsRequest, ctx?: RunContext): Promise<EngineOutcome<NewsResult>>;
  stockReport(request: StockReportRequest, ctx?: RunContext): Promise<EngineOutcome<StockReportResult>>;
  analysis(request: AnalysisRequest, ctx?: RunContext): Promise<EngineOutcome<AnalysisResult>>;
  analysisStream(request: AnalysisRequest, ctx?: RunContext): AsyncIterable<StreamItem<EngineEvent, ProductOutcome<AnalysisResult>>>;
  chat(input: ChatInput, ctx?: RunContext): AsyncIterable<StreamItem<EngineEvent, ProductOutcome<{ text: string }>>>;
  close(): Promise<void>;
}

export interface EngineOptions {
  config: AiConfig;
  logger: Logger;
  /** Overrides the provider chosen from config (tests). */
  marketData?: MarketDataProvider;
  /** Where a tenant's customer tools come from (the customer-tools runtime); none when absent. Closed with the engine. */
  customerTools?: CustomerToolSource & { close?(): Promise<void> };
  /**
   * The organisation's model allowance shared by every replica (createPostgresModelBudget), which every model call
   * waits for; absent: calls go at once. Closed with the engine.
   */
  budget?: ModelBudget;
  /**
   * SEC EDGAR, where stock reports take their reported figures from and news and analyses read filings' sections
   * (the sec_filings tool): the live client when EDGAR is configured, the bundled sample in offline mode (the default
   * there). Absent online: reports say they have no reported figures, and no run is offered the tool.
   */
  filings?: FilingsSource;
}

/**
 * An iterable whose source is only known after an await (the customer tools are loaded first). Once the source is
 * there, next() is the source's own: a chat reply's consumer waits in next() for as long as the reply streams,
 * and an async wrapper would keep a frame and promises of its own all that time.
 */
function deferred<T>(start: () => Promise<AsyncIterable<T>>): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      let inner: AsyncIterator<T> | undefined;
      let starting: Promise<AsyncIterator<T>> | undefined;
      return {
        next() {
          if (inner !== undefined) return inner.next();
          starting ??= start().then((source) => (inner = source[Symbol.asyncIterator]()));
          return starting.then((source) => source.next());
        },
        async return() {
          await inner?.return?.();
          return { done: true, value: undefined };
        },
      };
    },
  };
}

/**
 * Tools handed in by the caller without the digest of their set: they are still tenant input, and no cache key
 * names this set, so such a result is never cached.
 */
const UNIDENTIFIED_TOOL_SET = 'unidentified';

/** Which customer tool set a run offered: what the engine loaded, or what the caller handed in. */
function toolSetOf(ctx: RunContext): string | null {
  if (ctx.customerToolSet !== undefined) return ctx.customerToolSet;
  return ctx.customerTools !== undefined && ctx.customerTools.length > 0 ? UNIDENTIFIED_TOOL_SET : null;
}

/** Runs `generate` with the run's tools and reports which tool set it offered. */
async function reported<T>(ctx: RunContext, generate: (ctx: RunContext) => Promise<ProductOutcome<T>>): Promise<EngineOutcome<T>> {
  return { ...(await generate(ctx)), customerToolSet: toolSetOf(ctx) };
}

/**
 * Where the offline client sends its requests: nowhere, since its fetch answers them in-process. A reserved
 * name (RFC 2606), so that a request that did leave the process could not reach anyone.
 */
const OFFLINE_BASE_URL = 'http://offline-analyst.invalid';

/**
 * Builds the engine from config. With ANTHROPIC_API_KEY it talks to the Anthropic API (or ANTHROPIC_BASE_URL);
 * without one it starts offline mode: the SDK's requests are answered in-process by the deterministic analyst
 * in the Messages API's wire format, with sample market data, announced by a warning at start and marked
 * `offline: true` in every result.
 */
// Nothing is awaited today (offline mode starts no server any more), but callers await the engine and a refused
// configuration (OfflineModeConflictError) reaches them as a rejection, as an engine that connects at start would.
// eslint-disable-next-line @typescript-eslint/require-await
export async function createAiEngine({ config, logger, marketData, customerTools, budget, filings }: EngineOptions): Promise<AiEngine> {
  const offline = isOffline(config);
  let client: Anthropic;
  // The SDK's HTTP calls go through node:http (transport.ts): an open model stream holds less memory than over
  // the SDK's default fetch, and chat keeps one open per streaming reply.
  const transport = createHttpFetch();
  const clientOptions = { timeout: config.AI_TIMEOUT_MS, maxRetries: config.AI_MAX_RETRIES };
  if (offline) {
    client = new Anthropic({
      apiKey: 'offline-mode',
      baseURL: OFFLINE_BASE_URL,
      ...clientOptions,
      fetch: messagesApiFetch(offlineAnalyst(), {
        pace: config.AI_OFFLINE_PACE ? { timeScale: config.AI_OFFLINE_TIME_SCALE } : undefined,
        limits: config.AI_OFFLINE_RATE_LIMITS && { ...config.AI_OFFLINE_RATE_LIMITS, timeScale: config.AI_OFFLINE_TIME_SCALE },
      }),
    });
    logger.warn(
      {
        aiMode: 'offline',
        modelPace: config.AI_OFFLINE_PACE ? { timeScale: config.AI_OFFLINE_TIME_SCALE } : 'instant',
        rateLimits: config.AI_OFFLINE_RATE_LIMITS ?? 'unlimited',
      },
      'AI OFFLINE MODE: no ANTHROPIC_API_KEY is set, so results come from a deterministic stand-in over bundled sample data. They are marked offline and are not research.',
    );
  } else {
    client = new Anthropic({
      apiKey: config.ANTHROPIC_API_KEY,
      baseURL: config.ANTHROPIC_BASE_URL,
      ...clientOptions,
      fetch: transport.fetch,
    });
    logger.info({ aiMode: 'anthropic', model: config.AI_MODEL, newsModel: config.AI_NEWS_MODEL }, 'AI engine uses the Anthropic API');
    for (const model of new Set([config.AI_MODEL, config.AI_NEWS_MODEL])) {
      if (!modelProfile(model).unknown) continue;
      logger.warn(
        { model },
        `Model ${model} is not in the model table (packages/ai/src/models.ts): its requests use the conservative profile (no thinking field, no effort, at most 64,000 output tokens, the highest prices for cost figures). Add its row to use it fully.`,
      );
    }
  }

  let provider = marketData;
  if (!provider) {
    if (config.FINNHUB_API_KEY)
      provider = new FinnhubProvider({ token: config.FINNHUB_API_KEY, baseUrl: config.FINNHUB_BASE_URL, fetch: transport.fetch });
    else if (offline) provider = new SampleMarketDataProvider();
  }
  if (!provider) logger.warn('No FINNHUB_API_KEY: the market_data tool is off; the model relies on web search.');

  // Offline, reports are written on the bundled sample's filings, as on its market data.
  const filingsSource = filings ?? (offline ? sampleFilingsSource() : undefined);
  const deps: ProductDeps = {
    client,
    config,
    offline,
    dataTools: provider ? [marketDataTool(provider)] : [],
    newsDataTools: (lookup) => (provider ? [marketDataTool(provider, lookup)] : []),
    cachePolicy: new TailWritePolicy(),
    budget: budget ?? UNLIMITED_MODEL_BUDGET,
    filings: filingsSource,
    filingsTools: filingsSource && ((sources) => [filingsTool(filingsSource, { sources })]),
  };
  /** The run's context with the caller's customer tools for `product` added, when there is a caller and a source. */
  const withTools = async (ctx: RunContext = {}, product: ToolProduct): Promise<RunContext> => {
    if (!customerTools || ctx.customerTools || !ctx.caller) return ctx;
    const { tenantId, ...owner } = ctx.caller;
    const offered = await customerTools.toolsFor(tenantId, product, { ...owner, signal: ctx.signal });
    return { ...ctx, customerTools: offered.tools, customerToolSet: offered.toolSet };
  };
  return {
    offline,
    news: async (request, ctx) => reported(await withTools(ctx, 'news'), (run) => generateNews(deps, request, run)),
    stockReport: async (request, ctx) => reported(await withTools(ctx, 'stock-report'), (run) => generateStockReport(deps, request, run)),
    analysis: async (request, ctx) => reported(await withTools(ctx, 'analysis'), (run) => generateAnalysis(deps, request, run)),
    // Someone reads these as they are written: their calls take the model budget's interactive share.
    analysisStream: (request, ctx) =>
      deferred(async () => streamAnalysis(deps, request, { ...(await withTools(ctx, 'analysis')), priority: 'interactive' })),
    chat: (input, ctx) => deferred(async () => streamChat(deps, input, { ...(await withTools(ctx, 'chat')), priority: 'interactive' })),
    async close() {
      await budget?.close();
      await customerTools?.close?.();
      transport.close();
    },
  };
}
