// What the Messages API refuses, model by model, as Anthropic documents it (read 2026-11-29): the stand-in for
// the API (offline mode, and the test fakes) answers every request exactly as the real API would, status, error
// type and a message that points at the fix. Written from the documentation page by page, not from the engine's
// model table (packages/ai/src/models.ts): the two are separate readings, and a test checks that every request
// the engine builds from its table passes these rules. Where a page words an error, the message is its words;
// where it says only that the API "returns a 400", the message is written in the API's style.
//
// Pages (https://platform.claude.com/docs/en/…):
//   models/sonnet-5-5/migration-guide, models/sonnet-5-5/whats-new-sonnet-5-5   (Sonnet 5.5)
//   models/opus-5-5/whats-new-opus-5-5, models/opus-5-5/overview                (Opus 5.5)
//   models/haiku-5-5/whats-new-haiku-5-5, build-with-claude/prompt-engineering/prompting-claude-haiku-5-5
//   models/sonnet-5/migration-guide, models/haiku-4-5/overview, build-with-claude/thinking-troubleshooting
//   build-with-claude/effort, build-with-claude/preserved-thinking, agents-and-tools/tool-use/web-search-tool
import { type MessagesRequestBody } from './wire-types';

type ThinkingType = 'disabled' | 'enabled' | 'adaptive' | 'between_tools';
type Effort = 'low' | 'medium' | 'high' | 'xhigh' | 'max';

export interface ApiModelRules {
  /** Other ids the API answers to for this model. */
  aliases: readonly string[];
  thinking: readonly ThinkingType[];
  /** Whether the model thinks when a request has no `thinking` field. */
  thinksWhenOmitted: boolean;
  /** Thinking types the model refuses at these efforts. */
  refusedAtEffort: Partial<Record<ThinkingType, readonly Effort[]>>;
  /** null: `output_config.effort` is refused. */
  effort: readonly Effort[] | null;
  /** Whether `tool_choice` any/tool is accepted at all (with thinking on it never is). */
  forcedToolChoice: boolean;
  /** refused: any temperature/top_p/top_k; non_default: all but temperature 1; accepted. */
  sampling: 'refused' | 'non_default' | 'accepted';
  prefill: boolean;
  maxOutputTokens: number;
  contextWindow: number;
  minCacheableTokens: number;
  webSearchVersions: readonly string[];
  /** Tokens per token of the older tokenizer (Haiku 4.5, Sonnet 4.6) for the same text. */
  tokenizerRatio: number;
  /** Whether thinking blocks are bound to the conversation before them (a changed prefix is a 400). */
  boundThinking: boolean;
  /** Whether text the model writes between tool calls comes back in thinking blocks. */
  betweenToolTextAsThinking: boolean;
}

const ALL: readonly Effort[] = ['low', 'medium', 'high', 'xhigh', 'max'];
const WEB_SEARCH = ['web_search_20250305', 'web_search_20260209', 'web_search_20260318'] as const;

