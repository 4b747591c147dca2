// The organisation's model allowance, shared by every replica. The Messages API limits requests, input tokens and
// output tokens per minute, per model, for the whole organisation (platform.claude.com, "Rate limits"), and answers
// 429 beyond them. Each replica retrying its own 429s with no knowledge of the others collects them under load; here
// every model call first takes its share from buckets kept in Postgres, so that work waits in our queue instead.
// Interactive calls (a chat reply, a streamed analysis) may empty a bucket; queued jobs must leave `interactiveShare`
// of it in.
//
// The buckets are the API's own algorithm (the same page): "the token bucket algorithm ... capacity is continuously
// replenished up to your maximum limit", a bucket per limit that holds a minute's limit L and refills at L / 60 a
// second. A call is counted as the API counts it: one request; its input as estimated (uncached input and cache
// writes; cache reads do not count on current models), corrected at its end; its output reserved at `max_tokens`
// when it starts ("OTPM rate limits are estimated based on max_tokens at the beginning of each request, and the
// estimate is adjusted at the end of the request"), the unused part given back when it ends. Taking, giving back
// and refilling the same amounts as the API's buckets, at the same capacity and rate, ours never hold more than the
// API's once both were full (after a quiet minute): whatever ours admits, the API admits. (An earlier version kept
// fixed 30 s windows, half a bucket each, whose reservations at max_tokens held the output allowance to ~72 % in
// the capacity benchmark: a bucket holds twice what a window did.)
import type { Queryable } from '@fin/db';
import type { Logger } from '@fin/log';
import type { AiConfig } from './config';
import { modelBudgetWaitSeconds, modelBudgetWaiting } from '@fin/metrics';

/** An organisation's limits for one model, per minute. */
interface ModelLimits {
  requestsPerMinute: number;
  inputTokensPerMinute: number;
  outputTokensPerMinute: number;
}

/** Interactive calls (someone is reading the reply as it is written) go first; queued jobs use what is left. */
export type CallPriority = 'interactive' | 'queued';

/** What a call is expected to take. */
export interface CallDemand {
  model: string;
  /** Input tokens the call is expected to count (uncached input and cache writes). */
  inputTokens: number;
  /** The call's max_tokens: reserved until it ends. */
  outputTokens: number;
  priority: CallPriority;
  /**
   * Whose work the call is (a tenant id): the calls waiting in a process are served fairly between tenants, the
   * tenant with the fewest calls running in the process first (its oldest waiting call), so that one tenant's
   * hundreds of jobs waiting for the allowance delay another's next call by about one admission, not by all of
   * them. Calls without one share a single turn.
   */
  tenant?: string | undefined;
  signal?: AbortSignal | undefined;
}

/** A call's share, taken: settled with what the call really counted once it ended (undefined: nothing known). */
export interface BudgetGrant {
  settle(used: { inputTokens: number; outputTokens: number } | undefined): void;
}

export interface ModelBudget {
  /** Waits until the allowance of `demand.model` has room for the call, then takes its share. */
  take(demand: CallDemand): Promise<BudgetGrant>;
  /**
   * What the API said in answer to one HTTP attempt: its `anthropic-ratelimit-*-limit` headers (the organisation's
   * real limits, adopted when they differ from the configured ones) and a 429's `retry-after` (every replica waits).
   */
  observe(model: string, status: number, headers: Headers): void;
  /** Whether the budget limits `model`'s calls (limits configured or stated by the API): its 429s come back to it. */
  governs(model: string): boolean;
  close(): Promise<void>;
}

const NO_GRANT: BudgetGrant = { settle: () => undefined };

/** No shared allowance (none configured): calls go at once, and the API's 429s are retried by the SDK. */
export const UNLIMITED_MODEL_BUDGET: ModelBudget = {
  take: () => Promise.resolve(NO_GRANT),
  observe: () => undefined,
  governs: () => false,
  close: () => Promise.resolve(),
};

