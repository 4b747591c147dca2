// Scenario status-poll: GET /api/jobs/news/{id}/status through the real gateway at saturation (closed loop over a
// set of existing jobs), while 50 news jobs per second are created in the background; and the same straight to
// the jobs service with signed identity headers, so the gateway's share is visible. See docs/benchmarks.md.
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { identityKey, signIdentity } from '@fin/http';
import { createHttpClient, type HttpClient } from '../lib/http';
import { failuresOf, runLoad, type LoadResult } from '../lib/load';
import { describeMachine } from '../lib/machine';
import {
  countJobs,
  failureReasons,
  NewsRequests,
  statusPath,
  submitNewsJob,
  waitForJobs,
  type Gateway,
  type JobCounts,
} from '../lib/news-jobs';
import type { BenchOptions } from '../lib/options';
import { fixed, latencyCells, note, print, table, thousands } from '../lib/output';
import { withCleanup } from '../lib/processes';
import { printProfile } from '../lib/profile-report';
import { FIXED_RATE_HEADERS, fixedRateCells, runFixedRate, type FixedRateResult } from '../lib/rate';
import {
  type BenchSystem,
  cpuTables,
  exitedProcesses,
  loadAverage,
  printRunHeading,
  SERVICE_LABELS,
  type ServiceName,
  startBenchSystem,
  type SystemCpuDelta,
  type Window,
  withCpu,
} from '../lib/system';

const TARGET_RPS = 5000;
const TARGET_P99_MS = 10;
const BACKGROUND_JOBS_PER_S = 50;
/** A signature of the direct requests is reused this long (the jobs service accepts 30 s of skew). */
/** Fixed rates of the latency-by-load table, through the gateway; those above 90 % of saturation give way to that rate. */
const RATES = [500, 1000, 2000, 4000];

type TargetId = 'gateway' | 'gateway50' | 'direct';

interface Measurement {
  target: TargetId;
  label: string;
  connections: number;
  result: LoadResult;
  cpu: SystemCpuDelta;
  window: Window;
  /** Jobs created in the background during the measurement, per second. */
  createdPerS: number;
}

interface Level {
  rate: number;
  result: FixedRateResult;
  cpu: SystemCpuDelta;
  createdPerS: number;
}

interface Outcome {
  problems: string[];
  seeded: number;
  measurements: Measurement[];
  levels: Level[];
  background: { created: number; seconds: number; counts: JobCounts } | undefined;
  profiles: Partial<Record<ServiceName, string>>;
}

/** Creates jobs through the gateway at `rate` per second until stopped (never more than 64 submissions in flight). */
function backgroundJobs(gateway: Gateway, requests: NewsRequests, rate: number, problems: string[]) {
  const ids: string[] = [];
  let stopping = false;
  let inFlight = 0;
  const start = performance.now();
  const loop = (async () => {
    for (let index = 0; !stopping; index++) {
      const wait = start + (index * 1000) / rate - performance.now();
      if (wait > 0) await delay(wait);
      if (stopping) break;
      if (inFlight >= 64) continue;
      inFlight++;
      void submitNewsJob(gateway, requests.take())
        .then((id) => ids.push(id))
        .catch((error: unknown) => problems.push(`background job: ${error instanceof Error ? error.message : String(error)}`))
        .finally(() => inFlight--);
    }
  })();
  return {
    ids,
    async stop(): Promise<number> {
      stopping = true;
      await loop;
      while (inFlight > 0) await delay(5);
      return (performance.now() - start) / 1000;
    },
  };
}

/** Identity headers for a direct GET of `path`, signed like the gateway signs them: anew for every request. */
function directSigner(system: BenchSystem): (path: string) => Record<string, string> {
  const key = identityKey(system.secret, 'jobs');
  const identity = { requestId: 'bench-status-poll', caller: { tenantId: system.tenantId, keyId: system.keyId, scopes: system.keyScopes } };
  return (path) => signIdentity(identity, key, { method: 'GET', path });
}

