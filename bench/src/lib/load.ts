// Load generation with autocannon, and the statistics the reports use.
//
// autocannon's own latency histogram has a resolution of 1 ms, too coarse for "under 1 ms added": each
// response's time (a float in ms from process.hrtime) is recorded here instead and the percentiles are
// computed from every sample.
import autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  /** Every 2xx body must be exactly this (otherwise it counts as a mismatch). */
  expectBody?: string;
  connections: number;
  pipelining: number;
  durationS: number;
  /**
   * Called before each request to vary it (e.g. rotate over a set of job ids): its path (relative to `url`'s
   * origin) and headers added to `headers`. Without it every request is the same.
   */
  requestFor?: () => { path: string; headers?: Record<string, string> };
}

export interface LoadResult {
  /** Completed 2xx responses per second over the measured duration. */
  rps: number;
  requests: number;
  durationS: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  /** Connection errors and timeouts. */
  errors: number;
  timeouts: number;
  non2xx: number;
  /** 2xx responses whose body was not the expected one. */
  mismatches: number;
}

/** The value at quantile q (0..1) of sorted samples, nearest-rank. */
export function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

function varied(requestFor: NonNullable<LoadOptions['requestFor']>): (request: autocannon.Request) => autocannon.Request {
  return (request) => {
    const next = requestFor();
    return { ...request, path: next.path, headers: { ...request.headers, ...next.headers } };
  };
}

/** Runs autocannon for `durationS` seconds and returns the figures. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  let samples = new Float64Array(1 << 16);
  let count = 0;
  // autocannon refuses expectBody beside a requests list: a varied request checks its own answers.
  let variedMismatches = 0;
  const expectBody = options.expectBody;
  const checkBody =
    expectBody === undefined
      ? {}
      : {
          onResponse: (status: number, body: string) => {
            if (status >= 200 && status < 300 && body !== expectBody) variedMismatches++;
          },
        };
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.url,
        method: options.method,
        headers: options.headers,
        ...(options.body === undefined ? {} : { body: options.body }),
        ...(options.requestFor === undefined
          ? expectBody === undefined
            ? {}
            : { expectBody }
          : { requests: [{ setupRequest: varied(options.requestFor), ...checkBody }] }),
        connections: options.connections,
        pipelining: options.pipelining,
        duration: options.durationS,
        timeout: 10,
      },
      (error, finished) => (error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(finished)),
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode < 200 || statusCode >= 300) return;
      if (count === samples.length) {
        const grown = new Float64Array(samples.length * 2);
        grown.set(samples);
        samples = grown;
      }
      samples[count++] = responseTime;
    });
  });
  const sorted = samples.subarray(0, count).sort();
  let sum = 0;
  for (const value of sorted) sum += value;
  const durationS = result.duration;
  return {
    rps: result['2xx'] / durationS,
    requests: result['2xx'],
    durationS,
    latencyMs: {
      p50: quantile(sorted, 0.5),
      p90: quantile(sorted, 0.9),
      p99: quantile(sorted, 0.99),
      max: count > 0 ? (sorted[count - 1] ?? Number.NaN) : Number.NaN,
      mean: count > 0 ? sum / count : Number.NaN,
    },
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    mismatches: result.mismatches + variedMismatches,
  };
}

/** Problems that make a result meaningless, as text ('' when there are none). */
export function failuresOf(result: LoadResult): string {
  const problems: string[] = [];
  if (result.errors > 0) problems.push(`${result.errors} errors`);
  if (result.timeouts > 0) problems.push(`${result.timeouts} timeouts`);
  if (result.non2xx > 0) problems.push(`${result.non2xx} non-2xx responses`);
  if (result.mismatches > 0) problems.push(`${result.mismatches} unexpected bodies`);
  if (result.requests === 0) problems.push('no successful request');
  return problems.join(', ');
}

export interface Percentiles {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentiles, maximum and mean of any list of samples. */
export function percentiles(values: ArrayLike<number>): Percentiles {
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const value of sorted) sum += value;
  const count = sorted.length;
  return {
    count,
    p50: quantile(sorted, 0.5),
    p90: quantile(sorted, 0.9),
    p99: quantile(sorted, 0.99),
    max: count > 0 ? (sorted[count - 1] ?? Number.NaN) : Number.NaN,
    mean: count > 0 ? sum / count : Number.NaN,
  };
}
