import type { Message } from '@anthropic-ai/sdk/resources/messages/messages';

/**
 * What a run cost, in the units the API bills: model calls, the three kinds of input (uncached, written to the
 * prompt cache, read from it), output and web searches. Summed over every call of a run, failed ones included.
 */
export interface Usage {
  modelCalls: number;
  inputTokens: number;
  cacheCreationInputTokens: number;
  cacheReadInputTokens: number;
  outputTokens: number;
  webSearches: number;
}

export const NO_USAGE: Readonly<Usage> = Object.freeze({
  modelCalls: 0,
  inputTokens: 0,
  cacheCreationInputTokens: 0,
  cacheReadInputTokens: 0,
  outputTokens: 0,
  webSearches: 0,
});

export function addUsage(a: Readonly<Usage>, b: Readonly<Usage>): Usage {
  return {
    modelCalls: a.modelCalls + b.modelCalls,
    inputTokens: a.inputTokens + b.inputTokens,
    cacheCreationInputTokens: a.cacheCreationInputTokens + b.cacheCreationInputTokens,
    cacheReadInputTokens: a.cacheReadInputTokens + b.cacheReadInputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    webSearches: a.webSearches + b.webSearches,
  };
}

/** One call's usage as the API reported it. */
export function usageOfMessage({ usage }: Pick<Message, 'usage'>): Usage {
  return {
    modelCalls: 1,
    inputTokens: usage.input_tokens,
    cacheCreationInputTokens: usage.cache_creation_input_tokens ?? 0,
    cacheReadInputTokens: usage.cache_read_input_tokens ?? 0,
    outputTokens: usage.output_tokens,
    webSearches: usage.server_tool_use?.web_search_requests ?? 0,
  };
}

/** Every token the model read: uncached input, cache writes and cache reads (what a token cap must count). */
export function totalInputTokens(usage: Readonly<Usage>): number {
  return usage.inputTokens + usage.cacheCreationInputTokens + usage.cacheReadInputTokens;
}
