import { bool, crossChecked, int, secret, url } from '@fin/config';
import { z } from 'zod';
import { modelProfile, settingProblem, THINKING_SETTINGS, type ThinkingSetting } from './model-settings';
import { EFFORT_LEVELS, type Effort } from './models';
import { DEFAULT_PRICES, PriceTable } from './prices';

/** Limits of one model, per minute (positive whole numbers; a missing one is unlimited). */
const ModelLimits = z.strictObject({
  requestsPerMinute: z.number().int().positive().optional(),
  inputTokensPerMinute: z.number().int().positive().optional(),
  outputTokensPerMinute: z.number().int().positive().optional(),
});
/** An organisation's limits for one model, per minute: all three (the API states all three). */
const OrganisationLimits = z.strictObject({
  requestsPerMinute: z.number().int().positive(),
  inputTokensPerMinute: z.number().int().positive(),
  outputTokensPerMinute: z.number().int().positive(),
});
const OfflineRateLimits = z.strictObject({
  models: z.record(z.string(), ModelLimits).optional(),
  allModels: ModelLimits.optional(),
});

function thinking() {
  return z.enum(THINKING_SETTINGS).default('off');
}

function effort() {
  return z.enum(EFFORT_LEVELS).optional();
}

/** The products, each with the variables that choose its model, thinking and effort. */
const PRODUCT_SETTINGS = [
  { model: 'AI_NEWS_MODEL', thinking: 'AI_NEWS_THINKING', effort: 'AI_NEWS_EFFORT' },
  { model: 'AI_MODEL', thinking: 'AI_STOCK_REPORT_THINKING', effort: 'AI_STOCK_REPORT_EFFORT' },
  { model: 'AI_MODEL', thinking: 'AI_ANALYSIS_THINKING', effort: 'AI_ANALYSIS_EFFORT' },
  { model: 'AI_MODEL', thinking: 'AI_CHAT_THINKING', effort: 'AI_CHAT_EFFORT' },
] as const;

/**
 * Every product's settings, checked against the model table at start: a setting the configured model refuses
 * is a start-up error naming the variable, not a 400 at the first request. (An id missing from the table runs
 * with the conservative profile, which the engine announces with a warning.)
 */
function checkModelSettings(config: Readonly<Record<string, unknown>>): { variable: string; message: string }[] {
  const issues = new Map<string, string>();
  for (const product of PRODUCT_SETTINGS) {
    const model = config[product.model] as string;
    const problem = settingProblem(
      modelProfile(model),
      config[product.thinking] as ThinkingSetting,
      config[product.effort] as Effort | undefined,
      config.AI_MAX_OUTPUT_TOKENS as number,
    );
    if (!problem) continue;
    const variable =
      problem.about === 'max_output_tokens'
        ? 'AI_MAX_OUTPUT_TOKENS'
        : problem.about === 'effort' && config[product.effort] !== undefined
          ? product.effort
          : product.thinking;
    issues.set(variable, `${problem.message} (${product.model}=${model})`);
  }
  return [...issues].map(([variable, message]) => ({ variable, message }));
}

/**
 * The AI engine's environment. Every process that runs the engine spreads this into its own config shape.
 *
 * With no ANTHROPIC_API_KEY the engine runs in offline mode (a local stand-in of the API with a deterministic
 * analyst and sample data), which is loudly labelled. AI_OFFLINE=true forces offline mode; setting it together
 * with a key is refused, so offline mode can never be switched on silently where a real key is configured.
 */
