// The organisation's rate limits as the Messages API enforces them, for the stand-in (offline mode, the test
// fakes): per model, requests, input tokens and output tokens per minute, each a token bucket. Off unless limits
// are given (tests and offline `npm start` are never limited). What Anthropic documents, and how it is modelled
// (https://platform.claude.com/docs/en/api/rate-limits, also served as https://docs.anthropic.com/en/api/rate-limits;
// read 2026-11-29):
//
// - "limits on how much an organization can use": requests per minute (RPM), input tokens per minute (ITPM) and
//   output tokens per minute (OTPM); exceeding any gives "a 429 error describing which rate limit was exceeded,
//   along with a retry-after header indicating how long to wait".
// - "Rate limits are applied separately for each model": one set of buckets per model id (an alias is its
//   model). The real API pools some model classes (the Opus 4.x ids share one limit); configure them as one id.
// - The API uses the token bucket algorithm: capacity "is continuously replenished up to your maximum limit,
//   rather than being reset at fixed intervals". A bucket holds one minute's limit, starts full and refills at
//   limit/60 per second; a request is admitted when every bucket holds what it needs.
// - "ITPM rate limits are estimated at the beginning of each request, and the estimate is adjusted during the
//   request to reflect the actual number of input tokens used. The final adjustment counts input_tokens and
//   cache_creation_input_tokens towards ITPM rate limits, while cache_read_input_tokens are not". The stand-in
//   knows a request's billing before it answers (prompt-cache.ts quotes it without writing), so its estimate is
//   already the final count. ("In some instances" older models marked † on the page count cache reads; none of
//   the models the stand-in serves is one.)
// - "OTPM rate limits are estimated based on max_tokens at the beginning of each request, and the estimate is
//   adjusted at the end of the request to reflect the actual number of output tokens used": max_tokens is taken
//   at admission and what was not written is given back when the answer ends.
// - Response headers, on every response: retry-after ("The number of seconds to wait until you can retry the
//   request. Earlier retries will fail."), anthropic-ratelimit-requests-{limit,remaining,reset},
//   anthropic-ratelimit-{input-tokens,output-tokens,tokens}-{limit,remaining,reset}. Token counts remaining are
//   "rounded to the nearest thousand"; a reset is "the time when the rate limit will be fully replenished,
//   provided in RFC 3339 format". The tokens-* headers "display the values for the most restrictive limit
//   currently in effect": here the one of input and output with the smaller share left.
// - The 429 body is the API's error body with type rate_limit_error; its message is worded as the API words it
//   (as quoted in public bug reports: "This request would exceed the rate limit for your organization (<id>) of
//   40,000 input tokens per minute. For details, refer to: …").
//
// Not modelled: workspace limits, the separate limits of count_tokens and the Batches API, long-context limits,
// acceleration limits on sharp increases of usage. A request larger than a whole minute's limit is refused until
// the bucket is full, and then again: the API gives no way through for it either.
import { type Rejection } from './validation';

export interface ModelLimits {
  requestsPerMinute?: number;
  inputTokensPerMinute?: number;
  outputTokensPerMinute?: number;
}

export interface RateLimitOptions {
  /** Per model id (an alias counts against its model). */
  models?: Readonly<Record<string, ModelLimits>>;
  /** Every model without an entry in `models` (each model still has buckets of its own). */
  allModels?: ModelLimits;
  /**
   * The wall-clock length of one second of model time (default 1): at 0.1 the buckets refill ten times faster,
   * to go with a pace compressed by the same factor. retry-after then also comes as `retry-after-ms`, exact (the
   * SDK reads it first), since whole seconds would be ten times too coarse. The anthropic-ratelimit-*-limit and
   * -remaining headers then state wall-clock equivalents (÷ timeScale: what a wall-clock minute allows), because
   * their reader (the shared model budget) counts per wall-clock minute; the 429's message keeps the model-time
   * limit, as configured.
   */
  timeScale?: number;
  /** The clock in ms (default Date.now); a test moves it to watch the buckets refill. */
  now?: () => number;
  /** The organisation named in 429 messages. */
  organizationId?: string;
}

/** What a request costs at admission: cache-aware input tokens, and its max_tokens as the output estimate. */
export interface RequestCost {
  inputTokens: number;
  maxTokens: number;
}

