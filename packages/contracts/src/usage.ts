// What a run of the model cost, in the units the Messages API bills: inside the system (Usage, camelCase, summed
// by the engine and the job runners) and on the wire (JobUsage: a result's meta.usage, webhook deliveries, the chat
// `done` event, the portal's usage report).
import { z } from 'zod';

/**
 * Model calls, the three kinds of input (uncached, written to the prompt cache, read from it), output and web
 * searches, summed over every call of a run, failed ones included.
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

/** Every token the model read: uncached input, cache writes and cache reads (what a token cap must count). */
export function totalInputTokens(usage: Readonly<Usage>): number {
  return usage.inputTokens + usage.cacheCreationInputTokens + usage.cacheReadInputTokens;
}

/** Every token billed: all input and the output (what the daily token budget counts). */
export function billedTokens(usage: Readonly<Usage>): number {
  return totalInputTokens(usage) + usage.outputTokens;
}

const count = (description: string) => z.int().min(0).meta({ description });

const USAGE_FIELDS = {
  model_calls: count('Calls made to the model (each round of research, a repair of its output, the citation pass).'),
  input_tokens: count('Input tokens billed at the full input price (not read from or written to the prompt cache).'),
  cache_creation_input_tokens: count(
    'Input tokens written to the prompt cache (billed at 1.25× the input price, or 2× for a 1-hour entry).',
  ),
  cache_read_input_tokens: count('Input tokens read from the prompt cache (billed at 0.1× the input price).'),
  output_tokens: count('Output tokens (the answer, and the reasoning where thinking is on).'),
  web_searches: count('Web searches the model made.'),
};

/** The six counters on the wire. */
export const UsageCounts = z.object(USAGE_FIELDS).meta({
  id: 'UsageCounts',
  description: 'Model calls, tokens by kind and web searches, in the units the model provider bills.',
});
export type UsageCounts = z.infer<typeof UsageCounts>;

export const JobUsage = z
  .object({
    ...USAGE_FIELDS,
    failed_attempts: z
      .object({ attempts: z.int().min(1).meta({ description: 'Attempts that failed.' }), ...USAGE_FIELDS })
      .optional()
      .meta({
        description:
          'The part of the totals spent by attempts that failed (a model outage, an invalid answer), when any did: a failed attempt is billed too, and the job was retried.',
      }),
  })
  .meta({
    id: 'JobUsage',
    description:
      "What producing this answer cost, over every attempt: the totals include the failed attempts' share, which `failed_attempts` names. A result served from the cache carries the usage of the run that produced it; serving it spent nothing.",
    examples: [
      {
        model_calls: 3,
        input_tokens: 2140,
        cache_creation_input_tokens: 1650,
        cache_read_input_tokens: 3300,
        output_tokens: 910,
        web_searches: 2,
      },
    ],
  });
export type JobUsage = z.infer<typeof JobUsage>;

export function usageCounts(usage: Readonly<Usage>): UsageCounts {
  return {
    model_calls: usage.modelCalls,
    input_tokens: usage.inputTokens,
    cache_creation_input_tokens: usage.cacheCreationInputTokens,
    cache_read_input_tokens: usage.cacheReadInputTokens,
    output_tokens: usage.outputTokens,
    web_searches: usage.webSearches,
  };
}

export function usageOfCounts(counts: Readonly<UsageCounts>): Usage {
  return {
    modelCalls: counts.model_calls,
    inputTokens: counts.input_tokens,
    cacheCreationInputTokens: counts.cache_creation_input_tokens,
    cacheReadInputTokens: counts.cache_read_input_tokens,
    outputTokens: counts.output_tokens,
    webSearches: counts.web_searches,
  };
}

/**
 * A job's usage after one more attempt: `attempt` added to the totals, and to `failed_attempts` when the attempt
 * failed (whether or not the job is retried). `before` is what the job's earlier attempts recorded (null: none).
 */
export function addAttemptUsage(before: JobUsage | null, attempt: Readonly<Usage>, failed: boolean): JobUsage {
  const total = usageCounts(before ? addUsage(usageOfCounts(before), attempt) : attempt);
  const earlier = before?.failed_attempts;
  if (!failed) return earlier ? { ...total, failed_attempts: earlier } : total;
  const failedSoFar = earlier ? addUsage(usageOfCounts(earlier), attempt) : attempt;
  return { ...total, failed_attempts: { attempts: (earlier?.attempts ?? 0) + 1, ...usageCounts(failedSoFar) } };
}