export const API_MODELS: Readonly<Record<string, ApiModelRules>> = {
  // "five settings that return a 400 error: thinking budgets, sampling parameters, assistant prefill, forced tool
  // choice, and thinking: {"type": "disabled"}"; "At xhigh or max effort, a request with between_tools returns a
  // 400 error"; 1M context, 128K output; thinking blocks "tied to the model and the conversation".
  'claude-sonnet-5-5': {
    aliases: [],
    thinking: ['adaptive', 'between_tools'],
    thinksWhenOmitted: true,
    refusedAtEffort: { between_tools: ['xhigh', 'max'] },
    effort: ALL,
    forcedToolChoice: false,
    sampling: 'refused',
    prefill: false,
    maxOutputTokens: 128_000,
    contextWindow: 1_000_000,
    minCacheableTokens: 512,
    webSearchVersions: WEB_SEARCH,
    tokenizerRatio: 1.3,
    boundThinking: true,
    betweenToolTextAsThinking: true,
  },
  // "Adaptive thinking is always on"; disabled and enabled are "not supported for this model"; forced tool use
  // "returns an error".
  'claude-opus-5-5': {
    aliases: [],
    thinking: ['adaptive'],
    thinksWhenOmitted: true,
    refusedAtEffort: {},
    effort: ALL,
    forcedToolChoice: false,
    sampling: 'refused',
    prefill: false,
    maxOutputTokens: 128_000,
    contextWindow: 1_000_000,
    minCacheableTokens: 512,
    webSearchVersions: WEB_SEARCH,
    tokenizerRatio: 1.3,
    boundThinking: true,
    betweenToolTextAsThinking: true,
  },
  // disabled "works only at low, medium, and high. At xhigh and max, the request returns a 400 error"; manual
  // extended thinking, non-default sampling parameters and prefill "return an error".
  'claude-haiku-5-5': {
    aliases: [],
    thinking: ['adaptive', 'disabled'],
    thinksWhenOmitted: true,
    refusedAtEffort: { disabled: ['xhigh', 'max'] },
    effort: ALL,
    forcedToolChoice: true,
    sampling: 'non_default',
    prefill: false,
    maxOutputTokens: 128_000,
    contextWindow: 1_000_000,
    minCacheableTokens: 512,
    webSearchVersions: WEB_SEARCH,
    tokenizerRatio: 1.3,
    boundThinking: true,
    betweenToolTextAsThinking: false,
  },
  // Adaptive thinking on by default, manual extended thinking "returns a 400 error", non-default sampling
  // parameters "return a 400 error"; prefill returns a 400 since Claude 4.6.
  'claude-sonnet-5': {
    aliases: [],
    thinking: ['adaptive', 'disabled'],
    thinksWhenOmitted: true,
    refusedAtEffort: { disabled: ['xhigh', 'max'] },
    effort: ALL,
    forcedToolChoice: true,
    sampling: 'non_default',
    prefill: false,
    maxOutputTokens: 128_000,
    contextWindow: 1_000_000,
    minCacheableTokens: 1_024,
    webSearchVersions: WEB_SEARCH,
    tokenizerRatio: 1.3,
    boundThinking: false,
    betweenToolTextAsThinking: false,
  },
  // Extended thinking (budget) is its only thinking mode, off when omitted; effort "Not supported"; 200K / 64K;
  // web search without dynamic filtering (which needs Claude 4.6 or later).
  'claude-haiku-4-5': {
    aliases: ['claude-haiku-4-5-20251001'],
    thinking: ['disabled', 'enabled'],
    thinksWhenOmitted: false,
    refusedAtEffort: {},
    effort: null,
    forcedToolChoice: true,
    sampling: 'accepted',
    prefill: true,
    maxOutputTokens: 64_000,
    contextWindow: 200_000,
    minCacheableTokens: 4_096,
    webSearchVersions: ['web_search_20250305'],
    tokenizerRatio: 1,
    boundThinking: false,
    betweenToolTextAsThinking: false,
  },
};

/** The rules of a model id (or alias) the API serves; undefined for an id it does not. */
export function apiModel(id: string): ApiModelRules | undefined {
  const direct = Object.hasOwn(API_MODELS, id) ? API_MODELS[id] : undefined;
  return direct ?? Object.values(API_MODELS).find((rules) => rules.aliases.includes(id));
}

/** Prompt tokens below which nothing is cached (the longest minimum, 4,096, for an id the table lacks). */
export function minimumCacheableTokens(model: string): number {
  return apiModel(model)?.minCacheableTokens ?? 4_096;
}