export type Admission =
  | {
      admitted: true;
      /** The anthropic-ratelimit-* headers after this request was counted (empty when the model is unlimited). */
      headers: Record<string, string>;
      /** At the end of the answer: gives back the output tokens estimated but not written. Once; later calls do nothing. */
      settle: (outputTokens: number) => void;
    }
  | { admitted: false; rejection: Rejection; headers: Record<string, string> };

type Dimension = 'requests' | 'input-tokens' | 'output-tokens';

const DIMENSIONS: readonly { name: Dimension; option: keyof ModelLimits; unit: string }[] = [
  { name: 'requests', option: 'requestsPerMinute', unit: 'requests' },
  { name: 'input-tokens', option: 'inputTokensPerMinute', unit: 'input tokens' },
  { name: 'output-tokens', option: 'outputTokensPerMinute', unit: 'output tokens' },
];

const DEFAULT_ORGANIZATION_ID = '4f6b3c2e-8d1a-4e5f-9a7b-0c1d2e3f4a5b';

/** A bucket of one minute's limit that refills continuously. */
class Bucket {
  private level: number;
  private updatedAt: number;

  constructor(
    readonly limit: number,
    private readonly perMs: number,
    now: number,
  ) {
    this.level = limit;
    this.updatedAt = now;
  }

  available(now: number): number {
    this.level = Math.min(this.limit, this.level + (now - this.updatedAt) * this.perMs);
    this.updatedAt = now;
    return this.level;
  }

  /** How long until the bucket holds `amount` (capped at a full bucket, the most it can ever hold). */
  waitMs(amount: number, now: number): number {
    const missing = Math.min(amount, this.limit) - this.available(now);
    return missing > 0 ? missing / this.perMs : 0;
  }

  take(amount: number): void {
    this.level -= amount;
  }

  giveBack(amount: number, now: number): void {
    this.available(now);
    this.level = Math.min(this.limit, this.level + amount);
  }

  /** When the bucket will be full again. */
  fullAt(now: number): number {
    return now + (this.limit - this.available(now)) / this.perMs;
  }
}

type Buckets = Partial<Record<Dimension, Bucket>>;

/** RFC 3339, to the second, rounded up: a client that waits until then is not early. */
function rfc3339(ms: number): string {
  return new Date(Math.ceil(ms / 1_000) * 1_000).toISOString().replace('.000Z', 'Z');
}

function roundedToThousand(tokens: number): number {
  return Math.round(tokens / 1_000) * 1_000;
}

function limitMessage(organizationId: string, limit: number, unit: string): string {
  return (
    `This request would exceed the rate limit for your organization (${organizationId}) of ${limit.toLocaleString('en-US')} ${unit} per minute. ` +
    'For details, refer to: https://docs.anthropic.com/en/api/rate-limits. You can see the response headers for current usage. ' +
    'Please reduce the prompt length or the maximum tokens requested, or try again later. ' +
    'You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase.'
  );
}

/** The organisation's limits, per model. */
export interface RateLimiter {
  /** Counts a request against its model's buckets, or refuses it with the API's 429. */
  admit(model: string, cost: RequestCost): Admission;
  /** Refills every bucket (a test's or a benchmark's fresh start). */
  reset(): void;
}

function isLimited(limits: ModelLimits | undefined): limits is ModelLimits {
  return limits !== undefined && DIMENSIONS.some(({ option }) => limits[option] !== undefined);
}

