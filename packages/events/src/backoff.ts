import { setTimeout as delay } from 'node:timers/promises';

export interface Backoff {
  initialMs: number;
  maxMs: number;
}

/** Delay before retry number `failures` (1-based): doubling, capped, with jitter so retries spread out. */
export function backoffDelay({ initialMs, maxMs }: Backoff, failures: number): number {
  const ceiling = Math.min(maxMs, initialMs * 2 ** Math.max(0, failures - 1));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

/** Waits `ms`; resolves false instead if `signal` aborts first. */
export async function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return false;
  try {
    await delay(ms, undefined, signal ? { signal } : undefined);
    return true;
  } catch (error) {
    if (signal?.aborted) return false;
    throw error;
  }
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
