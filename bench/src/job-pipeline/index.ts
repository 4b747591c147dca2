// Scenario job-pipeline: how long a news job takes from POST /api/products/news (through the gateway, a cache
// miss) until `completed` is visible on the status endpoint, with the fake Claude at zero latency, so what is
// measured is the system's own path: gateway → news API → outbox → Kafka → news worker → job events → outbox →
// Kafka → jobs service → status endpoint. Then how many jobs per second one news worker process sustains.
// See docs/benchmarks.md.
import { performance } from 'node:perf_hooks';
import { createHttpClient } from '../lib/http';
import { percentiles, type Percentiles } from '../lib/load';
import { describeMachine } from '../lib/machine';
import {
  failureReasons,
  jobTraces,
  NewsRequests,
  relayLeader,
  submitAndPoll,
  submitNewsJob,
  waitForJobs,
  type Gateway,
  type JobTrace,
  type TimedJob,
} from '../lib/news-jobs';
import type { BenchOptions } from '../lib/options';
import { fixed, note, print, table, thousands } from '../lib/output';
import { withCleanup } from '../lib/processes';
import { printProfile } from '../lib/profile-report';
import { totalMs } from '../lib/cpu';
import {
  coreShare,
  CPU_GROUPS,
  cpuTables,
  exitedProcesses,
  loadAverage,
  othersMs,
  printRunHeading,
  SERVICE_LABELS,
  type ServiceName,
  startBenchSystem,
  systemCpuDelta,
  type SystemCpuDelta,
  systemCpuSnapshot,
} from '../lib/system';

const TARGET_P50_MS = 50;
const TARGET_P99_MS = 150;
const POLL_INTERVAL_MS = 10;
/** After this long a job is polled every SLOW_POLL_INTERVAL_MS (see submitAndPoll). */
const FAST_POLLING_MS = 1_000;
const SLOW_POLL_INTERVAL_MS = 100;
/**
 * Jobs per second of the latency measurement: about half of what one news worker completes on this machine
 * (18–19 jobs/s measured by the burst), so that the figures are those of the pipeline, not of a queue.
 */
const DEFAULT_RATE = 10;
/** Concurrent submissions of the burst. */
const BURST_SUBMITTERS = 16;
/** The other rates of the latency-by-load table (besides the main measurement's rate). */
const LEVEL_RATES = [5, 20, 40];

interface Settings {
  jobs: number;
  rate: number;
  burst: number;
  warmupJobs: number;
  /** Jobs per load level of the latency-by-load table. */
  levelJobs: number;
}

interface Level {
  rate: number;
  timed: TimedJob[];
  submitSeconds: number;
  cpu: SystemCpuDelta;
}

type Window = { fromUs: number; toUs: number };
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

interface Outcome {
  problems: string[];
  timed: TimedJob[];
  traces: JobTrace[];
  submitSeconds: number;
  latencyCpu?: SystemCpuDelta;
  latencyWindow?: Window;
  burst?: { ids: string[]; submitS: number; traces: JobTrace[]; cpu: SystemCpuDelta; window: Window; elapsedS: number };
  /** The latency at other submission rates (the main measurement is one of the rows). */
  levels: Level[];
  relayLeader: string;
  profiles: Partial<Record<ServiceName, string>>;
}

/** Submits `count` jobs at `rate` per second, each polled until completed. Errors are collected, not thrown. */
async function paced(
  gateway: Gateway,
  requests: NewsRequests,
  count: number,
  rate: number,
  timeoutMs: number,
  problems: string[],
): Promise<{ timed: TimedJob[]; seconds: number }> {
  const intervalMs = 1000 / rate;
  const start = performance.now();
  const running: Promise<TimedJob | undefined>[] = [];
  for (let index = 0; index < count; index++) {
    const wait = start + index * intervalMs - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    running.push(
      submitAndPoll(gateway, requests.take(), {
        pollIntervalMs: POLL_INTERVAL_MS,
        fastPollingMs: FAST_POLLING_MS,
        slowPollIntervalMs: SLOW_POLL_INTERVAL_MS,
        timeoutMs,
      }).catch((error: unknown) => {
        problems.push(error instanceof Error ? error.message : String(error));
        return undefined;
      }),
    );
  }
  const seconds = (performance.now() - start) / 1000;
  const timed = (await Promise.all(running)).filter((job): job is TimedJob => job !== undefined);
  return { timed, seconds };
}

