// Requests built from the model table (models.ts): which profile a configured model id runs with, what a product's
// thinking setting becomes on that model, and which settings the model refuses (a start-up error naming the
// variable, never a 400 at the first request).
import type { ThinkingConfigParam } from '@anthropic-ai/sdk/resources/messages/messages';
import { CONSERVATIVE_PROFILE, EFFORT_LEVELS, MODELS, type Effort, type ModelProfile, type PriceTier, type ThinkingType } from './models';
import type { Usage } from './usage';

/**
 * How the model thinks on a product's runs (docs/ai.md#model-settings): `off` is the lowest setting the model
 * accepts (between_tools on Sonnet 5.5, disabled where the model takes it, adaptive at effort low on Opus 5.5);
 * `adaptive` lets the model decide; `between_tools` (Sonnet 5.5 only) thinks only between tool calls. The older
 * values `low`, `medium`, `high` mean adaptive thinking at that effort.
 */
export const THINKING_SETTINGS = ['off', 'adaptive', 'between_tools', 'low', 'medium', 'high'] as const;
export type ThinkingSetting = (typeof THINKING_SETTINGS)[number];

export interface ResolvedProfile extends ModelProfile {
  /** True when the id is not in the table and the conservative profile stands in for it. */
  unknown: boolean;
}

/** The table's row for `id` (or one of its aliases); the conservative profile, marked unknown, for any other id. */
export function modelProfile(id: string): ResolvedProfile {
  const row = MODELS.find((model) => model.id === id || model.aliases.includes(id));
  return row ? { ...row, unknown: false } : { ...CONSERVATIVE_PROFILE, id, unknown: true };
}

/** What one product's requests carry: the thinking field (absent: the model's default) and the effort. */
export interface RequestSettings {
  thinking?: ThinkingConfigParam;
  effort?: Effort;
}

function thinkingParam(type: ThinkingType): ThinkingConfigParam {
  // A budget is never sent: the engine's settings have none, and every model that takes `enabled` needs one, so
  // `enabled` is only ever an accepted type, never the lowest (models.ts).
  if (type === 'enabled') throw new Error('manual extended thinking (budget_tokens) is not a setting of the engine');
  return { type };
}

/**
 * The request settings of `setting` with `effort` on `profile`. Unchecked: `settingProblems` says whether the
 * model accepts them (config does at start).
 */
export function requestSettings(profile: ModelProfile, setting: ThinkingSetting, effort?: Effort): RequestSettings {
  const legacyEffort = setting === 'low' || setting === 'medium' || setting === 'high' ? setting : undefined;
  const type: ThinkingType | undefined =
    setting === 'off' ? profile.thinking.lowest : setting === 'between_tools' ? 'between_tools' : 'adaptive';
  const chosenEffort = effort ?? legacyEffort;
  // A model that takes no thinking setting we know of (an id missing from the table) gets no thinking field.
  const thinking = profile.thinking.accepted.length === 0 && setting === 'off' ? undefined : thinkingParam(type);
  // Off on a model whose lowest setting is adaptive thinking (Opus 5.5) is adaptive thinking at the lowest effort.
  const offEffort = setting === 'off' && type === 'adaptive' && profile.effort ? EFFORT_LEVELS[0] : undefined;
  const sent = chosenEffort ?? offEffort;
  return { ...(thinking ? { thinking } : {}), ...(sent ? { effort: sent } : {}) };
}

/** A setting the model refuses: which one (the thinking type, the effort, the output limit) and why, naming the fix. */
export interface SettingProblem {
  about: 'thinking' | 'effort' | 'max_output_tokens';
  message: string;
}

/** Why `profile` refuses these settings; undefined when it accepts them. */
export function settingProblem(
  profile: ResolvedProfile,
  setting: ThinkingSetting,
  effort: Effort | undefined,
  maxOutputTokens: number,
): SettingProblem | undefined {
  const { thinking, effort: sentEffort } = requestSettings(profile, setting, effort);
  const name = `${profile.displayName} (${profile.id})`;
  if (thinking && !profile.thinking.accepted.includes(thinking.type)) {
    const accepted = profile.thinking.accepted.length > 0 ? profile.thinking.accepted.join(', ') : 'no thinking setting the engine knows';
    const fix = profile.unknown ? 'use off, or add the model to packages/ai/src/models.ts' : 'use off';
    return { about: 'thinking', message: `${name} does not take thinking "${thinking.type}" (it takes ${accepted}); ${fix}` };
  }
  if (sentEffort !== undefined) {
    if (!profile.effort) return { about: 'effort', message: `${name} takes no effort setting; leave it unset` };
    if (!profile.effort.accepted.includes(sentEffort)) {
      return { about: 'effort', message: `${name} takes effort ${profile.effort.accepted.join(', ')}, not ${sentEffort}` };
    }
    const refused = thinking ? profile.thinking.refusedAtEffort[thinking.type] : undefined;
    if (thinking && refused?.includes(sentEffort)) {
      const highest = profile.effort.accepted.filter((level) => !refused.includes(level)).at(-1) ?? 'a lower one';
      return {
        about: 'effort',
        message: `${name} refuses thinking "${thinking.type}" at effort ${sentEffort}; use effort ${highest} or below, or thinking adaptive`,
      };
    }
  }
  if (maxOutputTokens > profile.maxOutputTokens) {
    return {
      about: 'max_output_tokens',
      message: `${name} writes at most ${profile.maxOutputTokens} output tokens; lower AI_MAX_OUTPUT_TOKENS (${maxOutputTokens})`,
    };
  }
  return undefined;
}

/** The price tier of a request whose prompt (input, cache writes and cache reads) has `promptTokens` tokens. */
export function priceTier(profile: ModelProfile, promptTokens: number): PriceTier {
  const tier = profile.prices.find((candidate) => candidate.upToPromptTokens === undefined || promptTokens <= candidate.upToPromptTokens);
  const last = profile.prices.at(-1);
  if (tier === undefined && last === undefined) throw new Error(`the model table has no prices for ${profile.id}`);
  return (tier ?? last) as PriceTier;
}

/**
 * What `usage` costs in USD at the model table's list prices for `profile`: uncached input, cache writes (5-minute
 * or 1-hour) and cache reads, output and web searches. The price tier is chosen by the average prompt of its
 * model calls (usage sums them; every call of a small request falls in the same tier).
 */
export function listPriceCost(profile: ModelProfile, usage: Usage, cacheTtl: '5m' | '1h' = '5m'): number {
  const promptTokens = usage.inputTokens + usage.cacheCreationInputTokens + usage.cacheReadInputTokens;
  const tier = priceTier(profile, promptTokens / Math.max(1, usage.modelCalls));
  const cacheWrite = cacheTtl === '1h' ? tier.cacheWrite1h : tier.cacheWrite5m;
  const tokens =
    tier.input * usage.inputTokens +
    cacheWrite * usage.cacheCreationInputTokens +
    tier.cacheRead * usage.cacheReadInputTokens +
    tier.output * usage.outputTokens;
  return tokens / 1_000_000 + (usage.webSearches / 1_000) * profile.webSearchPerThousand;
}
