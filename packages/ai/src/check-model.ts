// The operator's pre-flight (`npm run check:model`, docs/operations.md#checking-a-key-or-a-model): one small
// request of every shape the service sends — news, a stock report, an analysis as markdown and as json_schema, a
// chat turn with the market_data tool, and a repair call — to the models the configuration names, with the
// products' own prompts, tools and request settings (the engine builds them), each answer checked against the
// contracts as the products check it. One line per request: its model, thinking setting, tokens, cost at the
// model table's list prices and outcome. With no ANTHROPIC_API_KEY it runs against offline mode's in-process
// stand-in of the Messages API, which enforces the same per-model rules, and says so.
import Anthropic, { APIError } from '@anthropic-ai/sdk';
import { ConfigError, parseConfig } from '@fin/config';
import { AnalysisRequest, NewsRequest, StockReportRequest } from '@fin/contracts';
import { createLogger } from '@fin/log';
import { messagesApiFetch, offlineAnalyst } from '@fin/offline';
import { aiConfigShape, isOffline, type AiConfig } from './config';
import { createAiEngine, type AiEngine } from './engine';
import { AiError, toAiError } from './errors';
import { SampleMarketDataProvider } from './market-data';
import { marketDataTool } from './market-data-tool';
import { listPriceCost, modelProfile, requestSettings, type ThinkingSetting } from './model-settings';
import type { Effort } from './models';
import { schemaForFields } from './products';
import { loadPrompt } from './prompts';
import { answerProblems, generateStructured, repairTurn } from './structured';
import { NO_USAGE, type Usage } from './usage';

/** The stand-in's notice, at the top and the bottom of the output: nothing of this run reached Anthropic. */
export const STAND_IN_NOTICE = 'no ANTHROPIC_API_KEY: checked against the local stand-in, not Anthropic';

/**
 * Small requests by default: answers are capped at 4,096 output tokens and each model call at one web search,
 * unless the environment sets these (then the check sends what the service would).
 */
const CHECK_DEFAULTS = { AI_MAX_OUTPUT_TOKENS: '4096', AI_WEB_SEARCH_MAX_USES: '1' };

const SYMBOL = 'AAPL';
const SCHEMA_FIELDS = { summary: 'string', risk_score: 'number' } as const;

type Product = 'news' | 'stock-report' | 'analysis' | 'chat';

interface Shape {
  name: string;
  product: Product;
  /** Runs the request; resolves with its usage and a note on the answer, throws what the product throws. */
  run(context: CheckContext): Promise<{ usage: Usage; note?: string }>;
}

interface CheckContext {
  engine: AiEngine;
  config: AiConfig;
  client: Anthropic;
}

/** One line of the report. */
interface CheckResult {
  shape: string;
  model: string;
  thinking: string;
  usage: Usage;
  costUsd: number;
  ok: boolean;
  /** `ok` (with a note), or the failure: our error kind, the API's error type, request-id and message. */
  outcome: string;
}