/** The organisation's limits; undefined when none is configured, so that callers skip them entirely. */
export function createRateLimiter(
  options: RateLimitOptions = {},
  canonical: (model: string) => string = (model) => model,
): RateLimiter | undefined {
  const configured = isLimited(options.allModels) || Object.values(options.models ?? {}).some(isLimited);
  if (!configured) return undefined;
  const scale = options.timeScale ?? 1;
  if (!(scale > 0)) throw new Error(`rate limits: timeScale must be a positive number, got ${scale}`);
  for (const [model, limits] of Object.entries({ ...options.models, '(all models)': options.allModels ?? {} })) {
    for (const { option } of DIMENSIONS) {
      const value = limits[option];
      if (value !== undefined && !(value > 0))
        throw new Error(`rate limits: ${option} of ${model} must be a positive number, got ${value}`);
    }
  }
  const now = options.now ?? Date.now;
  const organizationId = options.organizationId ?? DEFAULT_ORGANIZATION_ID;
  const minuteMs = 60_000 * scale;
  const byModel = new Map<string, Buckets>();

  const bucketsOf = (model: string, at: number): Buckets => {
    let buckets = byModel.get(model);
    if (!buckets) {
      const limits = options.models?.[model] ?? options.allModels ?? {};
      buckets = {};
      for (const { name, option } of DIMENSIONS) {
        const limit = limits[option];
        if (limit !== undefined) buckets[name] = new Bucket(limit, limit / minuteMs, at);
      }
      byModel.set(model, buckets);
    }
    return buckets;
  };

  // Per wall-clock minute, as a reader on the wall clock counts them (a bucket refills limit ÷ scale of them).
  const wallClock = (tokens: number) => tokens / scale;
  const headersOf = (buckets: Buckets, at: number): Record<string, string> => {
    const headers: Record<string, string> = {};
    let tightest: { bucket: Bucket; share: number } | undefined;
    for (const { name } of DIMENSIONS) {
      const bucket = buckets[name];
      if (!bucket) continue;
      const left = Math.max(0, bucket.available(at));
      headers[`anthropic-ratelimit-${name}-limit`] = String(Math.round(wallClock(bucket.limit)));
      headers[`anthropic-ratelimit-${name}-remaining`] = String(
        name === 'requests' ? Math.floor(wallClock(left)) : roundedToThousand(wallClock(left)),
      );
      headers[`anthropic-ratelimit-${name}-reset`] = rfc3339(bucket.fullAt(at));
      const share = left / bucket.limit;
      if (name !== 'requests' && (!tightest || share < tightest.share)) tightest = { bucket, share };
    }
    if (tightest) {
      headers['anthropic-ratelimit-tokens-limit'] = String(Math.round(wallClock(tightest.bucket.limit)));
      headers['anthropic-ratelimit-tokens-remaining'] = String(roundedToThousand(wallClock(Math.max(0, tightest.bucket.available(at)))));
      headers['anthropic-ratelimit-tokens-reset'] = rfc3339(tightest.bucket.fullAt(at));
    }
    return headers;
  };

  return {
    admit(model, cost) {
      const id = canonical(model);
      const at = now();
      const buckets = bucketsOf(id, at);
      const needs: Record<Dimension, number> = { requests: 1, 'input-tokens': cost.inputTokens, 'output-tokens': cost.maxTokens };
      let waitMs = 0;
      let exceeded: (typeof DIMENSIONS)[number] | undefined;
      for (const dimension of DIMENSIONS) {
        const wait = buckets[dimension.name]?.waitMs(needs[dimension.name], at) ?? 0;
        // A request larger than the whole bucket never fits: it still waits for a full bucket, as retry-after says.
        const tooLarge = (buckets[dimension.name]?.limit ?? Infinity) < needs[dimension.name];
        if (wait > 0 || tooLarge) {
          exceeded ??= dimension;
          waitMs = Math.max(waitMs, wait);
        }
      }
      if (exceeded) {
        const bucket = buckets[exceeded.name] as Bucket;
        const headers = headersOf(buckets, at);
        headers['retry-after'] = String(Math.max(1, Math.ceil(waitMs / 1_000)));
        if (scale !== 1) headers['retry-after-ms'] = String(Math.max(1, Math.ceil(waitMs)));
        return {
          admitted: false,
          rejection: { type: 'rate_limit_error', message: limitMessage(organizationId, bucket.limit, exceeded.unit) },
          headers,
        };
      }
      for (const { name } of DIMENSIONS) buckets[name]?.take(needs[name]);
      let settled = false;
      return {
        admitted: true,
        headers: headersOf(buckets, at),
        settle(outputTokens) {
          if (settled) return;
          settled = true;
          const unused = cost.maxTokens - outputTokens;
          if (unused > 0) buckets['output-tokens']?.giveBack(unused, now());
        },
      };
    },
    reset() {
      byModel.clear();
    },
  };
}