type Dimension = 'requests' | 'input' | 'output';
const DIMENSIONS: readonly Dimension[] = ['requests', 'input', 'output'];
const PER_MINUTE: Record<Dimension, keyof ModelLimits> = {
  requests: 'requestsPerMinute',
  input: 'inputTokensPerMinute',
  output: 'outputTokensPerMinute',
};
/** The API's headers of each limit (platform.claude.com, "Rate limits", response headers). */
const LIMIT_HEADERS: Record<Dimension, string> = {
  requests: 'anthropic-ratelimit-requests-limit',
  input: 'anthropic-ratelimit-input-tokens-limit',
  output: 'anthropic-ratelimit-output-tokens-limit',
};

export interface PostgresModelBudgetOptions {
  /** A pg Pool whose database has the `model_allowance` table. */
  pool: Queryable;
  logger: Logger;
  /** Configured limits per model id; a model without any goes unlimited until the API's headers name its limits. */
  limits: Readonly<Record<string, ModelLimits>>;
  /** The part of each bucket only interactive calls may take (default 0.2). */
  interactiveShare?: number;
  /** How long a waiting call sleeps at most before trying again (default 1 s; the time its share refills, if sooner). */
  maxSleepMs?: number;
}

interface Waiter {
  demand: CallDemand;
  since: number;
  resolve: (grant: BudgetGrant) => void;
  reject: (error: unknown) => void;
}

/** One model's limits and the calls of this process waiting for its allowance. */
interface ModelState {
  limits: ModelLimits;
  queues: Record<CallPriority, Waiter[]>;
  pumping: Record<CallPriority, boolean>;
}

/** A bucket's capacity (a minute's limit) and refill per second, per dimension, in the statements' parameter order. */
function bucketParameters(limits: ModelLimits): number[] {
  return DIMENSIONS.flatMap((dimension) => [limits[PER_MINUTE[dimension]], limits[PER_MINUTE[dimension]] / 60]);
}

// Each statement first refills every bucket of the model for the time since the last one (capped at its capacity).
// $2–$7: capacity and refill per second of requests, input and output.
const refilled = (column: string, capacity: string, perSecond: string) =>
  `LEAST(${capacity}::float8, ${column} + GREATEST(0, extract(epoch FROM now() - updated_at)) * ${perSecond}::float8)`;
const REFILLED = {
  requests: refilled('requests', '$2', '$3'),
  input: refilled('input', '$4', '$5'),
  output: refilled('output', '$6', '$7'),
};

/** A model's buckets, full, unless they exist. */
const CREATE_SQL = `INSERT INTO model_allowance (model, requests, input, output, updated_at)
  VALUES ($1, $2, $3, $4, now()) ON CONFLICT (model) DO NOTHING`;

// Takes $8–$10 (requests, input, output) when every bucket keeps at least $11 × its capacity after it (the
// interactive share, for a queued call), all or nothing, under the row's lock; returns the levels it saw.
const TAKE_SQL = `WITH current AS (
    SELECT model, ${REFILLED.requests} AS requests, ${REFILLED.input} AS input, ${REFILLED.output} AS output
      FROM model_allowance WHERE model = $1 FOR UPDATE),
  taken AS (
    UPDATE model_allowance m
       SET requests = c.requests - $8, input = c.input - $9, output = c.output - $10, updated_at = GREATEST(m.updated_at, now())
      FROM current c
     WHERE m.model = c.model AND c.requests - $8 >= $11 * $2 AND c.input - $9 >= $11 * $4 AND c.output - $10 >= $11 * $6
     RETURNING 1)
  SELECT c.requests, c.input, c.output, EXISTS (SELECT 1 FROM taken) AS taken FROM current c`;

// Gives back (or takes, when negative) $8–$10 after refilling, each bucket at most full.
const ADJUST_SQL = `UPDATE model_allowance SET
    requests = LEAST($2::float8, ${REFILLED.requests} + $8),
    input = LEAST($4::float8, ${REFILLED.input} + $9),
    output = LEAST($6::float8, ${REFILLED.output} + $10),
    updated_at = GREATEST(updated_at, now())
  WHERE model = $1`;

const abortError = (signal: AbortSignal): Error =>
  signal.reason instanceof Error ? signal.reason : new DOMException('This operation was aborted', 'AbortError');