async function measure(options: BenchOptions, settings: Settings): Promise<Outcome> {
  return withCleanup(async (cleanup) => {
    const profiled: ServiceName[] = options.profile ? ['newsWorker', 'jobs', 'newsApi', 'gateway'] : [];
    const system = await startBenchSystem(cleanup, { scenario: 'job-pipeline', profile: profiled });
    const client = createHttpClient({ maxSockets: 256 });
    cleanup.add('close the HTTP client', () => {
      client.close();
      return Promise.resolve();
    });
    const gateway: Gateway = { client, url: system.gatewayUrl, apiKey: system.apiKey };
    const requests = new NewsRequests();
    const outcome: Outcome = {
      problems: [],
      timed: [],
      traces: [],
      submitSeconds: 0,
      relayLeader: 'none',
      profiles: system.profiles,
      levels: [],
    };

    // The first job waits for the worker to join its Kafka consumer group; the warm-up also warms the JIT.
    note(`warm-up: ${settings.warmupJobs} jobs at 10 jobs/s (the first one waits for the worker's consumer group)`);
    const warm = await paced(gateway, requests, settings.warmupJobs, 10, 120_000, outcome.problems);
    if (warm.timed.length < settings.warmupJobs) return outcome;

    note(
      `latency: ${settings.jobs} jobs at ${settings.rate} jobs/s, each polled every ${POLL_INTERVAL_MS} ms until completed (${settings.jobs / settings.rate} s)`,
    );
    const before = await systemCpuSnapshot(system);
    const fromUs = nowUs();
    const latency = await paced(gateway, requests, settings.jobs, settings.rate, 60_000, outcome.problems);
    const toUs = nowUs();
    outcome.latencyCpu = systemCpuDelta(before, await systemCpuSnapshot(system));
    outcome.latencyWindow = { fromUs, toUs };
    outcome.timed = latency.timed;
    outcome.submitSeconds = latency.seconds;
    outcome.traces = await jobTraces(
      system.pool,
      latency.timed.map((job) => job.jobId),
    );
    outcome.relayLeader = await relayLeader(system.pool);
    if (outcome.problems.length > 0) return outcome;
    outcome.levels.push({ rate: settings.rate, timed: latency.timed, submitSeconds: latency.seconds, cpu: outcome.latencyCpu });

    for (const rate of LEVEL_RATES.filter((entry) => entry !== settings.rate)) {
      note(`latency by load: ${settings.levelJobs} jobs at ${rate} jobs/s, polled the same way (${settings.levelJobs / rate} s)`);
      const levelBefore = await systemCpuSnapshot(system);
      const level = await paced(gateway, requests, settings.levelJobs, rate, 60_000, outcome.problems);
      outcome.levels.push({
        rate,
        timed: level.timed,
        submitSeconds: level.seconds,
        cpu: systemCpuDelta(levelBefore, await systemCpuSnapshot(system)),
      });
      if (outcome.problems.length > 0) return outcome;
    }
    outcome.levels.sort((a, b) => a.rate - b.rate);

    note(`worker throughput: a burst of ${settings.burst} jobs, submitted ${BURST_SUBMITTERS} at a time, until all are finished`);
    const burstBefore = await systemCpuSnapshot(system);
    const burstFrom = nowUs();
    const burstStart = performance.now();
    const ids: string[] = [];
    const bodies = Array.from({ length: settings.burst }, () => requests.take());
    let next = 0;
    await Promise.all(
      Array.from({ length: BURST_SUBMITTERS }, async () => {
        while (next < bodies.length) {
          const body = bodies[next++];
          if (body === undefined) break;
          try {
            ids.push(await submitNewsJob(gateway, body));
          } catch (error) {
            outcome.problems.push(error instanceof Error ? error.message : String(error));
          }
        }
      }),
    );
    const submitS = (performance.now() - burstStart) / 1000;
    const counts = await waitForJobs(system.pool, ids, 180_000);
    const elapsedS = (performance.now() - burstStart) / 1000;
    const burstCpu = systemCpuDelta(burstBefore, await systemCpuSnapshot(system));
    const burstTo = nowUs();
    if (counts.failed > 0)
      outcome.problems.push(`${counts.failed} of the burst's jobs failed: ${(await failureReasons(system.pool, ids)).join('; ')}`);
    if (counts.unfinished > 0) outcome.problems.push(`${counts.unfinished} of the burst's jobs were not finished after 180 s`);
    outcome.burst = {
      ids,
      submitS,
      traces: await jobTraces(system.pool, ids),
      cpu: burstCpu,
      window: { fromUs: burstFrom, toUs: burstTo },
      elapsedS,
    };

    outcome.problems.push(...exitedProcesses(system));
    await system.stopServices();
    return outcome;
  });
}