async function seed(gateway: Gateway, system: BenchSystem, requests: NewsRequests, count: number, problems: string[]): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < count) {
        next++;
        try {
          ids.push(await submitNewsJob(gateway, requests.take()));
        } catch (error) {
          problems.push(error instanceof Error ? error.message : String(error));
        }
      }
    }),
  );
  const counts = await waitForJobs(system.pool, ids, 120_000);
  if (counts.failed > 0) problems.push(`${counts.failed} seeded jobs failed: ${(await failureReasons(system.pool, ids)).join('; ')}`);
  if (counts.unfinished > 0) problems.push(`${counts.unfinished} seeded jobs were not finished after 120 s`);
  return ids;
}

async function checkAnswers(
  client: HttpClient,
  system: BenchSystem,
  jobId: string,
  sign: (path: string) => Record<string, string>,
): Promise<void> {
  const path = statusPath(jobId);
  const viaGateway = await client.request('GET', `${system.gatewayUrl}${path}`, { 'x-api-key': system.apiKey });
  const direct = await client.request('GET', `${system.jobsUrl}${path}`, sign(path));
  if (viaGateway.status !== 200 || direct.status !== 200 || viaGateway.body !== direct.body) {
    throw new Error(
      `status of ${jobId}: gateway ${viaGateway.status} ${viaGateway.body.slice(0, 200)}, direct ${direct.status} ${direct.body.slice(0, 200)}`,
    );
  }
  if ((JSON.parse(direct.body) as { status?: string }).status !== 'completed')
    throw new Error(`seeded job ${jobId} is not completed: ${direct.body}`);
  const unsigned = await client.request('GET', `${system.jobsUrl}${path}`, {});
  if (unsigned.status !== 401) throw new Error(`the jobs service answered ${unsigned.status} to an unsigned request; expected 401`);
}