/**
 * The allowance shared through Postgres. Each process keeps, per model and priority, one queue of waiting calls
 * served by one loop: it takes the next call's share from the model's buckets (one statement, all dimensions or
 * none), or sleeps until they will have refilled enough and tries again; room given back by a call that ends wakes
 * it at once. The next call is the oldest of the tenant with the fewest calls running in the process
 * (CallDemand.tenant). So a process asks the database about one call at a time per model and priority, however many
 * are waiting.
 */
export function createPostgresModelBudget({
  pool,
  logger,
  limits,
  interactiveShare = 0.2,
  maxSleepMs = 1_000,
}: PostgresModelBudgetOptions): ModelBudget {
  const log = logger.child({ component: 'model-budget' });
  const models = new Map<string, ModelState>();
  /** The models whose buckets this process has made sure exist. */
  const created = new Map<string, Promise<void>>();
  const stopping = new AbortController();
  const sleeps = new Set<{ timer: NodeJS.Timeout; wake: () => void }>();
  const warned = new Set<string>();
  /** Per model, no call before this time (a 429's retry-after, in this process). */
  const notBefore = new Map<string, number>();
  /** Calls running in this process per tenant (granted, not yet settled): the fair order's measure. */
  const running = new Map<string, number>();
  const tenantKey = (demand: CallDemand) => demand.tenant ?? '';
  const warnOnce = (key: string, fields: Record<string, unknown>, message: string) => {
    if (warned.has(key)) return;
    warned.add(key);
    log.warn(fields, message);
  };

  function stateFor(model: string, modelLimits: ModelLimits): ModelState {
    const previous = models.get(model);
    return {
      limits: modelLimits,
      queues: previous?.queues ?? { interactive: [], queued: [] },
      pumping: previous?.pumping ?? { interactive: false, queued: false },
    };
  }

  for (const [model, modelLimits] of Object.entries(limits)) models.set(model, stateFor(model, modelLimits));

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const entry = {
        timer: setTimeout(() => {
          sleeps.delete(entry);
          resolve();
        }, ms),
        wake: () => {
          clearTimeout(entry.timer);
          sleeps.delete(entry);
          resolve();
        },
      };
      sleeps.add(entry);
    });

  const wakeAll = () => {
    for (const entry of [...sleeps]) entry.wake();
  };

  /** The model's buckets exist (full when this makes them); once per process and model, again after a failure. */
  function ensureBuckets(model: string, modelLimits: ModelLimits): Promise<void> {
    let done = created.get(model);
    if (done === undefined) {
      done = pool
        .query({
          name: 'model-allowance-create',
          text: CREATE_SQL,
          values: [model, ...DIMENSIONS.map((dimension) => modelLimits[PER_MINUTE[dimension]])],
        })
        .then(() => undefined);
      done.catch(() => created.delete(model));
      created.set(model, done);
    }
    return done;
  }

  /** What a call takes of each dimension, each at most what the call's priority may take of a full bucket. */
  function amountsOf(limits: ModelLimits, demand: CallDemand): Record<Dimension, number> {
    const floor = demand.priority === 'queued' ? interactiveShare : 0;
    const wanted: Record<Dimension, number> = { requests: 1, input: demand.inputTokens, output: demand.outputTokens };
    return Object.fromEntries(
      DIMENSIONS.map((dimension) => [
        dimension,
        Math.max(0, Math.min(Math.ceil(wanted[dimension]), Math.floor(limits[PER_MINUTE[dimension]] * (1 - floor)))),
      ]),
    ) as Record<Dimension, number>;
  }

  /** Takes the call's share of every bucket, or none: undefined, or how long until they will have refilled enough. */
  async function tryTake(model: string, state: ModelState, demand: CallDemand): Promise<number | undefined> {
    const { limits: modelLimits } = state;
    const amounts = amountsOf(modelLimits, demand);
    const floor = demand.priority === 'queued' ? interactiveShare : 0;
    try {
      await ensureBuckets(model, modelLimits);
      const { rows } = await pool.query<{ requests: number; input: number; output: number; taken: boolean }>({
        name: 'model-allowance-take',
        text: TAKE_SQL,
        values: [model, ...bucketParameters(modelLimits), amounts.requests, amounts.input, amounts.output, floor],
      });
      const levels = rows[0];
      if (levels === undefined) {
        created.delete(model);
        return 50;
      }
      if (levels.taken) return undefined;
      // The longest any bucket takes to refill what the call needs above its floor.
      const waits = DIMENSIONS.map((dimension) => {
        const limit = modelLimits[PER_MINUTE[dimension]];
        const missing = amounts[dimension] + floor * limit - levels[dimension];
        return missing > 0 ? (missing / limit) * 60_000 : 0;
      });
      return Math.max(50, Math.ceil(Math.max(...waits)));
    } catch (error) {
      // The store failed: the call goes (fail open), as the gateway's limits do; the API's own 429s still hold.
      warnOnce('store', { err: error }, 'could not take from the shared model allowance (failing open: calls go)');
      return undefined;
    }
  }

  /** Gives back (positive) or takes (negative) amounts of the model's buckets, after refilling them. */
  function adjust(model: string, modelLimits: ModelLimits, change: Record<Dimension, number>): Promise<unknown> {
    return pool.query({
      name: 'model-allowance-adjust',
      text: ADJUST_SQL,
      values: [model, ...bucketParameters(modelLimits), change.requests, change.input, change.output],
    });
  }

  function settleFor(model: string, state: ModelState, demand: CallDemand): BudgetGrant {
    const amounts = amountsOf(state.limits, demand);
    const tenant = tenantKey(demand);
    running.set(tenant, (running.get(tenant) ?? 0) + 1);
    let settled = false;
    return {
      settle(used) {
        if (settled) return;
        settled = true;
        const left = (running.get(tenant) ?? 1) - 1;
        if (left > 0) running.set(tenant, left);
        else running.delete(tenant);
        if (used === undefined) return;
        // What the call took beyond or below its reservation, now, as the API's bucket does.
        const change: Record<Dimension, number> = {
          requests: 0,
          input: amounts.input - used.inputTokens,
          output: amounts.output - used.outputTokens,
        };
        if (change.input === 0 && change.output === 0) return;
        adjust(model, state.limits, change)
          // Room given back: the calls waiting in this process try again now, not at their next look.
          .then(() => (change.input > 0 || change.output > 0) && wakeAll())
          .catch(() => undefined);
      },
    };
  }

  /**
   * Where in `queue` (oldest first) the next call to admit is: the oldest of the tenant with the fewest calls
   * running in this process; an aborted call first, to be dropped. One pass over the queue.
   */
  function nextInFairOrder(queue: readonly Waiter[]): number {
    let best = 0;
    let bestRunning = Number.POSITIVE_INFINITY;
    for (let index = 0; index < queue.length; index += 1) {
      const { demand } = queue[index] as Waiter;
      if (demand.signal?.aborted === true) return index;
      const level = running.get(tenantKey(demand)) ?? 0;
      if (level < bestRunning) {
        best = index;
        bestRunning = level;
        if (level === 0) break;
      }
    }
    return best;
  }

  async function pump(model: string, stateOfModel: ModelState, priority: CallPriority): Promise<void> {
    const queue = stateOfModel.queues[priority];
    stateOfModel.pumping[priority] = true;
    try {
      while (queue.length > 0 && !stopping.signal.aborted) {
        const next = nextInFairOrder(queue);
        const waiter = queue[next] as Waiter;
        if (waiter.demand.signal?.aborted === true) {
          queue.splice(next, 1);
          waiter.reject(abortError(waiter.demand.signal));
          continue;
        }
        const held = (notBefore.get(model) ?? 0) - Date.now();
        if (held > 0) {
          await sleep(Math.min(held, maxSleepMs));
          continue;
        }
        const current = models.get(model) ?? stateOfModel;
        const wait = await tryTake(model, current, waiter.demand);
        if (wait === undefined) {
          // The queue may have changed while the statement ran (calls added, none removed but by this loop).
          queue.splice(queue.indexOf(waiter), 1);
          modelBudgetWaitSeconds.observe({ model, priority }, (Date.now() - waiter.since) / 1000);
          waiter.resolve(settleFor(model, current, waiter.demand));
          continue;
        }
        await sleep(Math.min(wait, maxSleepMs));
      }
    } finally {
      stateOfModel.pumping[priority] = false;
      modelBudgetWaiting.set({ model, priority }, queue.length);
      for (const waiter of queue.splice(0)) waiter.reject(new Error('The model budget is closed.'));
    }
  }

  return {
    take(demand) {
      const state = models.get(demand.model);
      if (state === undefined || stopping.signal.aborted) return Promise.resolve(NO_GRANT);
      if (demand.signal?.aborted === true) return Promise.reject(abortError(demand.signal));
      return new Promise<BudgetGrant>((resolve, reject) => {
        const queue = state.queues[demand.priority];
        queue.push({ demand, since: Date.now(), resolve, reject });
        modelBudgetWaiting.set({ model: demand.model, priority: demand.priority }, queue.length);
        if (!state.pumping[demand.priority]) void pump(demand.model, state, demand.priority);
      });
    },

    observe(model, status, headers) {
      if (status === 429) {
        // retry-after-ms first, as the SDK reads it (exact; a stand-in on a compressed clock sends it).
        const exactMs = Number(headers.get('retry-after-ms') ?? Number.NaN);
        const seconds = Number.isFinite(exactMs) && exactMs > 0 ? exactMs / 1000 : Number(headers.get('retry-after'));
        const known = models.get(model);
        if (known !== undefined && Number.isFinite(seconds) && seconds > 0) {
          // The API's bucket is short of what refills in `seconds`: ours give that much of each dimension up, which
          // every replica sees, and this process sends nothing for the model until then.
          const owed = Object.fromEntries(
            DIMENSIONS.map((dimension) => [dimension, -Math.ceil((known.limits[PER_MINUTE[dimension]] * seconds) / 60)]),
          ) as Record<Dimension, number>;
          adjust(model, known.limits, owed).catch(() => undefined);
          notBefore.set(model, Math.max(notBefore.get(model) ?? 0, Date.now() + seconds * 1000));
          log.warn({ model, retryAfterSeconds: seconds }, 'the model API answered 429: its retry-after is taken from the shared allowance');
        }
      }
      const stated = Object.fromEntries(
        DIMENSIONS.map((dimension) => [PER_MINUTE[dimension], Number(headers.get(LIMIT_HEADERS[dimension]) ?? Number.NaN)]),
      ) as unknown as ModelLimits;
      if (!DIMENSIONS.every((dimension) => Number.isFinite(stated[PER_MINUTE[dimension]]) && stated[PER_MINUTE[dimension]] > 0)) return;
      const known = models.get(model);
      if (known !== undefined && DIMENSIONS.every((dimension) => known.limits[PER_MINUTE[dimension]] === stated[PER_MINUTE[dimension]]))
        return;
      warnOnce(
        `limits:${model}:${JSON.stringify(stated)}`,
        { model, configured: known?.limits ?? null, stated },
        'the model API states other limits for this model than configured: using the API’s',
      );
      models.set(model, stateFor(model, stated));
    },

    governs(model) {
      return models.has(model);
    },

    async close() {
      stopping.abort();
      wakeAll();
      await Promise.resolve();
    },
  };
}

/**
 * The deployment's shared allowance from the AI configuration: AI_MODEL_LIMITS, and for models it does not list
 * the limits the API's headers state (until an answer states them, such a model's calls go at once).
 */
export function modelBudgetFromConfig(
  config: Pick<AiConfig, 'AI_MODEL_LIMITS' | 'AI_MODEL_BUDGET_INTERACTIVE_SHARE'>,
  { pool, logger }: { pool: Queryable; logger: Logger },
): ModelBudget {
  return createPostgresModelBudget({
    pool,
    logger,
    limits: config.AI_MODEL_LIMITS,
    interactiveShare: config.AI_MODEL_BUDGET_INTERACTIVE_SHARE,
  });
}
