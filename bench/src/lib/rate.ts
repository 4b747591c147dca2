// An open-loop load at a constant rate: requests start on a fixed schedule whether or not earlier ones have been
// answered, the way independent clients arrive. autocannon's `overallRate` is not that: each connection sends
// as fast as it can until its share of the second is used up and then waits for the next second, so a
// "1,000 req/s" run is a burst at full speed at the start of every second, and its latency is that of saturation.
//
// The schedule is kept by a 1 ms timer: each tick starts every request whose time has come. A request's latency
// runs from the time the schedule gave it to the end of its answer (queueing in the client's connection pool
// included), not from when it was actually sent: a request the generator sent late (its own event loop held up,
// by its GC or by the machine) still counts the wait a client arriving on time would have had, so a stall is not
// hidden by the generator pausing with it (coordinated omission, as wrk2 corrects it). The timer's resolution
// puts up to a tick of that lag on every request; the lag is reported separately, so a generator that fell behind
// is visible.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { quantile } from './load';
import { fixed, latencyCells, thousands } from './output';

export interface FixedRateOptions {
  /** Requests per second. */
  rate: number;
  durationS: number;
  /** Starts one request; resolves with whether its answer was the expected one. Must not reject. */
  send: () => Promise<boolean>;
  /** After the schedule ends, how long to wait for requests still in flight. */
  drainTimeoutMs?: number;
  /**
   * With BENCH_DUMP_LATENCIES=<folder>, every answered request's start (ms into the schedule) and latency (ms) are
   * written to <folder>/<label>.csv: whether slow requests are spread out or cluster in one stall shows there.
   */
  label?: string;
}

export interface FixedRateResult {
  offeredRate: number;
  /** Requests answered as expected per second of the schedule. */
  achievedRate: number;
  started: number;
  ok: number;
  failed: number;
  /** Still unanswered after the drain timeout. */
  unfinished: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  /** How late the schedule started requests at worst, and at p99 (ms). */
  scheduleLagMs: { p99: number; max: number };
  durationS: number;
}

function grow(samples: Float64Array<ArrayBuffer>, count: number): Float64Array<ArrayBuffer> {
  if (count < samples.length) return samples;
  const grown = new Float64Array(samples.length * 2);
  grown.set(samples);
  return grown;
}

export async function runFixedRate({ rate, durationS, send, drainTimeoutMs = 15_000, label }: FixedRateOptions): Promise<FixedRateResult> {
  let latencies: Float64Array<ArrayBuffer> = new Float64Array(1 << 14);
  let startsAt: Float64Array<ArrayBuffer> = new Float64Array(1 << 14);
  let lags: Float64Array<ArrayBuffer> = new Float64Array(1 << 14);
  let ok = 0;
  let failed = 0;
  let started = 0;
  let answered = 0;
  let sum = 0;
  const intervalMs = 1000 / rate;
  const total = Math.floor(rate * durationS);
  const begin = performance.now();

  const launch = (scheduledAt: number) => {
    const at = performance.now();
    lags = grow(lags, started);
    lags[started] = at - scheduledAt;
    started++;
    void send().then((good) => {
      const latency = performance.now() - scheduledAt;
      answered++;
      if (!good) {
        failed++;
        return;
      }
      latencies = grow(latencies, ok);
      startsAt = grow(startsAt, ok);
      startsAt[ok] = scheduledAt - begin;
      latencies[ok++] = latency;
      sum += latency;
    });
  };

  while (started < total) {
    const now = performance.now();
    const due = Math.min(total, Math.floor((now - begin) / intervalMs) + 1);
    while (started < due) launch(begin + started * intervalMs);
    await delay(1);
  }
  const scheduleEnd = performance.now();
  const drainDeadline = scheduleEnd + drainTimeoutMs;
  while (answered < started && performance.now() < drainDeadline) await delay(5);

  const dumpTo = process.env.BENCH_DUMP_LATENCIES;
  if (dumpTo && label !== undefined) {
    mkdirSync(dumpTo, { recursive: true });
    const rows = Array.from({ length: ok }, (_, index) => `${(startsAt[index] ?? 0).toFixed(2)},${(latencies[index] ?? 0).toFixed(3)}`);
    writeFileSync(path.join(dumpTo, `${label.replace(/[^\w.-]+/g, '-')}.csv`), `start_ms,latency_ms\n${rows.join('\n')}\n`);
  }
  const sorted = latencies.subarray(0, ok).sort();
  const sortedLags = lags.subarray(0, started).sort();
  const measuredS = Math.max(durationS, (scheduleEnd - begin) / 1000);
  return {
    offeredRate: rate,
    achievedRate: ok / measuredS,
    started,
    ok,
    failed,
    unfinished: started - answered,
    latencyMs: {
      p50: quantile(sorted, 0.5),
      p90: quantile(sorted, 0.9),
      p99: quantile(sorted, 0.99),
      max: ok > 0 ? (sorted[ok - 1] ?? Number.NaN) : Number.NaN,
      mean: ok > 0 ? sum / ok : Number.NaN,
    },
    scheduleLagMs: { p99: quantile(sortedLags, 0.99), max: started > 0 ? (sortedLags[started - 1] ?? Number.NaN) : Number.NaN },
    durationS: measuredS,
  };
}

/** The columns every fixed-rate latency table has after the offered rate; fixedRateCells gives their cells. */
export const FIXED_RATE_HEADERS = [
  'answered/s',
  'p50 ms',
  'p90 ms',
  'p99 ms',
  'max ms',
  'requests',
  'failed/unanswered',
  'schedule lag p99 ms',
] as const;

export function fixedRateCells(result: FixedRateResult): string[] {
  const ms = (value: number) => fixed(value, 2);
  const { latencyMs } = result;
  return [
    thousands(result.achievedRate),
    ...latencyCells(latencyMs),
    thousands(result.ok),
    `${result.failed}/${result.unfinished}`,
    ms(result.scheduleLagMs.p99),
  ];
}
