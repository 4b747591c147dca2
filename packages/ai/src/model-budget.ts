// The organisation's model allowance, shared by every replica. The Messages API limits requests, input tokens and
// output tokens per minute, per model, for the whole organisation (platform.claude.com, "Rate limits"), and answers
// 429 beyond them. Each replica retrying its own 429s with no knowledge of the others collects them under load; here
// every model call first takes its share from windows kept in Postgres (rate-limiter-flexible's Postgres store), so
// that work waits in our queue instead. Interactive calls (a chat reply, a streamed analysis) may use the whole
// allowance; queued jobs only what leaves `interactiveShare` of it free.
//
// How a call is counted mirrors the API's own accounting (the same page): a request is one request; its input is
// what the call did not read from the cache (cache reads do not count towards the input limit on current models);
// its output is reserved at `max_tokens` when it starts and the unused part given back when it ends. The API's
// limiter is a token bucket that holds a minute's limit L and refills continuously; ours are fixed windows of W
// (`windowMs`, 30 s), each allowing a = L × W / 60 s. Any stretch of T seconds then holds at most L × T / 60 + 2a of
// our calls (its whole windows and parts of two more), which a bucket that holds L admits while 2a ≤ L: W ≤ 30 s.
// So 30 s is the longest window that never takes more than the API would admit, and the one that lets the most
// calls start together.
import type { Logger } from '@fin/log';
import type { AiConfig } from './config';
import { modelBudgetWaitSeconds, modelBudgetWaiting } from '@fin/metrics';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';

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
  /** A pg Pool (rate-limiter-flexible's storeClient) whose database has the `model_budget` table. */
  pool: unknown;
  logger: Logger;
  /** Configured limits per model id; a model without any goes unlimited until the API's headers name its limits. */
  limits: Readonly<Record<string, ModelLimits>>;
  /** The window length (default 30 s, the longest the API's bucket always admits): each allows limit × windowMs / 60 s. */
  windowMs?: number;
  /** The part of each window only interactive calls may take (default 0.2). */
  interactiveShare?: number;
  /** How long a waiting call sleeps at most before trying again (default 1 s; the window's end, if sooner). */
  maxSleepMs?: number;
}

interface Waiter {
  demand: CallDemand;
  since: number;
  resolve: (grant: BudgetGrant) => void;
  reject: (error: unknown) => void;
}

/** One model's windows: a limiter per dimension and priority (both priorities count in the same rows). */
interface ModelWindows {
  limits: ModelLimits;
  limiters: Record<CallPriority, Record<Dimension, RateLimiterPostgres>>;
  /** Most a single call may take of each dimension: a whole window (else a large call could never start). */
  capacity: Record<Dimension, number>;
  queues: Record<CallPriority, Waiter[]>;
  pumping: Record<CallPriority, boolean>;
}

const abortError = (signal: AbortSignal): Error =>
  signal.reason instanceof Error ? signal.reason : new DOMException('This operation was aborted', 'AbortError');

/**
 * The allowance shared through Postgres. Each process keeps, per model and priority, one queue of waiting calls
 * served by one loop: it takes the next call's share (requests, then input, then output; a refusal gives back what
 * was taken), or sleeps until the window ends and tries again. The next call is the oldest of the tenant with the
 * fewest calls running in the process (CallDemand.tenant). So a process asks the database about one call at a time
 * per model and priority, however many are waiting.
 */