/** Tokens the model's tokenizer counts for text that the older tokenizer counts as `tokens`. */
export function modelTokens(model: string, tokens: number): number {
  const ratio = apiModel(model)?.tokenizerRatio ?? 1;
  return ratio === 1 ? tokens : Math.round(tokens * ratio);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The thinking type a request runs with: the one it sends, or the model's default when it sends none. */
export function effectiveThinking(body: MessagesRequestBody, rules: ApiModelRules): ThinkingType | 'default_on' | 'default_off' {
  const thinking = isRecord(body.thinking) ? body.thinking.type : undefined;
  if (typeof thinking === 'string') return thinking as ThinkingType;
  return rules.thinksWhenOmitted ? 'default_on' : 'default_off';
}

/** Whether the model thinks before answering on this request (forced tool use and prefill are refused then). */
function thinksUpFront(body: MessagesRequestBody, rules: ApiModelRules): boolean {
  const thinking = effectiveThinking(body, rules);
  return thinking === 'adaptive' || thinking === 'enabled' || thinking === 'default_on';
}

export interface RuleRejection {
  type: 'invalid_request_error' | 'not_found_error';
  message: string;
}

const quoteList = (values: readonly string[]) => values.map((value) => `"${value}"`).join(', ');

/** The first documented rule of its model that `body` breaks, in the API's words; undefined when it keeps them all. */
export function checkModelRules(body: MessagesRequestBody, { countTokens = false } = {}): RuleRejection | undefined {
  const rules = apiModel(body.model);
  if (!rules) return { type: 'not_found_error', message: `model: ${body.model}` };
  const invalid = (message: string): RuleRejection => ({ type: 'invalid_request_error', message });

  if (!countTokens && body.max_tokens > rules.maxOutputTokens) {
    return invalid(
      `max_tokens: ${body.max_tokens} > ${rules.maxOutputTokens}, which is the maximum allowed number of output tokens for ${body.model}`,
    );
  }

  const thinking = isRecord(body.thinking) ? body.thinking : undefined;
  if (body.thinking !== undefined && !thinking) return invalid('thinking: Input should be a valid dictionary');
  const type = thinking?.type;
  if (thinking) {
    if (!['disabled', 'enabled', 'adaptive', 'between_tools'].includes(String(type))) {
      return invalid(
        `thinking.type: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive', 'between_tools'`,
      );
    }
    if (!rules.thinking.includes(type as ThinkingType)) {
      const off = rules.thinking.includes('between_tools')
        ? ' To turn off up-front thinking, use "thinking.type.between_tools".'
        : rules.thinking.includes('disabled')
          ? ' To turn thinking off, use "thinking.type.disabled".'
          : '';
      const control = rules.thinking.includes('adaptive')
        ? ' Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.'
        : '';
      return invalid(
        `"thinking.type.${String(type)}" is not supported for this model.${control}${off} Accepted values: ${quoteList(rules.thinking)}.`,
      );
    }
    if (type === 'enabled') {
      const budget = thinking.budget_tokens;
      if (!Number.isInteger(budget) || (budget as number) < 1024)
        return invalid('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
      if (!countTokens && (budget as number) >= body.max_tokens)
        return invalid('`max_tokens` must be greater than `thinking.budget_tokens`.');
    }
    const display = thinking.display;
    if (display !== undefined && display !== null && display !== 'summarized' && display !== 'omitted') {
      return invalid("thinking.display: Input should be 'summarized' or 'omitted'");
    }
    if (type === 'between_tools' || type === 'disabled') {
      if (display !== undefined) return invalid(`thinking.${type}.display: Extra inputs are not permitted`);
    }
  }

  const config = isRecord(body.output_config) ? body.output_config : undefined;
  const sentEffort = config?.effort;
  if (sentEffort !== undefined && sentEffort !== null) {
    if (!ALL.includes(sentEffort as Effort))
      return invalid("output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'");
    const effort = sentEffort as Effort;
    if (!rules.effort) return invalid('output_config.effort: effort is not supported for this model. Remove output_config.effort.');
    if (!rules.effort.includes(effort)) {
      return invalid(`output_config.effort '${effort}' is not supported for this model. Supported values: ${quoteList(rules.effort)}.`);
    }
    const refused = typeof type === 'string' ? rules.refusedAtEffort[type as ThinkingType] : undefined;
    if (refused?.includes(effort)) {
      return invalid(
        `output_config.effort '${effort}' is not supported when thinking.type is "${String(type)}" on this model. Use effort 'high' or below, or use "thinking.type.adaptive".`,
      );
    }
  }

  for (const parameter of ['temperature', 'top_p', 'top_k'] as const) {
    const value = body[parameter];
    if (value === undefined || value === null) continue;
    if (rules.sampling === 'refused' || (rules.sampling === 'non_default' && !(parameter === 'temperature' && value === 1))) {
      return invalid(`\`${parameter}\` is deprecated for this model.`);
    }
  }

  // An assistant turn last is prefill, unless it is a paused server-tool turn sent back to go on with it
  // (stop_reason pause_turn: "Send the assistant content back to continue", handling-stop-reasons).
  const last = body.messages.at(-1);
  const paused =
    Array.isArray(last?.content) &&
    last.content.some((block) => block.type === 'server_tool_use' || block.type === 'web_search_tool_result');
  if (last?.role === 'assistant' && !paused) {
    if (!rules.prefill)
      return invalid('This model does not support assistant message prefill. The conversation must end with a user message.');
    if (thinksUpFront(body, rules))
      return invalid(
        'Prefilling the assistant message is not supported when thinking is enabled. The conversation must end with a user message.',
      );
  }

  const choice = isRecord(body.tool_choice) ? body.tool_choice.type : undefined;
  if (choice === 'any' || choice === 'tool') {
    if (!rules.forcedToolChoice) {
      return invalid(
        `tool_choice: "${choice}" (forced tool use) is not supported for this model. Use tool_choice "auto" or "none", and say in the prompt which tool to use.`,
      );
    }
    if (thinksUpFront(body, rules)) return invalid('Thinking may not be enabled when tool_choice forces tool use.');
  }

  for (const [index, tool] of (body.tools ?? []).entries()) {
    const toolType = tool.type;
    if (typeof toolType !== 'string' || !toolType.startsWith('web_search')) continue;
    if (!(WEB_SEARCH as readonly string[]).includes(toolType)) {
      return invalid(
        `tools.${index}: Input tag '${toolType}' found using 'type' does not match any of the expected tags: 'custom', ${WEB_SEARCH.map((version) => `'${version}'`).join(', ')}`,
      );
    }
    if (!rules.webSearchVersions.includes(toolType)) {
      return invalid(`tools.${index}.type: '${toolType}' is not supported on ${body.model}. Use ${quoteList(rules.webSearchVersions)}.`);
    }
    const maxUses = tool.max_uses;
    if (maxUses !== undefined && (!Number.isInteger(maxUses) || (maxUses as number) < 1)) {
      return invalid(`tools.${index}.${toolType}.max_uses: Input should be greater than or equal to 1`);
    }
  }
  return undefined;
}
