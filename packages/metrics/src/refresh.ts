/**
 * Gauges read from a source that is slow to ask (a count over a table, the broker's offsets) are refreshed on a
 * timer rather than at scrape time. A read still running when the timer fires again is not queued behind (a slow
 * database is not sent a second count), and a failed read keeps the last figures and goes to `onError`.
 */
export interface Refresher {
  /** Reads now, then every `intervalMs` until stopped; a second start does nothing. */
  start(): void;
  /** Stops the timer and waits for a read in flight. */
  stop(): Promise<void>;
}

export function refreshEvery(intervalMs: number, read: () => Promise<unknown>, onError: (error: unknown) => void): Refresher {
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  const tick = () => {
    inFlight ??= read()
      .then(() => undefined, onError)
      .finally(() => {
        inFlight = undefined;
      });
  };
  return {
    start() {
      if (timer) return;
      tick();
      timer = setInterval(tick, intervalMs);
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await inFlight;
    },
  };
}
