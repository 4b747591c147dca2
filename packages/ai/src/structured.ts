import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import type { JSONOutputFormat, MessageParam } from '@anthropic-ai/sdk/resources/messages/messages';
import { type z } from 'zod';
import { AiError, withSpentUsage } from './errors';
import { runToolLoop, type LoopParams, type LoopResult, type Usage } from './loop';
import { constantPart } from './request-body';
import { addUsage } from './usage';

export interface StructuredParams<S extends z.ZodType> extends Omit<LoopParams, 'outputFormat'> {
  schema: S;
  /**
   * Whether the API's structured output (`output_config.format`) constrains the answer. Off for schemas the
   * API's strict subset cannot express (free-form objects): the prompt then asks for JSON, and validation
   * and the repair round still apply.
   */
  constrained?: boolean;
  /**
   * The `max_tokens` of the repair round after an answer cut off at `maxOutputTokens` (the answer is written again
   * whole, so it needs more room than it had); `maxOutputTokens` when absent.
   */
  roomOnCutOff?: number;
}

export interface StructuredResult<T> {
  value: T;
  usage: Usage;
  groundingUrls: Set<string>;
  documents: LoopResult['documents'];
  /** True when the first answer failed validation and the repair round fixed it. */
  repaired: boolean;
  loop: LoopResult;
}

/** Converted once per schema: a product's schema is the same for every job, and so is its output format. */
const outputFormats = new WeakMap<z.ZodType, JSONOutputFormat>();

/**
 * The JSON Schema (in the API's strict subset) that constrains the answer to `schema`: shared, and a constant part
 * of every request that sends it (request-body.ts), so it is never modified.
 */
export function outputFormatFor(schema: z.ZodType): JSONOutputFormat {
  let format = outputFormats.get(schema);
  if (format === undefined) {
    const { type, schema: jsonSchema } = zodOutputFormat(schema);
    format = constantPart({ type, schema: jsonSchema });
    outputFormats.set(schema, format);
  }
  return format;
}

type Check<T> = { ok: true; value: T } | { ok: false; problems: string };

function check<S extends z.ZodType>(schema: S, text: string): Check<z.output<S>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(stripFences(text));
  } catch {
    return { ok: false, problems: 'the answer is not valid JSON' };
  }
  const result = schema.safeParse(parsed);
  if (result.success) return { ok: true, value: result.data };
  const problems = result.error.issues
    .slice(0, 10)
    .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
  return { ok: false, problems };
}

/** What is wrong with `text` as an answer that must satisfy `schema`; undefined when it does. */
export function answerProblems(schema: z.ZodType, text: string): string | undefined {
  const result = check(schema, text);
  return result.ok ? undefined : result.problems;
}

/** The user turn of the repair round: what was wrong with the answer before it, and the request for the corrected JSON. */
export function repairTurn(problems: string): MessageParam {
  return {
    role: 'user',
    content: `Your previous answer cannot be used: ${problems}. Reply again with only the corrected JSON object that satisfies the required schema, and nothing else.`,
  };
}

/** Models sometimes wrap JSON in a Markdown fence even when told not to. */
function stripFences(text: string): string {
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n\s*```\s*$/.exec(text);
  return fenced?.[1] ?? text.trim();
}

/**
 * A zod schema in, a validated object out. The model may use tools first; its final answer must satisfy the
 * schema. If it does not, one repair round shows the model its problems and asks for the corrected JSON;
 * if that fails too, an AiError of kind `invalid_output` is thrown. A truncated answer (max_tokens) counts
 * as invalid.
 */
export async function generateStructured<S extends z.ZodType>(params: StructuredParams<S>): Promise<StructuredResult<z.output<S>>> {
  const { schema, constrained = true, roomOnCutOff, ...loopParams } = params;
  const outputFormat = constrained ? outputFormatFor(schema) : undefined;
  const first = await runToolLoop({ ...loopParams, outputFormat });
  const firstCheck = check(schema, first.text);
  if (firstCheck.ok && first.stopReason !== 'max_tokens') {
    return {
      value: firstCheck.value,
      usage: first.usage,
      groundingUrls: first.groundingUrls,
      documents: first.documents,
      repaired: false,
      loop: first,
    };
  }
  const problems =
    first.stopReason === 'max_tokens' ? 'the answer was cut off before it was complete' : firstCheck.ok ? '' : firstCheck.problems;

  // The same tools and web search as the run (a request whose messages hold tool_use/tool_result blocks must
  // define tools, and the same tools keep the cached prefix), with tool_choice none: the model must answer.
  let repair: LoopResult;
  try {
    repair = await runToolLoop({
      ...loopParams,
      outputFormat,
      toolChoice: 'none',
      maxOutputTokens:
        first.stopReason === 'max_tokens' ? Math.max(loopParams.maxOutputTokens, roomOnCutOff ?? 0) : loopParams.maxOutputTokens,
      // The same tools as the run's last call sent, so the conversation it wrote is read back.
      webSearch: loopParams.webSearch && { ...loopParams.webSearch, maxUses: first.webSearchMaxUses ?? loopParams.webSearch.maxUses },
      caps: { ...loopParams.caps, maxRounds: 1 },
      // A cut-off answer is asked again from before it, with more room (the stop-reasons guide: "Raise max_tokens";
      // https://platform.claude.com/docs/build-with-claude/handling-stop-reasons): the cut-off turn may end in an
      // incomplete tool_use, which no tool_result could follow. Any other answer is shown with its problems.
      messages: first.stopReason === 'max_tokens' ? first.messages.slice(0, -1) : [...first.messages, repairTurn(problems)],
    });
  } catch (error) {
    throw withSpentUsage(error, first.usage);
  }
  const usage = addUsage(first.usage, repair.usage);
  const secondCheck = check(schema, repair.text);
  if (secondCheck.ok && repair.stopReason !== 'max_tokens') {
    return {
      value: secondCheck.value,
      usage,
      groundingUrls: first.groundingUrls,
      documents: first.documents,
      repaired: true,
      loop: repair,
    };
  }
  throw withSpentUsage(
    new AiError(
      'invalid_output',
      `The model's answer did not match the expected structure after a repair round (${secondCheck.ok ? 'cut off' : secondCheck.problems}).`,
    ),
    usage,
  );
}