export function createPostgresModelBudget({
  pool,
  logger,
  limits,
  windowMs = 30_000,
  interactiveShare = 0.2,
  maxSleepMs = 1_000,
}: PostgresModelBudgetOptions): ModelBudget {
  const log = logger.child({ component: 'model-budget' });
  const windows = new Map<string, ModelWindows>();
  /** Per model, no call before this time (a 429's retry-after, in this process). */
  const notBefore = new Map<string, number>();
  /** Calls running in this process per tenant (granted, not yet settled): the fair order's measure. */
  const running = new Map<string, number>();
  const tenantKey = (demand: CallDemand) => demand.tenant ?? '';
  const stopping = new AbortController();
  const sleeps = new Set<{ timer: NodeJS.Timeout; wake: () => void }>();
  const warned = new Set<string>();
  const warnOnce = (key: string, fields: Record<string, unknown>, message: string) => {
    if (warned.has(key)) return;
    warned.add(key);
    log.warn(fields, message);
  };

  function windowsFor(model: string, modelLimits: ModelLimits): ModelWindows {
    const perWindow = (dimension: Dimension) => Math.max(1, Math.floor((modelLimits[PER_MINUTE[dimension]] * windowMs) / 60_000));
    const limiter = (dimension: Dimension, share: number) =>
      new RateLimiterPostgres({
        storeClient: pool,
        tableName: 'model_budget',
        tableCreated: true,
        keyPrefix: `${model}:${dimension}`,
        points: Math.max(1, Math.floor(perWindow(dimension) * share)),
        duration: windowMs / 1000,
      });
    const byDimension = (share: number) =>
      Object.fromEntries(DIMENSIONS.map((dimension) => [dimension, limiter(dimension, share)])) as Record<Dimension, RateLimiterPostgres>;
    const previous = windows.get(model);
    return {
      limits: modelLimits,
      limiters: { interactive: byDimension(1), queued: byDimension(1 - interactiveShare) },
      capacity: Object.fromEntries(DIMENSIONS.map((dimension) => [dimension, perWindow(dimension)])) as Record<Dimension, number>,
      queues: previous?.queues ?? { interactive: [], queued: [] },
      pumping: previous?.pumping ?? { interactive: false, queued: false },
    };
  }

  for (const [model, modelLimits] of Object.entries(limits)) windows.set(model, windowsFor(model, modelLimits));

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

  /** Points of each dimension a call takes, each at most a whole window. */
  function pointsOf(model: ModelWindows, demand: CallDemand): Record<Dimension, number> {
    const wanted: Record<Dimension, number> = { requests: 1, input: demand.inputTokens, output: demand.outputTokens };
    return Object.fromEntries(
      DIMENSIONS.map((dimension) => [dimension, Math.max(0, Math.min(Math.ceil(wanted[dimension]), model.capacity[dimension]))]),
    ) as Record<Dimension, number>;
  }

  /** Takes every dimension's points, or none: undefined, or the wait before the refusing window ends. */
  async function tryTake(model: ModelWindows, key: string, demand: CallDemand): Promise<number | undefined> {
    const limiters = model.limiters[demand.priority];
    const points = pointsOf(model, demand);
    const taken: Dimension[] = [];
    try {
      for (const dimension of DIMENSIONS) {
        if (points[dimension] === 0) continue;
        await limiters[dimension].consume(key, points[dimension]);
        taken.push(dimension);
      }
      return undefined;
    } catch (refusal) {
      // The refused dimension counted the points too (the store adds, then compares): all of it goes back.
      const refused =
        refusal instanceof RateLimiterRes ? DIMENSIONS.find((dimension) => !taken.includes(dimension) && points[dimension] > 0) : undefined;
      const giveBack = refused === undefined ? taken : [...taken, refused];
      await Promise.all(giveBack.map((dimension) => limiters[dimension].reward(key, points[dimension]).catch(() => undefined)));
      if (refusal instanceof RateLimiterRes) return Math.max(50, refusal.msBeforeNext);
      // The store failed: the call goes (fail open), as the gateway's limits do; the API's own 429s still hold.
      warnOnce('store', { err: refusal }, 'could not take from the shared model allowance (failing open: calls go)');
      return undefined;
    }
  }

  function settleFor(model: ModelWindows, key: string, demand: CallDemand): BudgetGrant {
    const limiters = model.limiters[demand.priority];
    const points = pointsOf(model, demand);
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
        // What the call took beyond or below its reservation, in the window of now, as the API's bucket does.
        const corrections: [Dimension, number][] = [
          ['input', points.input - Math.min(used.inputTokens, model.capacity.input)],
          ['output', points.output - Math.min(used.outputTokens, model.capacity.output)],
        ];
        for (const [dimension, surplus] of corrections) {
          if (surplus === 0) continue;
          const change = surplus > 0 ? limiters[dimension].reward(key, surplus) : limiters[dimension].penalty(key, -surplus);
          // Room given back: the calls waiting in this process try again now, not at their next look.
          change.then(() => surplus > 0 && wakeAll()).catch(() => undefined);
        }
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

  async function pump(model: string, windowsOfModel: ModelWindows, priority: CallPriority): Promise<void> {
    const queue = windowsOfModel.queues[priority];
    windowsOfModel.pumping[priority] = true;
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
        const current = windows.get(model) ?? windowsOfModel;
        const wait = await tryTake(current, model, waiter.demand);
        if (wait === undefined) {
          // The queue may have changed while the statement ran (calls added, none removed but by this loop).
          queue.splice(queue.indexOf(waiter), 1);
          modelBudgetWaitSeconds.observe({ model, priority }, (Date.now() - waiter.since) / 1000);
          waiter.resolve(settleFor(current, model, waiter.demand));
          continue;
        }
        await sleep(Math.min(wait, maxSleepMs));
      }
    } finally {
      windowsOfModel.pumping[priority] = false;
      modelBudgetWaiting.set({ model, priority }, queue.length);
      for (const waiter of queue.splice(0)) waiter.reject(new Error('The model budget is closed.'));
    }
  }

  return {
    take(demand) {
      const model = windows.get(demand.model);
      if (model === undefined || stopping.signal.aborted) return Promise.resolve(NO_GRANT);
      if (demand.signal?.aborted === true) return Promise.reject(abortError(demand.signal));
      return new Promise<BudgetGrant>((resolve, reject) => {
        const queue = model.queues[demand.priority];
        queue.push({ demand, since: Date.now(), resolve, reject });
        modelBudgetWaiting.set({ model: demand.model, priority: demand.priority }, queue.length);
        if (!model.pumping[demand.priority]) void pump(demand.model, model, demand.priority);
      });
    },

    observe(model, status, headers) {
      if (status === 429) {
        // Every replica waits out the API's retry-after: the window of each dimension is spent until then.
        // retry-after-ms first, as the SDK reads it (exact; a stand-in on a compressed clock sends it).
        const exactMs = Number(headers.get('retry-after-ms') ?? Number.NaN);
        const seconds = Number.isFinite(exactMs) && exactMs > 0 ? exactMs / 1000 : Number(headers.get('retry-after'));
        const known = windows.get(model);
        if (known !== undefined && Number.isFinite(seconds) && seconds > 0) {
          // The API's bucket is short of what refills in `seconds`: that much of each dimension is taken from the
          // current windows, which every replica shares (a block would end the window early and open a fresh one,
          // which a drained bucket refuses again: a 429 storm). This process also waits the retry-after out.
          for (const dimension of DIMENSIONS) {
            const owed = Math.ceil((known.limits[PER_MINUTE[dimension]] * seconds) / 60);
            known.limiters.interactive[dimension].penalty(model, Math.min(owed, known.capacity[dimension])).catch(() => undefined);
          }
          notBefore.set(model, Math.max(notBefore.get(model) ?? 0, Date.now() + seconds * 1000));
          log.warn({ model, retryAfterSeconds: seconds }, 'the model API answered 429: its retry-after is taken from the shared allowance');
        }
      }
      const stated = Object.fromEntries(
        DIMENSIONS.map((dimension) => [PER_MINUTE[dimension], Number(headers.get(LIMIT_HEADERS[dimension]) ?? Number.NaN)]),
      ) as unknown as ModelLimits;
      if (!DIMENSIONS.every((dimension) => Number.isFinite(stated[PER_MINUTE[dimension]]) && stated[PER_MINUTE[dimension]] > 0)) return;
      const known = windows.get(model);
      if (known !== undefined && DIMENSIONS.every((dimension) => known.limits[PER_MINUTE[dimension]] === stated[PER_MINUTE[dimension]]))
        return;
      warnOnce(
        `limits:${model}:${JSON.stringify(stated)}`,
        { model, configured: known?.limits ?? null, stated },
        'the model API states other limits for this model than configured: using the API’s',
      );
      windows.set(model, windowsFor(model, stated));
    },

    governs(model) {
      return windows.has(model);
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
  config: Pick<AiConfig, 'AI_MODEL_LIMITS' | 'AI_MODEL_BUDGET_WINDOW_MS' | 'AI_MODEL_BUDGET_INTERACTIVE_SHARE'>,
  { pool, logger }: { pool: unknown; logger: Logger },
): ModelBudget {
  return createPostgresModelBudget({
    pool,
    logger,
    limits: config.AI_MODEL_LIMITS,
    windowMs: config.AI_MODEL_BUDGET_WINDOW_MS,
    interactiveShare: config.AI_MODEL_BUDGET_INTERACTIVE_SHARE,
  });
}