async function measure(options: BenchOptions): Promise<Outcome> {
  return withCleanup(async (cleanup) => {
    const profiled: ServiceName[] = options.profile ? ['gateway', 'jobs'] : [];
    const system = await startBenchSystem(cleanup, { scenario: 'status-poll', profile: profiled });
    const client = createHttpClient({ maxSockets: 256 });
    cleanup.add('close the HTTP client', () => {
      client.close();
      return Promise.resolve();
    });
    const gateway: Gateway = { client, url: system.gatewayUrl, apiKey: system.apiKey };
    const requests = new NewsRequests();
    const outcome: Outcome = { problems: [], seeded: 0, measurements: [], levels: [], background: undefined, profiles: system.profiles };

    const seedCount = options.quick ? 50 : 200;
    note(`creating ${seedCount} jobs to poll, and waiting until they are completed`);
    const ids = await seed(gateway, system, requests, seedCount, outcome.problems);
    outcome.seeded = ids.length;
    if (outcome.problems.length > 0 || ids.length === 0) return outcome;
    const sign = directSigner(system);
    await checkAnswers(client, system, ids[0] ?? '', sign);

    let turn = 0;
    const nextPath = () => statusPath(ids[turn++ % ids.length] ?? '');
    const targets: {
      target: TargetId;
      label: string;
      url: string;
      connections: number;
      headers: Record<string, string>;
      requestFor: () => { path: string; headers?: Record<string, string> };
    }[] = [
      {
        target: 'gateway',
        label: 'gateway → jobs service',
        url: system.gatewayUrl,
        connections: options.connections,
        headers: { 'x-api-key': system.apiKey },
        requestFor: () => ({ path: nextPath() }),
      },
      {
        target: 'gateway50',
        label: 'gateway → jobs service',
        url: system.gatewayUrl,
        connections: 50,
        headers: { 'x-api-key': system.apiKey },
        requestFor: () => ({ path: nextPath() }),
      },
      {
        target: 'direct',
        label: 'jobs service, direct (signed identity headers)',
        url: system.jobsUrl,
        connections: options.connections,
        headers: {},
        requestFor: () => {
          const path = nextPath();
          return { path, headers: sign(path) };
        },
      },
    ];

    note(`creating ${BACKGROUND_JOBS_PER_S} jobs/s in the background from now on`);
    const backgroundClient = createHttpClient({ maxSockets: 64 });
    cleanup.add('close the background HTTP client', () => {
      backgroundClient.close();
      return Promise.resolve();
    });
    const background = backgroundJobs({ ...gateway, client: backgroundClient }, requests, BACKGROUND_JOBS_PER_S, outcome.problems);
    cleanup.add('stop the background jobs', () => background.stop().then(() => undefined));
    await delay(1000);

    for (const { target, label, url, connections, headers, requestFor } of targets) {
      const load = { url, method: 'GET' as const, headers, requestFor, pipelining: 1, connections };
      note(`${label}, ${connections} connections: ${options.warmupS} s warm-up, ${options.durationS} s measured`);
      const warm = await runLoad({ ...load, durationS: options.warmupS });
      if (failuresOf(warm) !== '') outcome.problems.push(`${target} warm-up: ${failuresOf(warm)}`);
      const createdBefore = background.ids.length;
      const { result, cpu, window } = await withCpu(system, () => runLoad({ ...load, durationS: options.durationS }));
      const createdPerS = (background.ids.length - createdBefore) / result.durationS;
      if (failuresOf(result) !== '') outcome.problems.push(`${target}: ${failuresOf(result)}`);
      outcome.measurements.push({ target, label, connections, result, cpu, window, createdPerS });
    }

    // Latency by load: polls through the gateway at fixed rates (open loop), the background jobs still running.
    const ceiling = Math.max(...outcome.measurements.filter((entry) => entry.target !== 'direct').map((entry) => entry.result.rps));
    const rates = RATES.filter((rate) => rate <= 0.9 * ceiling);
    const top = Math.round((0.9 * ceiling) / 50) * 50;
    if (rates.length < RATES.length && top > 0 && !rates.includes(top)) rates.push(top);
    rates.sort((a, b) => a - b);
    const send = () =>
      client.request('GET', `${system.gatewayUrl}${nextPath()}`, { 'x-api-key': system.apiKey }, undefined, 10_000).then(
        (answer) => answer.status === 200,
        () => false,
      );
    for (const rate of rates) {
      note(`gateway → jobs service at ${rate} polls/s (open loop): ${options.warmupS} s warm-up, ${options.durationS} s measured`);
      await runFixedRate({ rate, durationS: options.warmupS, send });
      const createdBefore = background.ids.length;
      const { result, cpu } = await withCpu(system, () =>
        runFixedRate({ rate, durationS: options.durationS, send, label: `status-poll-${rate}` }),
      );
      if (result.failed > 0 || result.unfinished > 0)
        outcome.problems.push(`${rate} polls/s: ${result.failed} failed, ${result.unfinished} unanswered`);
      outcome.levels.push({ rate, result, cpu, createdPerS: (background.ids.length - createdBefore) / result.durationS });
    }

    const seconds = await background.stop();
    // One worker completes far fewer than 50 jobs/s: the backlog is not waited for, but no job may have failed.
    const counts = await countJobs(system.pool, background.ids);
    if (counts.failed > 0)
      outcome.problems.push(`${counts.failed} background jobs failed: ${(await failureReasons(system.pool, background.ids)).join('; ')}`);
    outcome.background = { created: background.ids.length, seconds, counts };
    outcome.problems.push(...exitedProcesses(system));
    await system.stopServices();
    return outcome;
  });
}

export async function statusPoll(options: BenchOptions, command: string): Promise<boolean> {
  const machine = describeMachine();
  const started = performance.now();
  const outcome = await measure(options);
  const loadAfter = loadAverage();

  printRunHeading('status-poll', command, machine, started, loadAfter);
  print(
    `each measurement: ${options.warmupS} s warm-up (discarded), then ${options.durationS} s; ${outcome.seeded} completed jobs polled in turn`,
  );
  if (options.profile)
    print('NOTE: the gateway and the jobs service ran under the CPU profiler, which slows them: compare runs without --profile');
  report(outcome);
  if (outcome.problems.length > 0) {
    print();
    print(`FAILED: the figures are not valid: ${outcome.problems.slice(0, 10).join('; ')}`);
    return false;
  }
  return true;
}

const ms = (value: number) => fixed(value, 2);

