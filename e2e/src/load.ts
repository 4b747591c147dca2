// A steady stream of product requests through the gateway while a fault happens: what was accepted (202 and its
// job id) is what the fault tests then hold the system to; what was refused is counted by status.
import { marker } from './scripted-model';

export interface LoadOptions {
  /** Requests started per second. */
  ratePerSecond: number;
  /** At most this many requests in flight; a tick that finds them all busy is skipped (and counted). */
  maxInFlight?: number;
  /** Sends request number `index`; returns the response. */
  send: (index: number, signal: AbortSignal) => Promise<Response>;
  /** Hang guard of one request (default 30 s): a request that takes longer is abandoned and counted as `timeout`. */
  requestTimeoutMs?: number;
}

interface LoadResult {
  sent: number;
  /** Job ids of the 202 answers, in the order they were answered. */
  accepted: string[];
  /** Refusals by HTTP status, or `network` / `timeout` for requests that got no answer. */
  refused: Record<string, number>;
  /** Ticks skipped because `maxInFlight` requests were still open. */
  skipped: number;
}

export interface Load {
  /** Answers so far. */
  readonly accepted: readonly string[];
  /** Stops sending and waits for the requests in flight. */
  stop(): Promise<LoadResult>;
}

/** Starts sending `ratePerSecond` requests per second until stopped. */
export function startLoad({ ratePerSecond, maxInFlight = 64, send, requestTimeoutMs = 30_000 }: LoadOptions): Load {
  const result: LoadResult = { sent: 0, accepted: [], refused: {}, skipped: 0 };
  const inFlight = new Set<Promise<void>>();
  const refuse = (why: string) => {
    result.refused[why] = (result.refused[why] ?? 0) + 1;
  };

  const one = async (index: number): Promise<void> => {
    const signal = AbortSignal.timeout(requestTimeoutMs);
    try {
      const res = await send(index, signal);
      const body = (await res.json().catch(() => undefined)) as { job_id?: unknown } | undefined;
      if (res.status === 202 && typeof body?.job_id === 'string') result.accepted.push(body.job_id);
      else refuse(String(res.status));
    } catch {
      refuse(signal.aborted ? 'timeout' : 'network');
    }
  };

  const timer = setInterval(() => {
    if (inFlight.size >= maxInFlight) {
      result.skipped += 1;
      return;
    }
    const request = one(result.sent++);
    inFlight.add(request);
    void request.finally(() => inFlight.delete(request));
  }, 1_000 / ratePerSecond);

  return {
    get accepted() {
      return result.accepted;
    },
    async stop() {
      clearInterval(timer);
      await Promise.all([...inFlight]);
      return result;
    },
  };
}

/**
 * Distinct news requests (no cache hits, no coalescing): each carries its marker (scripted-model.ts) as the
 * caller's custom data, so the fake model can tell the jobs apart.
 */
export function newsRequest(run: string, index: number): Record<string, unknown> {
  const symbols = ['AAPL', 'MSFT', 'NVDA', 'GOOGL', 'AMZN', 'TSLA'];
  return { symbols: [symbols[index % symbols.length]], n: 1 + (index % 3), data: { marker: marker(run, index) } };
}

/** POSTs a news request through the gateway. */
export function postNews(gatewayUrl: string, key: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${gatewayUrl}/api/products/news`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-API-Key': key },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}
