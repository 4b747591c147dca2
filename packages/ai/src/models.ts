// The model table: for each Claude model the service can be configured with, what the Messages API accepts from
// it and what it costs, as Anthropic's documentation states it. Every request the engine sends is built from the
// row of its model (model-settings.ts); nothing else in the engine knows a model by name. Data only.
//
// Each row names the pages it was read from and the date it was read. Where a page did not state a rule, the row
// takes the stricter reading and says so (`unstated`), so that a request the engine builds is one the API accepts
// whichever way the rule turns out. docs/ai.md#the-model-table shows the table with its sources.

/** The `thinking.type` values of the Messages API. `disabled` and `between_tools` are "off" on the models that take them. */
export type ThinkingType = 'disabled' | 'enabled' | 'adaptive' | 'between_tools';

/** `output_config.effort` levels, lowest first. */
export const EFFORT_LEVELS = ['low', 'medium', 'high', 'xhigh', 'max'] as const;
export type Effort = (typeof EFFORT_LEVELS)[number];

/** USD per million tokens. Cache writes: a 5-minute or a 1-hour entry. */
interface TokenPrices {
  input: number;
  output: number;
  cacheWrite5m: number;
  cacheWrite1h: number;
  cacheRead: number;
}

/** Prices that apply to requests whose prompt (input + cache writes + cache reads) is at most `upToPromptTokens`. */
export interface PriceTier extends TokenPrices {
  /** Undefined: every larger prompt. */
  upToPromptTokens?: number;
}

export interface ModelProfile {
  /** The model id requests carry. */
  id: string;
  /** Other ids the API accepts for the same model (dated snapshots, aliases). */
  aliases: readonly string[];
  displayName: string;
  thinking: {
    /** The `thinking.type` values the API accepts for this model. */
    accepted: readonly ThinkingType[];
    /** What the model does when a request has no `thinking` field. */
    whenOmitted: 'adaptive' | 'off';
    /** The lowest setting the model accepts: what the engine sends for "off". */
    lowest: ThinkingType;
    /** Thinking types refused at some effort levels (e.g. between_tools at xhigh and max on Sonnet 5.5). */
    refusedAtEffort: Partial<Record<ThinkingType, readonly Effort[]>>;
  };
  /** The effort levels accepted, and the level that applies when none is sent; null: effort is refused. */
  effort: { accepted: readonly Effort[]; default: Effort } | null;
  /** Whether `tool_choice` `any`/`tool` is accepted at all (never with thinking on, on any model). */
  forcedToolChoice: boolean;
  /** Whether `temperature`, `top_p`, `top_k` are accepted. */
  samplingParameters: boolean;
  /** Whether a request may end with an assistant turn (prefill); never with thinking on. */
  assistantPrefill: boolean;
  maxOutputTokens: number;
  contextWindowTokens: number;
  /** Prompts shorter than this are neither written to nor read from the prompt cache. */
  minCacheablePromptTokens: number;
  /** Versions of the server-side web search tool the model takes, preferred first. */
  webSearchToolVersions: readonly string[];
  /** Tokens its tokenizer counts for a text, relative to the tokenizer of Claude Haiku 4.5 and Sonnet 4.6. */
  tokenizerRatio: number;
  /** Whether its thinking blocks are bound to the model and the conversation before them (checked by signature). */
  thinkingBlocksBound: boolean;
  /** Whether text written between tool calls comes back in thinking blocks rather than text blocks. */
  betweenToolTextAsThinking: boolean;
  /** Price tiers by prompt size, smallest first; one tier for a model priced the same at any size. */
  prices: readonly PriceTier[];
  /** USD per 1,000 web searches. */
  webSearchPerThousand: number;
  /** Where each fact was read, and when. */
  sources: { pages: readonly string[]; read: string };
  /** Facts the pages did not state, for which the row takes the stricter reading. */
  unstated: readonly string[];
}

const READ = '2026-11-29';
const DOCS = 'https://platform.claude.com/docs/en';
const ALL_EFFORT = EFFORT_LEVELS;
/** Not on any page read (web-search-tool's pricing section was not reachable); the long-standing list price. */
const WEB_SEARCH_PER_THOUSAND = 10;

const WEB_SEARCH_CURRENT = ['web_search_20250305', 'web_search_20260209', 'web_search_20260318'] as const;

