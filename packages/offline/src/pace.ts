// How fast the stand-in model answers: per model, the time to its first token and the output tokens it writes per
// second. Off unless asked for (tests and offline `npm start` answer at once); a benchmark that measures capacity
// turns it on, so that a call takes as long as it would against the API, and may compress time with `timeScale`.
//
// Anthropic publishes no latency or throughput figures per model (the platform.claude.com model pages compare
// models only as "fastest", "fast", "moderate"; nothing in the documentation this project reads gives seconds or
// tokens per second). The defaults below are third-party measurements of the nearest models, read 2026-11-29:
//   Artificial Analysis, quoted at https://lattice.uptownhr.com/claude-opus-4-5/speed-analysis:
//     Sonnet 4.5: 63 output tokens/s, 1.80 s to the first token; Opus 4.1: 45 tokens/s, 2.67 s.
//   https://lattice.uptownhr.com/claude-code/haiku-vs-sonnet-performance: Claude 3.5 Haiku 0.36 s and 52.5 tokens/s
//     (third-party); Anthropic's announcement calls Haiku 4.5 "4-5x faster than Sonnet 4.5".
// The 5.x models are taken at their family's figures: Sonnet 1.8 s and 63 tokens/s, Opus 2.7 s and 45 tokens/s,
// Haiku 0.5 s and 120 tokens/s (between the measured 3.5 Haiku and the announced speed-up; an estimate). With
// them a news call (Haiku, ~400 output tokens) takes ~4 s, a stock report's answer (Sonnet, ~1,500) ~25 s and a
// chat reply (Sonnet, ~500) ~10 s, the figures issue 35 plans capacity with. Each is configurable per model id.
import { apiModel, API_MODELS } from './model-rules';
import { type SseEvent } from './wire';

export interface ModelPace {
  /** From the request's arrival to the first byte of the answer (a stream's headers and message_start). */
  timeToFirstTokenMs: number;
  /** Output tokens written per second after the first. */
  outputTokensPerSecond: number;
}

export interface PaceOptions {
  /** Per model id (aliases resolve to their model); a model without an entry takes its family's default. */
  models?: Readonly<Record<string, Partial<ModelPace>>>;
  /**
   * The wall-clock length of one second of model time (default 1). 0.1 answers ten times faster than the API;
   * rate limits given the same scale replenish ten times faster too, so a run keeps the API's proportions.
   */
  timeScale?: number;
}

const SONNET: ModelPace = { timeToFirstTokenMs: 1_800, outputTokensPerSecond: 63 };
const OPUS: ModelPace = { timeToFirstTokenMs: 2_700, outputTokensPerSecond: 45 };
const HAIKU: ModelPace = { timeToFirstTokenMs: 500, outputTokensPerSecond: 120 };

/** The family a model id belongs to, from its name: the pace of an id the table lacks is its family's. */
function familyPace(model: string): ModelPace {
  if (model.includes('haiku')) return HAIKU;
  if (model.includes('opus')) return OPUS;
  return SONNET;
}

/** The default pace of every model the stand-in serves (its table in model-rules.ts). */
export const DEFAULT_MODEL_PACE: Readonly<Record<string, ModelPace>> = Object.fromEntries(
  Object.keys(API_MODELS).map((model) => [model, familyPace(model)]),
);

/** The model id `id` stands for: itself, or the model it is an alias of. */
export function canonicalModel(id: string): string {
  const rules = apiModel(id);
  if (!rules || Object.hasOwn(API_MODELS, id)) return id;
  return Object.entries(API_MODELS).find(([, candidate]) => candidate === rules)?.[0] ?? id;
}

/** The delays of answering, in wall-clock milliseconds (the model's pace times the time scale). */
export interface Pacer {
  /** Before the first byte of the answer. */
  firstTokenMs(model: string): number;
  /** Writing `tokens` output tokens, after the first byte. */
  outputMs(model: string, tokens: number): number;
}

export function createPacer(options: PaceOptions = {}): Pacer {
  const scale = options.timeScale ?? 1;
  if (!(scale > 0)) throw new Error(`pace: timeScale must be a positive number, got ${scale}`);
  const paceOf = (model: string): ModelPace => {
    const id = canonicalModel(model);
    return { ...(DEFAULT_MODEL_PACE[id] ?? familyPace(id)), ...options.models?.[id], ...options.models?.[model] };
  };
  return {
    firstTokenMs: (model) => paceOf(model).timeToFirstTokenMs * scale,
    outputMs(model, tokens) {
      const perSecond = paceOf(model).outputTokensPerSecond;
      return perSecond > 0 ? (tokens / perSecond) * 1_000 * scale : 0;
    },
  };
}

/** The characters of output an event carries (its delta's text, JSON or thinking); 0 for every other event. */
function outputChars(event: SseEvent): number {
  if (event.event !== 'content_block_delta') return 0;
  const delta = (event.data as { delta?: Record<string, unknown> }).delta ?? {};
  const piece = delta.text ?? delta.partial_json ?? delta.thinking;
  return typeof piece === 'string' ? piece.length : 0;
}

/**
 * When each event of a streamed answer is due, in ms after the request arrived: message_start at the first token,
 * then each delta once the output before it has been written at the model's pace (the answer's output tokens
 * spread over its deltas by their length), and message_delta/message_stop with the last of it.
 */
export function eventSchedule(pacer: Pacer, model: string, events: readonly SseEvent[], outputTokens: number): number[] {
  const total = events.reduce((sum, event) => sum + outputChars(event), 0);
  const first = pacer.firstTokenMs(model);
  let written = 0;
  return events.map((event) => {
    written += outputChars(event);
    return first + pacer.outputMs(model, total > 0 ? (outputTokens * written) / total : 0);
  });
}
