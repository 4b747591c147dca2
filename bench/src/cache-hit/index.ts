// Scenario cache-hit: a news request answered from the 7-day result cache, through the real gateway and the real
// news API (its Postgres cache lookup included), at fixed rates (open loop: 1,000 req/s is the target's load)
// and closed-loop at saturation. See docs/benchmarks.md.
import { performance } from 'node:perf_hooks';
import { identityKey, signIdentity } from '@fin/http';
import { totalMs } from '../lib/cpu';
import { createHttpClient } from '../lib/http';
import { failuresOf, runLoad, type LoadResult } from '../lib/load';
import { describeMachine } from '../lib/machine';
import { NEWS_PATH, submitAndPoll, type NewsRequestBody } from '../lib/news-jobs';
import type { BenchOptions } from '../lib/options';
import { fixed, latencyCells, note, print, table, thousands } from '../lib/output';
import { withCleanup } from '../lib/processes';
import { printProfile } from '../lib/profile-report';
import { FIXED_RATE_HEADERS, fixedRateCells, runFixedRate, type FixedRateResult } from '../lib/rate';
import {
  BENCH_LIMIT_PER_MINUTE,
  type CpuRow,
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

const TARGET_RATE = 1000;
const TARGET_P99_MS = 5;
/** Fixed rates of the load table; those above 90 % of the saturation rate are replaced by that rate (TARGET_RATE stays). */
const RATES = [250, 500, 1000, 2000];
const SATURATION_CONNECTIONS = [10, 50];
const REQUEST: NewsRequestBody = { symbols: ['AAPL', 'MSFT'], n: 5, language: 'en' };

interface Saturation {
  /** Through the gateway, or straight to the news API with signed identity headers. */
  target: 'gateway' | 'direct';
  connections: number;
  result: LoadResult;
  cpu: SystemCpuDelta;
  window: Window;
}

interface Level {
  rate: number;
  result: FixedRateResult;
  cpu: SystemCpuDelta;
  window: Window;
}

interface Outcome {
  problems: string[];
  bodyBytes: number;
  saturation: Saturation[];
  levels: Level[];
  profiles: Partial<Record<ServiceName, string>>;
}

async function measure(options: BenchOptions): Promise<Outcome> {
  return withCleanup(async (cleanup) => {
    const profiled: ServiceName[] = options.profile ? ['gateway', 'newsApi'] : [];
    const system = await startBenchSystem(cleanup, { scenario: 'cache-hit', profile: profiled });
    const client = createHttpClient({ maxSockets: 256 });
    cleanup.add('close the HTTP client', () => {
      client.close();
      return Promise.resolve();
    });
    const outcome: Outcome = { problems: [], bodyBytes: 0, saturation: [], levels: [], profiles: system.profiles };

    // Warm the cache with one completed job, then check the answer of a hit.
    note(`warming the cache: one job for ${JSON.stringify(REQUEST)}, polled until completed`);
    await submitAndPoll({ client, url: system.gatewayUrl, apiKey: system.apiKey }, REQUEST, { timeoutMs: 120_000 });
    const url = `${system.gatewayUrl}${NEWS_PATH}`;
    const headers = { 'content-type': 'application/json', 'x-api-key': system.apiKey };
    const body = JSON.stringify(REQUEST);
    const hit = await client.request('POST', url, headers, body);
    const parsed = JSON.parse(hit.body) as { from_cache?: boolean; news?: unknown[] };
    if (hit.status !== 200 || parsed.from_cache !== true || !String(hit.headers['cache-status'] ?? '').includes('hit')) {
      throw new Error(
        `the second request was not a cache hit (${hit.status}, Cache-Status: ${String(hit.headers['cache-status'])}): ${hit.body.slice(0, 300)}`,
      );
    }
    if (hit.headers['x-ratelimit-limit'] !== String(BENCH_LIMIT_PER_MINUTE)) {
      throw new Error(`the gateway's answer lacks the raised rate limit (X-RateLimit-Limit: ${String(hit.headers['x-ratelimit-limit'])})`);
    }
    const expected = hit.body;
    outcome.bodyBytes = Buffer.byteLength(expected);
    const load = { url, method: 'POST' as const, headers, body, expectBody: expected, pipelining: 1 };

    for (const connections of SATURATION_CONNECTIONS) {
      note(`saturation: ${connections} connections, closed loop: ${options.warmupS} s warm-up, ${options.durationS} s measured`);
      const warm = await runLoad({ ...load, connections, durationS: options.warmupS });
      if (failuresOf(warm) !== '') outcome.problems.push(`saturation warm-up, ${connections} connections: ${failuresOf(warm)}`);
      const { result, cpu, window } = await withCpu(system, () => runLoad({ ...load, connections, durationS: options.durationS }));
      if (failuresOf(result) !== '') outcome.problems.push(`saturation, ${connections} connections: ${failuresOf(result)}`);
      outcome.saturation.push({ target: 'gateway', connections, result, cpu, window });
    }

    // The gateway's overhead against the real news service (issue 9's definition): the same cache hit straight
    // to the news API, signed the way the gateway signs: anew for every request (a service accepts each nonce once).
    const directUrl = `${system.newsUrl}${NEWS_PATH}`;
    const identity = {
      requestId: 'bench-cache-hit-direct',
      caller: { tenantId: system.tenantId, keyId: system.keyId, scopes: system.keyScopes },
    };
    const newsKey = identityKey(system.secret, 'news');
    const directHeaders = () => ({
      'content-type': 'application/json',
      ...signIdentity(identity, newsKey, { method: 'POST', path: NEWS_PATH, body }),
    });
    const signedEach = () => ({ path: NEWS_PATH, headers: directHeaders() });
    const directAnswer = await client.request('POST', directUrl, directHeaders(), body);
    if (directAnswer.status !== 200 || directAnswer.body !== expected)
      throw new Error(`the news API answered the direct request ${directAnswer.status}: ${directAnswer.body.slice(0, 300)}`);
    const unsigned = await client.request('POST', directUrl, { 'content-type': 'application/json' }, body);
    if (unsigned.status !== 401) throw new Error(`the news API answered ${unsigned.status} to an unsigned request; expected 401`);
    {
      const connections = SATURATION_CONNECTIONS[0] ?? 10;
      note(
        `saturation, straight to the news API: ${connections} connections, closed loop: ${options.warmupS} s warm-up, ${options.durationS} s measured`,
      );
      const direct = { ...load, url: directUrl, connections };
      const warm = await runLoad({ ...direct, requestFor: signedEach, durationS: options.warmupS });
      if (failuresOf(warm) !== '') outcome.problems.push(`direct warm-up: ${failuresOf(warm)}`);
      const { result, cpu, window } = await withCpu(system, () =>
        runLoad({ ...direct, requestFor: signedEach, durationS: options.durationS }),
      );
      if (failuresOf(result) !== '') outcome.problems.push(`direct saturation: ${failuresOf(result)}`);
      outcome.saturation.push({ target: 'direct', connections, result, cpu, window });
    }

    const ceiling = Math.max(...outcome.saturation.filter((entry) => entry.target === 'gateway').map((entry) => entry.result.rps));
    const rates = RATES.filter((rate) => rate === TARGET_RATE || rate <= 0.9 * ceiling);
    if (rates.length < RATES.length) {
      const top = Math.round((0.9 * ceiling) / 50) * 50;
      if (!rates.includes(top)) rates.push(top);
      rates.sort((a, b) => a - b);
    }
    const send = () =>
      client.request('POST', url, headers, body, 10_000).then(
        (answer) => answer.status === 200 && answer.body === expected,
        () => false,
      );
    for (const rate of rates) {
      note(`fixed rate ${rate} req/s (open loop): ${options.warmupS} s warm-up, ${options.durationS} s measured`);
      await runFixedRate({ rate, durationS: options.warmupS, send });
      const { result, cpu, window } = await withCpu(system, () =>
        runFixedRate({ rate, durationS: options.durationS, send, label: `cache-hit-${rate}` }),
      );
      if (result.failed > 0 || result.unfinished > 0)
        outcome.problems.push(`${rate} req/s: ${result.failed} failed or unexpected answers, ${result.unfinished} unanswered`);
      outcome.levels.push({ rate, result, cpu, window });
    }

    outcome.problems.push(...exitedProcesses(system));
    await system.stopServices();
    return outcome;
  });
}

export async function cacheHit(options: BenchOptions, command: string): Promise<boolean> {
  const machine = describeMachine();
  const started = performance.now();
  const outcome = await measure(options);
  const loadAfter = loadAverage();

  printRunHeading('cache-hit', command, machine, started, loadAfter);
  print(
    `each measurement: ${options.warmupS} s warm-up (discarded), then ${options.durationS} s; answer: a ${thousands(outcome.bodyBytes)}-byte cache hit (5 news items)`,
  );
  if (options.profile)
    print('NOTE: the gateway and the news API ran under the CPU profiler, which slows them: compare runs without --profile');
  report(outcome);
  if (outcome.problems.length > 0) {
    print();
    print(`FAILED: the figures are not valid: ${outcome.problems.join('; ')}`);
    return false;
  }
  return true;
}

const ms = (value: number) => fixed(value, 2);

function report(outcome: Outcome): void {
  if (outcome.levels.length > 0) {
    print();
    print('### Latency by load: fixed rates, open loop (requests start on schedule, answered or not)');
    print();
    print(
      table(
        ['offered req/s', ...FIXED_RATE_HEADERS],
        outcome.levels.map(({ result }) => [thousands(result.offeredRate), ...fixedRateCells(result)]),
      ),
    );
  }
  if (outcome.saturation.length > 0) {
    print();
    print('### Saturation: closed loop (each connection sends its next request when the last is answered)');
    print();
    print(
      table(
        ['target', 'connections', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'requests', 'errors/non-2xx/bad body'],
        outcome.saturation.map(({ target, connections, result }) => [
          target === 'gateway' ? 'gateway → news API' : 'news API, direct (signed identity headers)',
          String(connections),
          thousands(result.rps),
          ...latencyCells(result.latencyMs),
          thousands(result.requests),
          `${result.errors + result.timeouts}/${result.non2xx}/${result.mismatches}`,
        ]),
      ),
    );
  }
  const viaGateway = outcome.saturation.find((entry) => entry.target === 'gateway');
  const straight = outcome.saturation.find((entry) => entry.target === 'direct');
  if (viaGateway !== undefined && straight !== undefined) {
    const gatewayUs = (totalMs(viaGateway.cpu.byGroup.gateway) * 1000) / Math.max(1, viaGateway.result.requests);
    const newsUs = (totalMs(straight.cpu.byGroup.newsApi) * 1000) / Math.max(1, straight.result.requests);
    print();
    print(
      `gateway overhead against the real news service (cache hit, ${viaGateway.connections} connections): gateway/direct throughput ${fixed(viaGateway.result.rps / straight.result.rps, 2)}× · ` +
        `added p50 +${ms(viaGateway.result.latencyMs.p50 - straight.result.latencyMs.p50)} ms · CPU per request: gateway ${fixed(gatewayUs, 0)} µs, news API (direct) ${fixed(newsUs, 0)} µs ` +
        `(with a core each: ${fixed(newsUs / gatewayUs, 2)}× the service's rate)`,
    );
  }
  const target = outcome.levels.find((level) => level.rate === TARGET_RATE);
  if (target !== undefined) {
    print();
    print('### Target (issue 5)');
    print();
    print(
      table(
        ['target', 'measured', 'met'],
        [
          [
            `cache hit through the gateway: p99 ≤ ${TARGET_P99_MS} ms at ${thousands(TARGET_RATE)} req/s`,
            `${ms(target.result.latencyMs.p99)} ms`,
            target.result.latencyMs.p99 <= TARGET_P99_MS ? 'yes' : 'NO',
          ],
        ],
        ['left', 'right', 'left'],
      ),
    );
  }
  const rows: CpuRow[] = [
    ...outcome.levels.map(({ rate, result, cpu }) => ({ label: `${thousands(rate)} req/s`, delta: cpu, units: result.ok })),
    ...outcome.saturation.map(({ target, connections, result, cpu }) => ({
      label: `saturation, ${target === 'gateway' ? 'gateway' : 'direct'}, ${connections} connections`,
      delta: cpu,
      units: result.requests,
    })),
  ];
  if (rows.length > 0) {
    print();
    print('### CPU time by process');
    print();
    print(cpuTables(rows, { unit: 'request', scale: 'µs' }, ['runner', 'gateway', 'newsApi', 'postgres', 'jobs', 'newsWorker', 'kafka']));
    print('("others" is busy time outside the processes listed: other work on the machine)');
  }
  const saturated = outcome.saturation[0];
  for (const service of ['gateway', 'newsApi'] as const) {
    const file = outcome.profiles[service];
    if (file === undefined || saturated === undefined) continue;
    printProfile(
      `Where the ${SERVICE_LABELS[service]}'s CPU time goes (saturation, ${saturated.connections} connections)`,
      file,
      saturated.window,
    );
  }
}