export const MODELS: readonly ModelProfile[] = [
  {
    id: 'claude-sonnet-5-5',
    aliases: [],
    displayName: 'Claude Sonnet 5.5',
    // "send thinking: {"type": "between_tools"} instead of "disabled". This is the lowest thinking setting on the
    // model"; "between_tools is available at low, medium, and high effort. At xhigh or max effort, a request with
    // between_tools returns a 400 error."
    thinking: {
      accepted: ['adaptive', 'between_tools'],
      whenOmitted: 'adaptive',
      lowest: 'between_tools',
      refusedAtEffort: { between_tools: ['xhigh', 'max'] },
    },
    effort: { accepted: ALL_EFFORT, default: 'high' },
    // "five settings that return a 400 error: thinking budgets, sampling parameters, assistant prefill, forced tool
    // choice, and thinking: {"type": "disabled"}".
    forcedToolChoice: false,
    samplingParameters: false,
    assistantPrefill: false,
    maxOutputTokens: 128_000,
    contextWindowTokens: 1_000_000,
    minCacheablePromptTokens: 512,
    webSearchToolVersions: WEB_SEARCH_CURRENT,
    // "The tokenizer is the same as Claude Sonnet 5's" (about 30 % more tokens than Sonnet 4.6).
    tokenizerRatio: 1.3,
    thinkingBlocksBound: true,
    betweenToolTextAsThinking: true,
    // "the same prices as Claude Sonnet 5, except for prompt cache reads, which cost $0.10 USD per million tokens".
    prices: [{ input: 2, output: 10, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.1 }],
    webSearchPerThousand: WEB_SEARCH_PER_THOUSAND,
    sources: {
      pages: [
        `${DOCS}/models/sonnet-5-5/migration-guide`,
        `${DOCS}/models/sonnet-5-5/whats-new-sonnet-5-5`,
        `${DOCS}/models/sonnet-5-5/overview`,
        `${DOCS}/build-with-claude/preserved-thinking`,
        `${DOCS}/agents-and-tools/tool-use/web-search-tool`,
      ],
      read: READ,
    },
    unstated: ['minimum cacheable prompt (the prompt-caching table was not reachable; 512 as for Claude Opus 5)', 'web search price'],
  },
  {
    id: 'claude-opus-5-5',
    aliases: [],
    displayName: 'Claude Opus 5.5',
    // "Adaptive thinking is always on"; "thinking.type.disabled" and "thinking.type.enabled" are "not supported for
    // this model" at every effort: the lowest setting is adaptive thinking at effort low.
    thinking: { accepted: ['adaptive'], whenOmitted: 'adaptive', lowest: 'adaptive', refusedAtEffort: {} },
    effort: { accepted: ALL_EFFORT, default: 'medium' },
    forcedToolChoice: false,
    samplingParameters: false,
    assistantPrefill: false,
    maxOutputTokens: 128_000,
    contextWindowTokens: 1_000_000,
    minCacheablePromptTokens: 512,
    webSearchToolVersions: WEB_SEARCH_CURRENT,
    tokenizerRatio: 1.3,
    thinkingBlocksBound: true,
    betweenToolTextAsThinking: true,
    prices: [{ input: 4, output: 20, cacheWrite5m: 5, cacheWrite1h: 8, cacheRead: 0.2 }],
    webSearchPerThousand: WEB_SEARCH_PER_THOUSAND,
    sources: {
      pages: [`${DOCS}/models/opus-5-5/overview`, `${DOCS}/models/opus-5-5/whats-new-opus-5-5`, `${DOCS}/build-with-claude/effort`],
      read: READ,
    },
    unstated: [
      'sampling parameters and prefill (refused, as on every 5.5 model)',
      'minimum cacheable prompt (512, as for Claude Opus 5)',
      'web search price',
    ],
  },
  {
    id: 'claude-haiku-5-5',
    aliases: [],
    displayName: 'Claude Haiku 5.5',
    // "You can also turn thinking off with thinking: {"type": "disabled"}. This works only at low, medium, and high.
    // At xhigh and max, the request returns a 400 error." Manual extended thinking "returns an error".
    thinking: {
      accepted: ['adaptive', 'disabled'],
      whenOmitted: 'adaptive',
      lowest: 'disabled',
      refusedAtEffort: { disabled: ['xhigh', 'max'] },
    },
    effort: { accepted: ALL_EFFORT, default: 'medium' },
    // Forced tool use is not among Haiku 5.5's breaking changes; it is refused with thinking on, as on every model.
    forcedToolChoice: true,
    // "Non-default sampling parameters return an error"; "Assistant message prefill returns an error".
    samplingParameters: false,
    assistantPrefill: false,
    maxOutputTokens: 128_000,
    contextWindowTokens: 1_000_000,
    minCacheablePromptTokens: 512,
    webSearchToolVersions: WEB_SEARCH_CURRENT,
    // "the same text counts as approximately 30% more tokens than on Claude Haiku 4.5".
    tokenizerRatio: 1.3,
    thinkingBlocksBound: true,
    betweenToolTextAsThinking: false,
    // "$0.10 / MTok for prompts up to 100,000 tokens, $0.50 / MTok for prompts over 100,000 tokens"; long prompts
    // are "billed at higher rates" on every token of the request.
    prices: [
      { upToPromptTokens: 100_000, input: 0.1, output: 0.5, cacheWrite5m: 0.125, cacheWrite1h: 0.2, cacheRead: 0.01 },
      { input: 0.5, output: 2.5, cacheWrite5m: 0.625, cacheWrite1h: 1, cacheRead: 0.05 },
    ],
    webSearchPerThousand: WEB_SEARCH_PER_THOUSAND,
    sources: {
      pages: [
        `${DOCS}/models/haiku-5-5/overview`,
        `${DOCS}/models/haiku-5-5/whats-new-haiku-5-5`,
        `${DOCS}/build-with-claude/prompt-engineering/prompting-claude-haiku-5-5`,
      ],
      read: READ,
    },
    unstated: [
      'cache read price (0.1× input, as on every other model)',
      'minimum cacheable prompt (512, as for Claude Opus 5)',
      'forced tool choice without thinking',
      'web search price',
    ],
  },
  {
    id: 'claude-sonnet-5',
    aliases: [],
    displayName: 'Claude Sonnet 5',
    // "adaptive thinking is on by default and manual extended thinking ... returns a 400 error"; disabled at
    // xhigh/max is refused on Opus 5 and Haiku 5.5 and taken as refused here too.
    thinking: {
      accepted: ['adaptive', 'disabled'],
      whenOmitted: 'adaptive',
      lowest: 'disabled',
      refusedAtEffort: { disabled: ['xhigh', 'max'] },
    },
    effort: { accepted: ALL_EFFORT, default: 'high' },
    forcedToolChoice: true,
    // "sampling parameters (temperature, top_p, top_k) set to non-default values return a 400 error"; prefill
    // returns a 400 since Claude 4.6.
    samplingParameters: false,
    assistantPrefill: false,
    maxOutputTokens: 128_000,
    contextWindowTokens: 1_000_000,
    minCacheablePromptTokens: 1_024,
    webSearchToolVersions: WEB_SEARCH_CURRENT,
    tokenizerRatio: 1.3,
    thinkingBlocksBound: false,
    betweenToolTextAsThinking: false,
    prices: [{ input: 2, output: 10, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2 }],
    webSearchPerThousand: WEB_SEARCH_PER_THOUSAND,
    sources: { pages: [`${DOCS}/models/sonnet-5/overview`, `${DOCS}/models/sonnet-5/migration-guide`], read: READ },
    unstated: ['disabled at effort xhigh/max (refused, as on Opus 5 and Haiku 5.5)', 'minimum cacheable prompt', 'web search price'],
  },
  {
    id: 'claude-haiku-4-5',
    aliases: ['claude-haiku-4-5-20251001'],
    displayName: 'Claude Haiku 4.5',
    // "On Claude 4.5 and earlier models that support thinking, extended thinking is the only available thinking
    // mode"; without a thinking field it runs without thinking. Effort: "Not supported".
    thinking: { accepted: ['disabled', 'enabled'], whenOmitted: 'off', lowest: 'disabled', refusedAtEffort: {} },
    effort: null,
    forcedToolChoice: true,
    samplingParameters: true,
    assistantPrefill: true,
    maxOutputTokens: 64_000,
    contextWindowTokens: 200_000,
    minCacheablePromptTokens: 4_096,
    webSearchToolVersions: ['web_search_20250305'],
    tokenizerRatio: 1,
    thinkingBlocksBound: false,
    betweenToolTextAsThinking: false,
    prices: [{ input: 1, output: 5, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1 }],
    webSearchPerThousand: WEB_SEARCH_PER_THOUSAND,
    sources: {
      pages: [
        `${DOCS}/models/haiku-4-5/overview`,
        `${DOCS}/build-with-claude/thinking-troubleshooting`,
        `${DOCS}/models/overview`,
        `${DOCS}/build-with-claude/prompt-caching`,
      ],
      read: READ,
    },
    unstated: ['web search price'],
  },
];

/**
 * The profile a model id missing from the table runs with: the strictest row of each rule (no effort, no forced
 * tool choice, no sampling parameters, no prefill, the smallest limits), thinking left to the model's default by
 * omitting the field (which every model accepts), and the highest prices, so cost is never understated.
 */
export const CONSERVATIVE_PROFILE: Omit<ModelProfile, 'id'> = {
  aliases: [],
  displayName: 'an unknown model',
  thinking: { accepted: [], whenOmitted: 'adaptive', lowest: 'adaptive', refusedAtEffort: {} },
  effort: null,
  forcedToolChoice: false,
  samplingParameters: false,
  assistantPrefill: false,
  maxOutputTokens: 64_000,
  contextWindowTokens: 200_000,
  minCacheablePromptTokens: 4_096,
  webSearchToolVersions: ['web_search_20250305'],
  tokenizerRatio: 1.3,
  thinkingBlocksBound: true,
  betweenToolTextAsThinking: true,
  prices: [{ input: 4, output: 20, cacheWrite5m: 5, cacheWrite1h: 8, cacheRead: 0.5 }],
  webSearchPerThousand: WEB_SEARCH_PER_THOUSAND,
  sources: { pages: [], read: READ },
  unstated: ['everything: the id is not in the table'],
};
