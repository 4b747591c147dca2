// Scenario npm-start: the whole system in one process, as `npm start` runs it (services/standalone's compiled
// output with the image's NODE_OPTIONS, the in-process event bus, the offline AI engine) on a fresh database of
// the local PostgreSQL. Measures cache hits and status polls through its gateway at saturation (10 connections)
// and cache hits at 1,000 req/s. Targets (issue 16): ≥ 5,000 cache hits/s at 10 connections, p99 ≤ 5 ms.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createPool } from '@fin/db';
import { createTestDatabase } from '@fin/testing';
import { cpuSnapshot, totalMs, type CpuTime } from '../lib/cpu';
import { createHttpClient } from '../lib/http';
import { failuresOf, runLoad, type LoadResult } from '../lib/load';
import { describeMachine } from '../lib/machine';
import { NEWS_PATH, statusPath, submitAndPoll, type NewsRequestBody } from '../lib/news-jobs';
import type { BenchOptions } from '../lib/options';
import { fixed, note, print, table, thousands } from '../lib/output';
import { BENCH_LOG_LEVEL, freePort, REPO_ROOT, startNodeProcess, waitUntilReady, withCleanup } from '../lib/processes';
import { FIXED_RATE_HEADERS, fixedRateCells, runFixedRate, type FixedRateResult } from '../lib/rate';
import { admin, BENCH_LIMIT_PER_MINUTE, loadAverage, printRunHeading } from '../lib/system';

const TARGET_RPS = 5_000;
const TARGET_P99_MS = 5;
const TARGET_RATE = 1_000;
const CONNECTIONS = 10;
const TENANT = 'bench';
const REQUEST: NewsRequestBody = { symbols: ['AAPL', 'MSFT'], n: 5, language: 'en' };

interface Measurement {
  label: string;
  result: LoadResult;
  /** CPU of the process and of its Postgres sessions over the measurement. */
  processMs: number;
  postgresMs: number;
}

interface Outcome {
  problems: string[];
  measurements: Measurement[];
  rate?: FixedRateResult;
}

async function measure(options: BenchOptions): Promise<Outcome> {
  return withCleanup(async (cleanup) => {
    note('creating a database and starting the compiled standalone system (node services/standalone/dist/main.js)');
    const database = await createTestDatabase();
    cleanup.add('drop the database', () => database.drop());
    const pool = createPool({ connectionString: database.url, applicationName: 'bench', max: 2 });
    cleanup.add('close the database pool', () => pool.end());
    const dataDir = mkdtempSync(path.join(tmpdir(), 'fin-bench-npm-start-'));
    cleanup.add('remove the data folder', () => {
      rmSync(dataDir, { recursive: true, force: true });
      return Promise.resolve();
    });
    const port = await freePort();
    const system = startNodeProcess({
      name: 'npm start',
      entry: 'dist/main.js',
      cwd: path.join(REPO_ROOT, 'services/standalone'),
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: database.url, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: BENCH_LOG_LEVEL },
      inheritEnv: false,
    });
    cleanup.add('stop the system', () => system.stop());
    const url = `http://127.0.0.1:${port}`;
    await waitUntilReady(system, `${url}/readyz`, 120_000);

    await admin(database.url, ['tenants', 'create', TENANT]);
    for (const product of ['news', 'jobs']) {
      await admin(database.url, [
        'limits',
        'set',
        '--tenant',
        TENANT,
        '--product',
        product,
        '--per-minute',
        String(BENCH_LIMIT_PER_MINUTE),
      ]);
    }
    const key = JSON.parse(
      await admin(database.url, ['keys', 'create', '--tenant', TENANT, '--scopes', 'news', '--name', 'bench', '--json']),
    ) as { api_key: string };

    const client = createHttpClient({ maxSockets: 256 });
    cleanup.add('close the HTTP client', () => {
      client.close();
      return Promise.resolve();
    });
    note(`warming the cache: one job for ${JSON.stringify(REQUEST)}, polled until completed`);
    const warmed = await submitAndPoll({ client, url, apiKey: key.api_key }, REQUEST, { timeoutMs: 120_000 });
    const headers = { 'content-type': 'application/json', 'x-api-key': key.api_key };
    const body = JSON.stringify(REQUEST);
    const hit = await client.request('POST', `${url}${NEWS_PATH}`, headers, body);
    if (hit.status !== 200 || (JSON.parse(hit.body) as { from_cache?: boolean }).from_cache !== true) {
      throw new Error(`the second request was not a cache hit (${hit.status}): ${hit.body.slice(0, 300)}`);
    }
    const poll = await client.request('GET', `${url}${statusPath(warmed.jobId)}`, { 'x-api-key': key.api_key });
    if (poll.status !== 200) throw new Error(`the status poll answered ${poll.status}: ${poll.body.slice(0, 300)}`);

    const postgresPids = async () =>
      (
        await pool.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name <> 'bench'", [
          database.name,
        ])
      ).rows.map((row) => row.pid);
    const sum = (snapshot: Map<number, CpuTime>, pids: readonly number[]) =>
      pids.reduce((total, pid) => total + totalMs(snapshot.get(pid) ?? { userMs: 0, systemMs: 0 }), 0);
    const outcome: Outcome = { problems: [], measurements: [] };
    const loads = [
      {
        label: 'cache hit (POST /api/products/news)',
        load: { url: `${url}${NEWS_PATH}`, method: 'POST' as const, headers, body, expectBody: hit.body },
      },
      {
        label: 'status poll (GET /api/jobs/news/{id}/status)',
        load: {
          url: `${url}${statusPath(warmed.jobId)}`,
          method: 'GET' as const,
          headers: { 'x-api-key': key.api_key },
          expectBody: poll.body,
        },
      },
    ];
    for (const { label, load } of loads) {
      note(`${label}: ${CONNECTIONS} connections, closed loop: ${options.warmupS} s warm-up, ${options.durationS} s measured`);
      const warm = await runLoad({ ...load, connections: CONNECTIONS, pipelining: 1, durationS: options.warmupS });
      if (failuresOf(warm) !== '') outcome.problems.push(`${label} warm-up: ${failuresOf(warm)}`);
      const pids = await postgresPids();
      const before = cpuSnapshot([system.pid, ...pids]);
      const result = await runLoad({ ...load, connections: CONNECTIONS, pipelining: 1, durationS: options.durationS });
      const after = cpuSnapshot([system.pid, ...pids]);
      if (failuresOf(result) !== '') outcome.problems.push(`${label}: ${failuresOf(result)}`);
      outcome.measurements.push({
        label,
        result,
        processMs: sum(after, [system.pid]) - sum(before, [system.pid]),
        postgresMs: sum(after, pids) - sum(before, pids),
      });
    }

    const send = () =>
      client.request('POST', `${url}${NEWS_PATH}`, headers, body, 10_000).then(
        (answer) => answer.status === 200 && answer.body === hit.body,
        () => false,
      );
    note(`cache hits at ${TARGET_RATE} req/s (open loop): ${options.warmupS} s warm-up, ${options.durationS} s measured`);
    await runFixedRate({ rate: TARGET_RATE, durationS: options.warmupS, send });
    outcome.rate = await runFixedRate({ rate: TARGET_RATE, durationS: options.durationS, send, label: 'npm-start-1000' });
    if (outcome.rate.failed > 0 || outcome.rate.unfinished > 0)
      outcome.problems.push(`${TARGET_RATE} req/s: ${outcome.rate.failed} failed, ${outcome.rate.unfinished} unanswered`);
    if (system.child.exitCode !== null || system.child.signalCode !== null) outcome.problems.push('the system exited during the run');
    return outcome;
  });
}

