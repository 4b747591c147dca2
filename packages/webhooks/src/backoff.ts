// When a failed delivery is tried again: exponential backoff with jitter, up to a ceiling, until the delivery's
// retry window (24 h by default) has passed. With the defaults: about 5 s, 10 s, 20 s, … 43 min, then every
// 2 h, some 20 attempts in a day; ±20 % jitter keeps receivers that failed together from being hit together.

export interface RetrySchedule {
  /** Delay after the first failed attempt. */
  baseMs: number;
  /** Largest delay between two attempts. */
  maxMs: number;
}

export const DEFAULT_RETRY_SCHEDULE: RetrySchedule = { baseMs: 5_000, maxMs: 2 * 3600_000 };
const JITTER = 0.2;

/**
 * The delay before the next attempt after `failedAttempts` failed ones (1 after the first). `random` in [0, 1)
 * picks the jitter (Math.random by default; tests pass a constant).
 */
export function retryDelayMs(failedAttempts: number, schedule: RetrySchedule = DEFAULT_RETRY_SCHEDULE, random = Math.random()): number {
  const exponent = Math.min(Math.max(failedAttempts, 1) - 1, 30);
  const plain = Math.min(schedule.baseMs * 2 ** exponent, schedule.maxMs);
  return Math.round(plain * (1 - JITTER + 2 * JITTER * random));
}