export async function jobPipeline(options: BenchOptions, command: string): Promise<boolean> {
  const settings: Settings = {
    jobs: options.jobs ?? (options.quick ? 100 : 1000),
    rate: options.rate ?? DEFAULT_RATE,
    burst: options.quick ? 100 : 200,
    warmupJobs: options.quick ? 10 : 20,
    levelJobs: options.quick ? 50 : 200,
  };
  const machine = describeMachine();
  const started = performance.now();
  const outcome = await measure(options, settings);
  const loadAfter = loadAverage();

  printRunHeading('job-pipeline', command, machine, started, loadAfter);
  if (options.profile) print('NOTE: the services ran under the CPU profiler, which slows them: compare runs without --profile');
  report(settings, outcome);
  if (outcome.problems.length > 0) {
    print();
    print(
      `FAILED: the figures are not valid: ${outcome.problems.slice(0, 10).join('; ')}${outcome.problems.length > 10 ? ` (and ${outcome.problems.length - 10} more)` : ''}`,
    );
    return false;
  }
  return true;
}

const ms = (value: number) => fixed(value, 1);

/** Events per second between the 10th and the 90th percentile of sorted timestamps (ms): the burst without its ramps. */
function steadyRate(sorted: readonly number[]): number {
  const low = Math.floor(sorted.length * 0.1);
  const high = Math.max(low + 1, Math.ceil(sorted.length * 0.9) - 1);
  return ((high - low) / ((sorted[high] ?? 0) - (sorted[low] ?? 0))) * 1000;
}
const row = (label: string, stats: Percentiles) => [label, ms(stats.p50), ms(stats.p90), ms(stats.p99), ms(stats.max), ms(stats.mean)];