function productSettings(config: AiConfig, product: Product): { model: string; thinking: ThinkingSetting; effort?: Effort } {
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

/** The setting as configured and what the request carries: `off → thinking between_tools`, `adaptive, effort high`. */
function describeThinking(config: AiConfig, product: Product): string {
  const { model, thinking, effort } = productSettings(config, product);
  const sent = requestSettings(modelProfile(model), thinking, effort);
  const parts = [sent.thinking ? `thinking ${sent.thinking.type}` : 'no thinking field', ...(sent.effort ? [`effort ${sent.effort}`] : [])];
  return `${thinking} → ${parts.join(', ')}`;
}

const SHAPES: readonly Shape[] = [
  {
    name: 'news',
    product: 'news',
    async run({ engine }) {
      const { result, usage } = await engine.news(NewsRequest.parse({ symbols: [SYMBOL], n: 1 }));
      return { usage, note: `${result.news.length} item` };
    },
  },
  {
    name: 'stock report',
    product: 'stock-report',
    async run({ engine }) {
      const { usage } = await engine.stockReport(StockReportRequest.parse({ symbols: [SYMBOL] }));
      return { usage };
    },
  },
  {
    name: 'analysis markdown',
    product: 'analysis',
    async run({ engine }) {
      const request = AnalysisRequest.parse({ prompt: `In two sentences: is ${SYMBOL} richly valued on earnings?`, symbols: [SYMBOL] });
      const { usage } = await engine.analysis(request);
      return { usage };
    },
  },
  {
    name: 'analysis json_schema',
    product: 'analysis',
    async run({ engine }) {
      const request = AnalysisRequest.parse({
        prompt: `How exposed is ${SYMBOL} to a slowdown in consumer spending? Keep the summary to one sentence.`,
        symbols: [SYMBOL],
        output_format: { type: 'json_schema', schema: SCHEMA_FIELDS },
      });
      const { usage } = await engine.analysis(request);
      return { usage };
    },
  },
  {
    name: 'chat with tools',
    product: 'chat',
    async run({ engine }) {
      let toolCalls = 0;
      for await (const item of engine.chat({ history: [], message: `What is Apple's (${SYMBOL}) P/E ratio? One sentence.` })) {
        if (item.kind === 'event' && item.event.type === 'tool_start') toolCalls++;
        if (item.kind === 'result') return { usage: item.result.usage, note: `${toolCalls} tool call${toolCalls === 1 ? '' : 's'}` };
      }
      throw new Error('the chat reply ended without a result');
    },
  },
  {
    // The repair round of structured.ts cannot be provoked on the real API, so its request is sent directly: the
    // analysis conversation with an answer that fails the schema, then the repair turn, with the run's tools and
    // tool_choice none. Its answer must satisfy the schema at once (a second repair would fail the job).
    name: 'repair json_schema',
    product: 'analysis',
    async run({ config, client }) {
      const { model, thinking, effort } = productSettings(config, 'analysis');
      const profile = modelProfile(model);
      const schema = schemaForFields(SCHEMA_FIELDS);
      const badAnswer = JSON.stringify({ summary: `${SYMBOL} is exposed through hardware sales.` });
      const offline = isOffline(config);
      const out = await generateStructured({
        client,
        model,
        system: loadPrompt('analysis').system,
        messages: [
          {
            role: 'user',
            content: `Symbols in scope: ${SYMBOL}.\nAnswer with a single JSON object with exactly these fields and types, and nothing else: "summary" (string), "risk_score" (number).\nHow exposed is ${SYMBOL} to a slowdown in consumer spending?`,
          },
          { role: 'assistant', content: badAnswer },
          repairTurn(answerProblems(schema, badAnswer) ?? 'the answer does not satisfy the schema'),
        ],
        schema,
        settings: requestSettings(profile, thinking, effort),
        tools: [marketDataTool(new SampleMarketDataProvider())],
        webSearch:
          config.AI_WEB_SEARCH && !offline
            ? { toolType: profile.webSearchToolVersions[0] ?? 'web_search_20250305', maxUses: config.AI_WEB_SEARCH_MAX_USES }
            : undefined,
        toolChoice: 'none',
        promptCache: config.AI_PROMPT_CACHE ? { ttl: config.AI_PROMPT_CACHE_TTL } : false,
        maxOutputTokens: config.AI_MAX_OUTPUT_TOKENS,
        caps: { maxRounds: 1, maxToolCalls: config.AI_MAX_TOOL_CALLS, maxTotalTokens: config.AI_MAX_TOTAL_TOKENS },
        stream: false,
      });
      if (out.repaired) {
        const failure = new AiError(
          'invalid_output',
          'The answer to the repair turn did not satisfy the schema: the service would have failed the job.',
        );
        failure.usage = out.usage;
        throw failure;
      }
      return { usage: out.usage };
    },
  },
];

/** `instanceof` on the generic class narrows to APIError<any, any, any>; this keeps its declared field types. */
function isApiError(error: unknown): error is APIError {
  return error instanceof APIError;
}

/** The SDK's error for an API answer in `error` or its causes. */
function apiErrorIn(error: unknown): APIError | undefined {
  let current = error;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    if (isApiError(current)) return current;
    current = current.cause;
  }
  return undefined;
}

/** The Messages API's answer inside a failure, when the failure was one: its status, error type, message and request-id. */
function apiErrorOf(error: unknown): { status?: number; type?: string; message?: string; requestId?: string } | undefined {
  const api = apiErrorIn(error);
  if (!api) return undefined;
  const body: unknown = api.error;
  const inner: unknown = typeof body === 'object' && body !== null && 'error' in body ? body.error : body;
  const detail = typeof inner === 'object' && inner !== null ? (inner as Record<string, unknown>) : {};
  return {
    status: api.status,
    type: typeof detail.type === 'string' ? detail.type : undefined,
    message: typeof detail.message === 'string' ? detail.message : undefined,
    requestId: api.requestID ?? api.headers?.get('request-id') ?? undefined,
  };
}

/** `FAILED bad_request (invalid_request_error, status 400, request-id req_…): the API's message`. */
function describeFailure(error: unknown): { text: string; usage: Usage } {
  const failure = toAiError(error);
  const api = apiErrorOf(error);
  if (!api) return { text: `FAILED ${failure.kind}: ${failure.message}`, usage: failure.usage ?? NO_USAGE };
  const about = [
    api.type,
    api.status === undefined ? 'in the stream' : `status ${api.status}`,
    api.requestId ? `request-id ${api.requestId}` : 'no request-id',
  ];
  return {
    text: `FAILED ${failure.kind} (${about.filter(Boolean).join(', ')}): ${api.message ?? failure.message}`,
    usage: failure.usage ?? NO_USAGE,
  };
}

function thousands(value: number): string {
  return value.toLocaleString('en-US');
}