function report(outcome: Outcome): void {
  const { measurements, background } = outcome;
  if (measurements.length > 0) {
    print();
    print(`### Status polls at saturation (closed loop), while ${BACKGROUND_JOBS_PER_S} jobs/s are created in the background`);
    print();
    print(
      table(
        [
          'target',
          'connections',
          'req/s',
          'p50 ms',
          'p90 ms',
          'p99 ms',
          'max ms',
          'requests',
          'errors/non-2xx',
          'jobs created/s meanwhile',
        ],
        measurements.map(({ label, connections, result, createdPerS }) => [
          label,
          String(connections),
          thousands(result.rps),
          ...latencyCells(result.latencyMs),
          thousands(result.requests),
          `${result.errors + result.timeouts}/${result.non2xx}`,
          fixed(createdPerS, 1),
        ]),
      ),
    );
    const gateway = measurements.find((entry) => entry.target === 'gateway');
    const direct = measurements.find((entry) => entry.target === 'direct');
    if (gateway && direct) {
      print();
      print(
        `gateway/direct throughput ${fixed(gateway.result.rps / direct.result.rps, 2)}× · added by the gateway: p50 +${ms(gateway.result.latencyMs.p50 - direct.result.latencyMs.p50)} ms, ` +
          `p99 +${ms(gateway.result.latencyMs.p99 - direct.result.latencyMs.p99)} ms (${gateway.connections} connections each)`,
      );
    }
    if (background) {
      print(
        `background: ${thousands(background.created)} jobs created in ${fixed(background.seconds, 0)} s (${fixed(background.created / background.seconds, 1)}/s); ` +
          `by the end ${thousands(background.counts.completed)} completed, ${background.counts.failed} failed, ${thousands(background.counts.unfinished)} still queued for the one worker`,
      );
    }
    if (outcome.levels.length > 0) {
      print();
      print('### Latency by load: polls through the gateway at fixed rates (open loop), the background jobs still running');
      print();
      print(
        table(
          ['offered polls/s', ...FIXED_RATE_HEADERS, 'jobs created/s meanwhile'],
          outcome.levels.map(({ result, createdPerS }) => [
            thousands(result.offeredRate),
            ...fixedRateCells(result),
            fixed(createdPerS, 1),
          ]),
        ),
      );
    }
    if (gateway) {
      const best = Math.max(...measurements.filter((entry) => entry.target !== 'direct').map((entry) => entry.result.rps));
      print();
      print('### Targets (issues 5 and 9), through the gateway');
      print();
      print(
        table(
          ['target', 'measured', 'met'],
          [
            [
              `≥ ${thousands(TARGET_RPS)} status polls/s`,
              `${thousands(best)} req/s (best of ${measurements
                .filter((entry) => entry.target !== 'direct')
                .map((entry) => entry.connections)
                .join(' and ')} connections)`,
              best >= TARGET_RPS ? 'yes' : 'NO',
            ],
            [
              `p99 ≤ ${TARGET_P99_MS} ms (${gateway.connections} connections, at saturation)`,
              `${ms(gateway.result.latencyMs.p99)} ms`,
              gateway.result.latencyMs.p99 <= TARGET_P99_MS ? 'yes' : 'NO',
            ],
          ],
          ['left', 'right', 'left'],
        ),
      );
    }
    print();
    print('### CPU time by process');
    print();
    print(
      cpuTables(
        [
          ...measurements.map(({ label, connections, result, cpu }) => ({
            label: `${label}, ${connections} conn.`,
            delta: cpu,
            units: result.requests,
          })),
          ...outcome.levels.map(({ rate, result, cpu }) => ({
            label: `gateway → jobs service, ${thousands(rate)} polls/s`,
            delta: cpu,
            units: result.ok,
          })),
        ],
        { unit: 'status request (background job work included)', scale: 'µs' },
        ['runner', 'gateway', 'jobs', 'postgres', 'newsApi', 'newsWorker', 'fakes', 'kafka'],
      ),
    );
    print('("others" is busy time outside the processes listed: other work on the machine)');
  }
  for (const [service, target] of [
    ['gateway', 'gateway'],
    ['jobs', 'direct'],
  ] as const) {
    const file = outcome.profiles[service];
    const measurement = measurements.find((entry) => entry.target === target);
    if (file === undefined || measurement === undefined) continue;
    printProfile(
      `Where the ${SERVICE_LABELS[service]}'s CPU time goes (${measurement.label}, ${measurement.connections} connections)`,
      file,
      measurement.window,
    );
  }
}
