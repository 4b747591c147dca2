import type { Message } from '@anthropic-ai/sdk/resources/messages/messages';
import type { Usage } from '@fin/contracts';

export { addUsage, NO_USAGE, totalInputTokens, type Usage } from '@fin/contracts';

/**
 * Calls made for a message before the one that answered it: attempts the SDK retried after they timed out or lost
 * their connection (the model may have run them, so they count as calls; their tokens were never reported).
 */
const callsBefore = new WeakMap<Pick<Message, 'usage'>, number>();

/** Notes that `calls` earlier attempts preceded `message` (see usageOfMessage). */
export function noteCallsBefore(message: Pick<Message, 'usage'>, calls: number): void {
  if (calls > 0) callsBefore.set(message, calls);
}

/** One call's usage as the API reported it, with the calls the SDK retried before it (noteCallsBefore). */
export function usageOfMessage(message: Pick<Message, 'usage'>): Usage {
  const { usage } = message;
  return {
    modelCalls: 1 + (callsBefore.get(message) ?? 0),
    inputTokens: usage.input_tokens,
    cacheCreationInputTokens: usage.cache_creation_input_tokens ?? 0,
    cacheReadInputTokens: usage.cache_read_input_tokens ?? 0,
    outputTokens: usage.output_tokens,
    webSearches: usage.server_tool_use?.web_search_requests ?? 0,
  };
}