/** One report line: shape, model, thinking, tokens, cost, outcome. */
function formatResult(result: CheckResult): string {
  const { usage } = result;
  const tokens = `input ${thousands(usage.inputTokens)}, cache write ${thousands(usage.cacheCreationInputTokens)}, cache read ${thousands(usage.cacheReadInputTokens)}, output ${thousands(usage.outputTokens)}`;
  const searches = usage.webSearches > 0 ? `, ${usage.webSearches} web search${usage.webSearches === 1 ? '' : 'es'}` : '';
  return `${result.shape.padEnd(20)} ${result.model.padEnd(18)} ${result.thinking.padEnd(36)} ${tokens}${searches}  $${result.costUsd.toFixed(5)}  ${result.outcome}`;
}

/** The client of the repair call: the engine's own is not exposed, so one with the same endpoint and options. */
function clientFor(config: AiConfig, offline: boolean): Anthropic {
  const options = { timeout: config.AI_TIMEOUT_MS, maxRetries: config.AI_MAX_RETRIES };
  return offline
    ? new Anthropic({
        apiKey: 'offline-mode',
        baseURL: 'http://offline-analyst.invalid',
        fetch: messagesApiFetch(offlineAnalyst()),
        ...options,
      })
    : new Anthropic({ apiKey: config.ANTHROPIC_API_KEY, baseURL: config.ANTHROPIC_BASE_URL, ...options });
}

/**
 * Runs the check with `env` (the AI variables the service reads, parsed as the service parses them) and writes
 * the report to `write`, a line at a time. Resolves with the exit status: 0 when every request passed, 1 otherwise
 * (a configuration the service would refuse at start included, with the same message).
 */
export async function checkModel(env: NodeJS.ProcessEnv, write: (line: string) => void): Promise<number> {
  let config: AiConfig;
  try {
    config = parseConfig(aiConfigShape, { ...CHECK_DEFAULTS, ...env });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    write(`${error.message}\nThe process did not start. See docs/configuration.md.`);
    return 1;
  }
  const offline = isOffline(config);
  const target = offline ? 'the local stand-in (offline mode)' : (config.ANTHROPIC_BASE_URL ?? 'https://api.anthropic.com');
  if (offline) write(`!!! ${STAND_IN_NOTICE} !!!`);
  write(
    `check:model against ${target}: AI_MODEL=${config.AI_MODEL}, AI_NEWS_MODEL=${config.AI_NEWS_MODEL}, AI_MAX_OUTPUT_TOKENS=${config.AI_MAX_OUTPUT_TOKENS}`,
  );
  for (const model of new Set([config.AI_NEWS_MODEL, config.AI_MODEL])) {
    const profile = modelProfile(model);
    if (profile.unknown)
      write(
        `warning: ${model} is not in the model table (packages/ai/src/models.ts): requests use the conservative profile and costs its prices`,
      );
  }
  if (!config.FINNHUB_API_KEY)
    write('market_data answers from the bundled sample data (no FINNHUB_API_KEY); the tool definition the model sees is the same');

  // market_data is always offered: with FINNHUB_API_KEY the engine uses Finnhub, otherwise the sample data.
  const engine = await createAiEngine({
    config,
    logger: createLogger({ service: 'check-model', level: 'silent' }),
    ...(config.FINNHUB_API_KEY ? {} : { marketData: new SampleMarketDataProvider() }),
  });
  const context: CheckContext = { engine, config, client: clientFor(config, offline) };
  const results: CheckResult[] = [];
  try {
    for (const shape of SHAPES) {
      const { model } = productSettings(config, shape.product);
      const profile = modelProfile(model);
      let result: CheckResult;
      try {
        const { usage, note } = await shape.run(context);
        const costUsd = listPriceCost(profile, usage, config.AI_PROMPT_CACHE_TTL);
        result = {
          shape: shape.name,
          model,
          thinking: describeThinking(config, shape.product),
          usage,
          costUsd,
          ok: true,
          outcome: note ? `ok (${note})` : 'ok',
        };
      } catch (error) {
        const { text, usage } = describeFailure(error);
        const costUsd = listPriceCost(profile, usage, config.AI_PROMPT_CACHE_TTL);
        result = { shape: shape.name, model, thinking: describeThinking(config, shape.product), usage, costUsd, ok: false, outcome: text };
      }
      results.push(result);
      write(formatResult(result));
    }
  } finally {
    await engine.close();
  }
  const failed = results.filter((result) => !result.ok);
  const total = results.reduce((sum, result) => sum + result.costUsd, 0);
  write(
    failed.length === 0
      ? `all ${results.length} requests passed; $${total.toFixed(5)} at list prices`
      : `${failed.length} of ${results.length} requests failed (${failed.map((result) => result.shape).join(', ')}); $${total.toFixed(5)} at list prices`,
  );
  if (offline) write(`!!! ${STAND_IN_NOTICE} !!!`);
  return failed.length === 0 ? 0 : 1;
}