export const aiConfigShape = {
  ANTHROPIC_API_KEY: secret(z.string().min(10, 'is too short to be an Anthropic API key')).optional(),
  /** Only for tests and proxies: the SDK's default endpoint is used otherwise. */
  ANTHROPIC_BASE_URL: url(['http', 'https']).optional(),
  AI_OFFLINE: bool().default(false),
  /** The model of stock reports, analyses and chat (models.ts lists the ids the engine knows). */
  AI_MODEL: crossChecked(z.string().default('claude-sonnet-5-5'), checkModelSettings),
  /** The cheaper model used for news, where latency matters more than depth. */
  AI_NEWS_MODEL: z.string().default('claude-haiku-5-5'),
  /** Per model call; at most what each configured model writes (models.ts: 64K on Haiku 4.5, 128K on the 5.x models). */
  AI_MAX_OUTPUT_TOKENS: int(256, 128_000).default(8_192),
  /** Per model call; a streamed call's clock covers the whole stream. */
  AI_TIMEOUT_MS: int(1_000, 600_000).default(120_000),
  /** Retries of 429/529/5xx/connection errors inside one call, with the SDK's backoff and retry-after. */
  AI_MAX_RETRIES: int(0, 10).default(2),
  /** Caps of one tool loop. */
  AI_MAX_ROUNDS: int(1, 50).default(8),
  AI_MAX_TOOL_CALLS: int(1, 200).default(20),
  AI_MAX_TOTAL_TOKENS: int(1_000, 5_000_000).default(200_000),
  /**
   * Prompt caching (docs/ai.md#prompt-caching): breakpoints after the shared system prompt and at the end of the
   * conversation, so each call reads what the previous one wrote. Off sends no cache_control (for comparison).
   */
  AI_PROMPT_CACHE: bool().default(true),
  /** How long a written prefix lives: 5m (writes cost 1.25× input) or 1h (2×); each read renews it. */
  AI_PROMPT_CACHE_TTL: z.enum(['5m', '1h']).default('5m'),
  /**
   * Thinking per product (docs/ai.md#model-settings): off (the lowest setting the product's model accepts),
   * adaptive, or between_tools (Claude Sonnet 5.5); low, medium and high are adaptive thinking at that effort.
   * Thinking is billed as output tokens; off is the default for every product.
   */
  AI_NEWS_THINKING: thinking(),
  AI_STOCK_REPORT_THINKING: thinking(),
  AI_ANALYSIS_THINKING: thinking(),
  AI_CHAT_THINKING: thinking(),
  /** Effort per product (low … max); unset: the model's default (or low, where off is adaptive thinking). */
  AI_NEWS_EFFORT: effort(),
  AI_STOCK_REPORT_EFFORT: effort(),
  AI_ANALYSIS_EFFORT: effort(),
  AI_CHAT_EFFORT: effort(),
  /**
   * The model prices usage is billed at (JSON of PriceTable, prices.ts); Anthropic's list prices of the date
   * the default carries when unset.
   */
  AI_PRICES: z
    .string()
    .transform((text, ctx) => {
      try {
        return PriceTable.parse(JSON.parse(text));
      } catch {
        ctx.addIssue({
          code: 'custom',
          message: 'must be a JSON price table ({"as_of", "families": [{"pattern", "price"}], "web_search_per_thousand"})',
        });
        return z.NEVER;
      }
    })
    .default(DEFAULT_PRICES),
  /**
   * Offline mode only: the in-process stand-in answers at each model's pace (@fin/offline pace.ts: time to the
   * first token, then output tokens per second; docs/ai.md#pace-and-rate-limits) instead of at once.
   */
  AI_OFFLINE_PACE: bool().default(false),
  /**
   * Offline mode only: the organisation's rate limits the stand-in enforces per model, as JSON
   * ({"models": {"claude-sonnet-5-5": {"requestsPerMinute", "inputTokensPerMinute", "outputTokensPerMinute"}},
   * "allModels": {...}}), with the API's 429 and anthropic-ratelimit-* headers. Unset: unlimited.
   */
  AI_OFFLINE_RATE_LIMITS: z
    .string()
    .transform((text, ctx) => {
      try {
        return OfflineRateLimits.parse(JSON.parse(text));
      } catch {
        ctx.addIssue({
          code: 'custom',
          message:
            'must be JSON limits per model ({"models": {"<model id>": {"requestsPerMinute": 4000, "inputTokensPerMinute": 2000000, "outputTokensPerMinute": 400000}}, "allModels": {...}})',
        });
        return z.NEVER;
      }
    })
    .optional(),
  /** Offline mode only: the wall-clock length of one second of the stand-in's time (0.1: pace and limits ten times faster). */
  AI_OFFLINE_TIME_SCALE: z.coerce.number().positive().max(100).default(1),
  /**
   * The organisation's limits per model, shared by every replica (model-budget.ts), as JSON
   * ({"claude-sonnet-5-5": {"requestsPerMinute", "inputTokensPerMinute", "outputTokensPerMinute"}}): each model call
   * waits for its share. A model not listed takes the limits the API states in its anthropic-ratelimit-* headers
   * from its first answer on; the API's stated limits also replace configured ones that differ. Default: none
   * configured (learnt from the headers).
   */
  AI_MODEL_LIMITS: z
    .string()
    .transform((text, ctx) => {
      try {
        return z.record(z.string().min(1), OrganisationLimits).parse(JSON.parse(text));
      } catch {
        ctx.addIssue({
          code: 'custom',
          message:
            'must be JSON limits per model ({"<model id>": {"requestsPerMinute": 4000, "inputTokensPerMinute": 2000000, "outputTokensPerMinute": 400000}})',
        });
        return z.NEVER;
      }
    })
    .default({}),
  /** The part of each bucket of the shared model allowance that only interactive calls (chat, streamed analysis) may take. */
  AI_MODEL_BUDGET_INTERACTIVE_SHARE: z.coerce.number().min(0).max(0.9).default(0.2),
  AI_WEB_SEARCH: bool().default(true),
  AI_WEB_SEARCH_MAX_USES: int(1, 20).default(5),
  FINNHUB_API_KEY: secret(z.string().min(8, 'is too short to be a Finnhub API key')).optional(),
  FINNHUB_BASE_URL: url(['http', 'https']).default('https://finnhub.io/api/v1'),
};

export type AiConfig = z.output<z.ZodObject<typeof aiConfigShape>>;

export class OfflineModeConflictError extends Error {
  constructor() {
    super('AI_OFFLINE=true and ANTHROPIC_API_KEY are both set; unset one of them (offline mode never overrides a real key).');
    this.name = 'OfflineModeConflictError';
  }
}

/** Whether the engine runs offline; refuses the ambiguous combination. */
export function isOffline(config: Pick<AiConfig, 'ANTHROPIC_API_KEY' | 'AI_OFFLINE'>): boolean {
  if (config.AI_OFFLINE && config.ANTHROPIC_API_KEY) throw new OfflineModeConflictError();
  return config.AI_OFFLINE || !config.ANTHROPIC_API_KEY;
}
