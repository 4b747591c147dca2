// Command-line options shared by every scenario: `npm run bench -- [scenario...] [--quick] [--warmup S]
// [--duration S] [--connections N] [--profile]`. Each has an environment variable too (BENCH_WARMUP_S, ...).
import { parseArgs } from 'node:util';

export interface BenchOptions {
  /** Seconds of load before each measurement, discarded (JIT warm-up, connection pools, caches). */
  warmupS: number;
  /** Seconds of each measurement. */
  durationS: number;
  /** Concurrent connections of the throughput measurements. */
  connections: number;
  /** Also take a CPU profile of the process under test (figures of a profiled run are not comparable). */
  profile: boolean;
  /** Also measure variants of the process under test with one part removed, to attribute its cost. */
  breakdown: boolean;
  quick: boolean;
  /**
   * Jobs of the job-pipeline latency measurement, or of tenant A's flood in capacity (undefined: the scenario's
   * default, smaller with --quick).
   */
  jobs?: number;
  /** Jobs submitted per second by the job-pipeline latency measurement (undefined: the scenario's default). */
  rate?: number;
  /** chat-stream: streams per latency measurement (undefined: the scenario's default, smaller with --quick). */
  streams?: number;
  /** chat-stream: only the memory per open stream, without any latency measurement. */
  memoryOnly: boolean;
  /** capacity: wall-clock seconds per second of model time (undefined: the scenario's default). */
  timeScale?: number;
  /** capacity: NEWS_WORKER_CONCURRENCY of each worker replica (undefined: the scenario's default). */
  concurrency?: number;
  /** capacity: AI_MAX_OUTPUT_TOKENS of the services (undefined: the product default). */
  maxTokens?: number;
}

export const USAGE = `usage: npm run bench -- [scenario ...] [options]

Runs every scenario when none is named. Options (environment variable in brackets):
  --quick              smoke run: 1 s warm-up, 3 s per measurement
  --warmup <s>         warm-up seconds before each measurement [BENCH_WARMUP_S] (default 3)
  --duration <s>       seconds per measurement [BENCH_DURATION_S] (default 10)
  --connections <n>    connections of the throughput measurements [BENCH_CONNECTIONS] (default 10)
  --profile            also write and summarise CPU profiles of the processes under test
  --breakdown          also measure variants with one part removed (e.g. the gateway without rate limiting)
  --jobs <n>           job-pipeline: jobs timed from POST to completed [BENCH_JOBS] (default 1000, 100 with --quick);
                       capacity: tenant A's flood [BENCH_JOBS] (default 3000, 300 with --quick)
  --rate <n>           job-pipeline: jobs submitted per second [BENCH_RATE] (default 10)
  --streams <n>        chat-stream: streams per time-to-first-event measurement [BENCH_STREAMS] (default 1000, 200 with --quick)
  --memory-only        chat-stream: only the memory per open stream (no time-to-first-event measurement)
  --time-scale <x>     capacity: wall-clock seconds per model second [BENCH_TIME_SCALE] (default 1: the model's own pace)
  --concurrency <n>    capacity: NEWS_WORKER_CONCURRENCY of each of the 3 worker replicas [BENCH_CONCURRENCY] (default 600, 200 with --quick)
  --max-tokens <n>     capacity: AI_MAX_OUTPUT_TOKENS, each model call's max_tokens [BENCH_MAX_TOKENS] (default 8192, the product default)
  --help               this text`;

function positive(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0) throw new Error(`${name} must be a positive number, got "${value}"`);
  return number;
}

export function parseOptions(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): { scenarios: string[]; options: BenchOptions; help: boolean } {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      quick: { type: 'boolean', default: false },
      warmup: { type: 'string' },
      duration: { type: 'string' },
      connections: { type: 'string' },
      profile: { type: 'boolean', default: false },
      breakdown: { type: 'boolean', default: false },
      jobs: { type: 'string' },
      rate: { type: 'string' },
      streams: { type: 'string' },
      'memory-only': { type: 'boolean', default: false },
      'time-scale': { type: 'string' },
      concurrency: { type: 'string' },
      'max-tokens': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const quick = values.quick;
  const options: BenchOptions = {
    quick,
    warmupS: positive('--warmup', values.warmup ?? env.BENCH_WARMUP_S, quick ? 1 : 3),
    durationS: positive('--duration', values.duration ?? env.BENCH_DURATION_S, quick ? 3 : 10),
    connections: Math.round(positive('--connections', values.connections ?? env.BENCH_CONNECTIONS, 10)),
    profile: values.profile,
    breakdown: values.breakdown,
    memoryOnly: values['memory-only'],
  };
  const jobs = values.jobs ?? env.BENCH_JOBS;
  if (jobs !== undefined && jobs !== '') options.jobs = Math.round(positive('--jobs', jobs, 1));
  const rate = values.rate ?? env.BENCH_RATE;
  if (rate !== undefined && rate !== '') options.rate = positive('--rate', rate, 1);
  const streams = values.streams ?? env.BENCH_STREAMS;
  if (streams !== undefined && streams !== '') options.streams = Math.round(positive('--streams', streams, 1));
  const timeScale = values['time-scale'] ?? env.BENCH_TIME_SCALE;
  if (timeScale !== undefined && timeScale !== '') options.timeScale = positive('--time-scale', timeScale, 1);
  const concurrency = values.concurrency ?? env.BENCH_CONCURRENCY;
  if (concurrency !== undefined && concurrency !== '') options.concurrency = Math.round(positive('--concurrency', concurrency, 1));
  const maxTokens = values['max-tokens'] ?? env.BENCH_MAX_TOKENS;
  if (maxTokens !== undefined && maxTokens !== '') options.maxTokens = Math.round(positive('--max-tokens', maxTokens, 1));
  return { scenarios: positionals, options, help: values.help };
}
