import type { Message } from '@anthropic-ai/sdk/resources/messages/messages';
import type { Usage } from '@fin/contracts';

export { addUsage, NO_USAGE, totalInputTokens, type Usage } from '@fin/contracts';

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