function report(settings: Settings, outcome: Outcome): void {
  const { timed, traces } = outcome;
  if (timed.length === 0) return;
  const client = percentiles(timed.map((job) => job.completedMs));
  const accept = percentiles(timed.map((job) => job.acceptMs));
  const database = percentiles(traces.map((trace) => trace.finished - trace.created));
  print();
  print(
    `### POST → completed: ${thousands(timed.length)} jobs at ${settings.rate} jobs/s, each polled every ${POLL_INTERVAL_MS} ms (every ${SLOW_POLL_INTERVAL_MS} ms after ${FAST_POLLING_MS / 1000} s)`,
  );
  print();
  print(
    table(
      ['measured from', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'mean ms'],
      [
        row('client: POST sent → `completed` seen on the status endpoint', client),
        row('client: POST sent → 202 received', accept),
        row('database: job row created → finished (jobs.finished_at − created_at)', database),
      ],
    ),
  );
  print();
  print(
    `submitted at ${fixed(timed.length / outcome.submitSeconds, 1)} jobs/s; ${fixed(timed.reduce((sum, job) => sum + job.polls, 0) / timed.length, 1)} status polls per job; ` +
      `outbox relay leader: ${outcome.relayLeader}; job events per job: ${fixed(traces.reduce((sum, trace) => sum + trace.events, 0) / Math.max(1, traces.length), 1)}`,
  );

  // Each job's way, from the client's wall clock and Postgres's timestamps (same machine clock).
  const byId = new Map(timed.map((job) => [job.jobId, job]));
  const joined = traces.flatMap((trace) => {
    const job = byId.get(trace.jobId);
    return job === undefined ? [] : [{ trace, job }];
  });
  const stages: [string, (entry: (typeof joined)[number]) => number][] = [
    ['1. gateway and news API, until the job row transaction began', ({ trace, job }) => trace.created - job.postedAtMs],
    ['2. commit, NOTIFY → the outbox relay picks the request up', ({ trace }) => trace.requestRelayed - trace.created],
    ['3. relay → Kafka → worker consumes it, claims the job, writes `running`', ({ trace }) => trace.running - trace.requestRelayed],
    [
      '4. the work: 2 model turns, market data, progress, result and status committed (finished_at)',
      ({ trace }) => trace.finished - trace.running,
    ],
    ['5. commit → the next status poll sees it, answer received', ({ trace, job }) => job.seenAtMs - trace.finished],
  ];
  const stageStats = stages.map(([label, of]) => ({ label, stats: percentiles(joined.map(of)) }));
  const totalMean = stageStats.reduce((sum, { stats }) => sum + stats.mean, 0);
  print();
  print(
    `### Where the time goes: the stages of each job (${thousands(joined.length)} jobs; Postgres timestamps are the start of the writing transaction)`,
  );
  print();
  print(
    table(
      ['stage', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'mean ms', 'share of the mean'],
      [
        ...stageStats.map(({ label, stats }) => [...row(label, stats), `${fixed((stats.mean / totalMean) * 100, 0)} %`]),
        ['sum of the stages (= client view)', '', '', '', '', ms(totalMean), '100 %'],
      ],
    ),
  );

  if (outcome.levels.length > 1) {
    print();
    print('### Latency by load: POST → `completed` (client view) at several submission rates, polled the same way');
    print();
    print(
      table(
        [
          'jobs/s submitted',
          'jobs',
          'p50 ms',
          'p90 ms',
          'p99 ms',
          'max ms',
          'POST → 202 p99 ms',
          'polls per job',
          'CPU per job, all processes, ms',
          'machine busy %',
          'others %',
        ],
        outcome.levels.map(({ rate, timed: jobs, submitSeconds, cpu }) => {
          const stats = percentiles(jobs.map((job) => job.completedMs));
          const accepted = percentiles(jobs.map((job) => job.acceptMs));
          const ours = CPU_GROUPS.reduce((sum, group) => sum + totalMs(cpu.byGroup[group]), 0);
          return [
            `${fixed(jobs.length / submitSeconds, 1)}${rate === settings.rate ? ' (main)' : ''}`,
            thousands(jobs.length),
            ms(stats.p50),
            ms(stats.p90),
            ms(stats.p99),
            ms(stats.max),
            ms(accepted.p99),
            fixed(jobs.reduce((sum, job) => sum + job.polls, 0) / Math.max(1, jobs.length), 1),
            fixed(ours / Math.max(1, jobs.length), 1),
            cpu.machine === null ? 'n/a' : coreShare(cpu.machine.busyMs, cpu.wallMs),
            coreShare(othersMs(cpu), cpu.wallMs),
          ];
        }),
      ),
    );
  }

  print();
  print('### Targets (issue 5): POST → `completed` visible on the status endpoint (the client view)');
  print();
  print(
    table(
      ['target', 'measured', 'met'],
      [
        [`p50 ≤ ${TARGET_P50_MS} ms`, `${ms(client.p50)} ms`, client.p50 <= TARGET_P50_MS ? 'yes' : 'NO'],
        [`p99 ≤ ${TARGET_P99_MS} ms`, `${ms(client.p99)} ms`, client.p99 <= TARGET_P99_MS ? 'yes' : 'NO'],
      ],
      ['left', 'right', 'left'],
    ),
  );

  const { burst } = outcome;
  const cpuRows = [];
  if (outcome.latencyCpu)
    cpuRows.push({ label: `latency: ${settings.rate} jobs/s with polling`, delta: outcome.latencyCpu, units: timed.length });
  if (burst !== undefined && burst.traces.length > 0) {
    const finished = burst.traces.map((trace) => trace.finished).sort((a, b) => a - b);
    const created = burst.traces.map((trace) => trace.created).sort((a, b) => a - b);
    const count = finished.length;
    const steady = steadyRate(finished);
    const workerSteady = steadyRate(burst.traces.map((trace) => trace.completedWritten).sort((a, b) => a - b));
    const overall = (count / ((finished[count - 1] ?? 0) - (created[0] ?? 0))) * 1000;
    const busyMs = burst.traces.reduce((sum, trace) => sum + (trace.completedWritten - trace.running), 0);
    const runningSpanMs =
      Math.max(...burst.traces.map((trace) => trace.completedWritten)) - Math.min(...burst.traces.map((trace) => trace.running));
    const work = percentiles(burst.traces.map((trace) => trace.completedWritten - trace.running));
    const waiting = percentiles(burst.traces.map((trace) => trace.running - trace.requestRelayed));
    const observed = percentiles(burst.traces.map((trace) => trace.completedRelayed - trace.finished));
    const worker = burst.cpu.byGroup.newsWorker;
    const workerMsPerJob = (worker.userMs + worker.systemMs) / count;
    print();
    print(`### One news worker's throughput: a burst of ${thousands(count)} jobs`);
    print();
    print(
      table(
        ['figure', 'value'],
        [
          ['submitted (through the gateway, 16 at a time)', `${thousands(count)} jobs in ${fixed(burst.submitS, 1)} s`],
          ['all finished after', `${fixed(burst.elapsedS, 1)} s`],
          [
            '**sustained: completions per second at the jobs table (finished_at), middle 80 % of the burst**',
            `**${fixed(steady, 1)} jobs/s**`,
          ],
          ["the worker's own rate: its `completed` events committed per second, middle 80 %", `${fixed(workerSteady, 1)} jobs/s`],
          ['overall: first job created → last finished', `${fixed(overall, 1)} jobs/s`],
          ['jobs running at once in the worker (mean)', fixed(busyMs / runningSpanMs, 2)],
          ['stage 4 (the work) per job under the burst: p50 / p99', `${ms(work.p50)} / ${ms(work.p99)} ms`],
          ['stage 3 (waiting for the worker) under the burst: p50 / p99', `${ms(waiting.p50)} / ${ms(waiting.p99)} ms`],
          [
            '`completed` committed → its event published to observers (relay batch began), under the burst: p50 / p99',
            `${ms(observed.p50)} / ${ms(observed.p99)} ms`,
          ],
          [
            'news worker CPU per job; its share of one core',
            `${fixed(workerMsPerJob, 2)} ms; ${fixed(((worker.userMs + worker.systemMs) / burst.cpu.wallMs) * 100, 0)} %`,
          ],
        ],
        ['left', 'right'],
      ),
    );
    cpuRows.push({ label: `burst: ${count} jobs, no polling`, delta: burst.cpu, units: count });
  }
  if (cpuRows.length > 0) {
    print();
    print('### CPU time by process');
    print();
    print(cpuTables(cpuRows, { unit: 'job', scale: 'ms' }));
    print('(the Kafka broker is shared with whatever else runs on the machine; "others" is busy time outside the processes listed)');
  }

  for (const service of ['newsWorker', 'jobs', 'newsApi', 'gateway'] as const) {
    const file = outcome.profiles[service];
    if (file === undefined) continue;
    const window = service === 'newsWorker' || service === 'jobs' ? burst?.window : outcome.latencyWindow;
    printProfile(
      `Where the ${SERVICE_LABELS[service]}'s CPU time goes (${service === 'newsWorker' || service === 'jobs' ? 'the burst' : 'the latency measurement'})`,
      file,
      window,
    );
  }
}