export async function npmStart(options: BenchOptions, command: string): Promise<boolean> {
  const machine = describeMachine();
  const started = performance.now();
  const outcome = await measure(options);
  printRunHeading('npm-start', command, machine, started, loadAverage());
  print(
    `one process (services/standalone/dist/main.js), in-process bus, offline AI; each measurement: ${options.warmupS} s warm-up, then ${options.durationS} s`,
  );
  print();
  print(
    table(
      ['measurement', 'connections', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'CPU µs/request, process', 'CPU µs/request, Postgres'],
      outcome.measurements.map(({ label, result, processMs, postgresMs }) => [
        label,
        String(CONNECTIONS),
        thousands(result.rps),
        fixed(result.latencyMs.p50, 2),
        fixed(result.latencyMs.p99, 2),
        fixed(result.latencyMs.max, 2),
        fixed((processMs * 1000) / Math.max(1, result.requests), 0),
        fixed((postgresMs * 1000) / Math.max(1, result.requests), 0),
      ]),
    ),
  );
  if (outcome.rate !== undefined) {
    print();
    print(table(['offered req/s', ...FIXED_RATE_HEADERS], [[thousands(outcome.rate.offeredRate), ...fixedRateCells(outcome.rate)]]));
  }
  const hits = outcome.measurements[0];
  if (hits !== undefined) {
    print();
    print('### Targets (issue 16)');
    print();
    const rows = [
      [
        `npm start: cache hits ≥ ${thousands(TARGET_RPS)} req/s at ${CONNECTIONS} connections`,
        `${thousands(hits.result.rps)} req/s`,
        hits.result.rps >= TARGET_RPS ? 'yes' : 'NO',
      ],
      [
        `npm start: cache hit p99 ≤ ${TARGET_P99_MS} ms at ${CONNECTIONS} connections`,
        `${fixed(hits.result.latencyMs.p99, 2)} ms`,
        hits.result.latencyMs.p99 <= TARGET_P99_MS ? 'yes' : 'NO',
      ],
    ];
    print(table(['target', 'measured', 'met'], rows, ['left', 'right', 'left']));
  }
  if (outcome.problems.length > 0) {
    print();
    print(`FAILED: the figures are not valid: ${outcome.problems.join('; ')}`);
    return false;
  }
  return true;
}
