// Scenario npm-start: the whole system in one process, as `npm start` runs it (services/standalone's compiled
// output with the image's NODE_OPTIONS, the in-process event bus, the offline AI engine) on a fresh database of
// the local PostgreSQL, against a baseline: a minimal express 5 + pg monolith doing the same look-ups on the same
// database and remembering a key for a second, as a user's would (monolith.ts). Both listen on port 0 (API and
// metrics) and are found by the address they print, so the run can go on beside a developer's `npm start`. Cache hits and status polls at saturation (10 connections, closed loop), the system and the
// monolith alternating round by round so that other work on the machine weighs on both alike; then cache hits at
// 1,000 req/s, and MCP job_status tool calls (npm start alone: their API calls go back into the gateway in memory).
// Targets (issue 36): the system's req/s ≥ 1.0× the monolith's for both, cache-hit p99 ≤ 3 ms at 1,000 req/s (open
// loop); and issue 28's ≤ 250 µs of process CPU per cache hit, cache-hit p99 ≤ 5 ms at 10 connections.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { isDeepStrictEqual } from 'node:util';
import { createPool } from '@fin/db';
import { createTestDatabase } from '@fin/testing';
import { cpuDelta, cpuSnapshot, totalMs } from '../lib/cpu';
import { createHttpClient } from '../lib/http';
import { failuresOf, runLoad, type LoadResult } from '../lib/load';
import { describeMachine } from '../lib/machine';
import { NEWS_PATH, statusPath, submitAndPoll, type NewsRequestBody } from '../lib/news-jobs';
import type { BenchOptions } from '../lib/options';
import { fixed, note, print, table, thousands } from '../lib/output';
import {
  BENCH_LOG_LEVEL,
  listeningUrl,
  REPO_ROOT,
  startNodeProcess,
  waitUntilReady,
  withCleanup,
  type NodeProcess,
} from '../lib/processes';
import { FIXED_RATE_HEADERS, fixedRateCells, runFixedRate, type FixedRateResult } from '../lib/rate';
import { admin, BENCH_LIMIT_PER_MINUTE, loadAverage, printRunHeading } from '../lib/system';

const TARGET_RATIO = 1.0;
const TARGET_CPU_US = 250;
const TARGET_P99_MS = 5;
const TARGET_RATE = 1_000;
const TARGET_RATE_P99_MS = 3;
const CONNECTIONS = 10;
/** Measurements of each target per load, alternating: system, monolith, system, monolith. */
const ROUNDS = 2;
const TENANT = 'bench';
const REQUEST: NewsRequestBody = { symbols: ['AAPL', 'MSFT'], n: 5, language: 'en' };
/** application_name of the monolith's pool (monolith.ts): its Postgres sessions are told from the system's by it. */
const MONOLITH_APPLICATION = 'bench-monolith';
const CACHE_HIT = 'cache hit (POST /api/products/news)';
const STATUS_POLL = 'status poll (GET /api/jobs/news/{id}/status)';

const TARGETS = ['npm start', 'monolith'] as const;
type Target = (typeof TARGETS)[number];

interface Measurement {
  label: string;
  target: Target;
  round: number;
  result: LoadResult;
  /** CPU of the target's process and of its Postgres sessions over the measurement. */
  processMs: number;
  postgresMs: number;
}

interface Outcome {
  problems: string[];
  measurements: Measurement[];
  /** Bytes of each target's answer to a cache hit. */
  hitBytes: Record<Target, number>;
  rate?: FixedRateResult;
  /** npm start's MCP tool calls (the monolith has no MCP server). */
  toolCalls?: { result: LoadResult; processMs: number; postgresMs: number };
}

/** The monolith (bench/dist/npm-start/monolith.js) on the system's database, once it answers. */
async function startMonolith(databaseUrl: string): Promise<{ monolith: NodeProcess; url: string }> {
  const monolith = startNodeProcess({
    name: 'monolith',
    entry: 'bench/dist/npm-start/monolith.js',
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, PORT: '0' },
    inheritEnv: false,
  });
  try {
    const url = await listeningUrl(monolith, /^listening on (http:\/\/\S+)$/m, 60_000);
    await waitUntilReady(monolith, `${url}/healthz`, 60_000);
    return { monolith, url };
  } catch (error) {
    await monolith.stop();
    throw error;
  }
}

/** Fails unless both answers carry the same JSON (key order and spacing aside). */
function checkSameAnswer(what: string, system: string, monolith: string): void {
  if (!isDeepStrictEqual(JSON.parse(system), JSON.parse(monolith)))
    throw new Error(`the monolith's ${what} differs from the system's:\n${system.slice(0, 600)}\n${monolith.slice(0, 600)}`);
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
    const system = startNodeProcess({
      name: 'npm start',
      entry: 'dist/main.js',
      cwd: path.join(REPO_ROOT, 'services/standalone'),
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: database.url,
        DATA_DIR: dataDir,
        PORT: '0',
        METRICS_PORT: '0',
        LOG_LEVEL: BENCH_LOG_LEVEL,
      },
      // For diagnosis: BENCH_NODE_FLAGS="--trace-gc" (with BENCH_KEEP_LOGS=1 to keep what the process prints).
      nodeFlags: (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter((flag) => flag !== ''),
      inheritEnv: false,
    });
    cleanup.add('stop the system', () => system.stop());
    // The banner (services/standalone/src/main.ts) names the API's address once the system listens.
    const url = await listeningUrl(system, /Financial Intelligence API\s+(http:\/\/\S+)/, 120_000);
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
    const pollHeaders = { 'x-api-key': key.api_key };
    const body = JSON.stringify(REQUEST);
    const hit = await client.request('POST', `${url}${NEWS_PATH}`, headers, body);
    if (hit.status !== 200 || (JSON.parse(hit.body) as { from_cache?: boolean }).from_cache !== true) {
      throw new Error(`the second request was not a cache hit (${hit.status}): ${hit.body.slice(0, 300)}`);
    }
    const poll = await client.request('GET', `${url}${statusPath(warmed.jobId)}`, pollHeaders);
    if (poll.status !== 200) throw new Error(`the status poll answered ${poll.status}: ${poll.body.slice(0, 300)}`);
    // An MCP tools/call of job_status: the MCP handler, then the tool's status and result reads through the gateway.
    const toolHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-api-key': key.api_key };
    const toolBody = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'job_status', arguments: { job_type: 'news', job_id: warmed.jobId } },
    });
    const tool = await client.request('POST', `${url}/mcp`, toolHeaders, toolBody);
    if (tool.status !== 200 || !tool.body.includes('"status":"completed"') || tool.body.includes('"isError":true')) {
      throw new Error(`the MCP tool call answered ${tool.status}: ${tool.body.slice(0, 300)}`);
    }

    note('starting the monolith (bench/dist/npm-start/monolith.js) on the same database');
    const { monolith, url: monolithUrl } = await startMonolith(database.url);
    cleanup.add('stop the monolith', () => monolith.stop());
    const monolithHit = await client.request('POST', `${monolithUrl}${NEWS_PATH}`, headers, body);
    const monolithPoll = await client.request('GET', `${monolithUrl}${statusPath(warmed.jobId)}`, pollHeaders);
    if (monolithHit.status !== 200 || monolithPoll.status !== 200)
      throw new Error(`the monolith answered ${monolithHit.status} to a cache hit and ${monolithPoll.status} to a status poll`);
    checkSameAnswer('cache hit', hit.body, monolithHit.body);
    checkSameAnswer('status poll', poll.body, monolithPoll.body);

    const targets: Record<Target, { url: string; pid: number }> = {
      'npm start': { url, pid: system.pid },
      monolith: { url: monolithUrl, pid: monolith.pid },
    };
    const postgresPids = async (target: Target) =>
      (
        await pool.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name <> 'bench' AND (application_name = $2) = $3",
          [database.name, MONOLITH_APPLICATION, target === 'monolith'],
        )
      ).rows.map((row) => row.pid);
    const outcome: Outcome = {
      problems: [],
      measurements: [],
      hitBytes: { 'npm start': Buffer.byteLength(hit.body), monolith: Buffer.byteLength(monolithHit.body) },
    };
    const loads = [
      {
        label: CACHE_HIT,
        load: { path: NEWS_PATH, method: 'POST' as const, headers, body },
        answers: { 'npm start': hit.body, monolith: monolithHit.body },
      },
      {
        label: STATUS_POLL,
        load: { path: statusPath(warmed.jobId), method: 'GET' as const, headers: pollHeaders },
        answers: { 'npm start': poll.body, monolith: monolithPoll.body },
      },
    ];
    for (const { label, load, answers } of loads) {
      note(
        `${label}: ${CONNECTIONS} connections, closed loop, ${ROUNDS} rounds of npm start then the monolith, each ${options.warmupS} s warm-up, ${options.durationS} s measured`,
      );
      for (let round = 1; round <= ROUNDS; round++) {
        for (const target of TARGETS) {
          const { url: base, pid } = targets[target];
          const { path: loadPath, ...request } = load;
          const spec = { ...request, url: `${base}${loadPath}`, expectBody: answers[target], connections: CONNECTIONS, pipelining: 1 };
          // A warm-up before every measurement: the other target's turn left this one idle long enough for its
          // pool to close idle connections, which would otherwise reopen (unaccounted sessions) while measured.
          const warm = await runLoad({ ...spec, durationS: options.warmupS });
          if (failuresOf(warm) !== '') outcome.problems.push(`${label}, ${target} warm-up: ${failuresOf(warm)}`);
          const pids = await postgresPids(target);
          const before = cpuSnapshot([pid, ...pids]);
          const result = await runLoad({ ...spec, durationS: options.durationS });
          const after = cpuSnapshot([pid, ...pids]);
          if (failuresOf(result) !== '') outcome.problems.push(`${label}, ${target}: ${failuresOf(result)}`);
          outcome.measurements.push({
            label,
            target,
            round,
            result,
            processMs: totalMs(cpuDelta(before, after, [pid])),
            postgresMs: totalMs(cpuDelta(before, after, pids)),
          });
        }
      }
    }

    note(
      `npm start: MCP job_status tool calls, ${CONNECTIONS} connections, closed loop: ${options.warmupS} s warm-up, ${options.durationS} s measured`,
    );
    const toolLoad = { url: `${url}/mcp`, method: 'POST' as const, headers: toolHeaders, body: toolBody, expectBody: tool.body };
    const toolWarm = await runLoad({ ...toolLoad, connections: CONNECTIONS, pipelining: 1, durationS: options.warmupS });
    if (failuresOf(toolWarm) !== '') outcome.problems.push(`MCP tool calls warm-up: ${failuresOf(toolWarm)}`);
    const toolPids = await postgresPids('npm start');
    const toolBefore = cpuSnapshot([system.pid, ...toolPids]);
    const toolResult = await runLoad({ ...toolLoad, connections: CONNECTIONS, pipelining: 1, durationS: options.durationS });
    const toolAfter = cpuSnapshot([system.pid, ...toolPids]);
    if (failuresOf(toolResult) !== '') outcome.problems.push(`MCP tool calls: ${failuresOf(toolResult)}`);
    outcome.toolCalls = {
      result: toolResult,
      processMs: totalMs(cpuDelta(toolBefore, toolAfter, [system.pid])),
      postgresMs: totalMs(cpuDelta(toolBefore, toolAfter, toolPids)),
    };

    const send = () =>
      client.request('POST', `${url}${NEWS_PATH}`, headers, body, 10_000).then(
        (answer) => answer.status === 200 && answer.body === hit.body,
        () => false,
      );
    note(`npm start: cache hits at ${TARGET_RATE} req/s (open loop): ${options.warmupS} s warm-up, ${options.durationS} s measured`);
    await runFixedRate({ rate: TARGET_RATE, durationS: options.warmupS, send });
    outcome.rate = await runFixedRate({ rate: TARGET_RATE, durationS: options.durationS, send, label: 'npm-start-1000' });
    if (outcome.rate.failed > 0 || outcome.rate.unfinished > 0)
      outcome.problems.push(`${TARGET_RATE} req/s: ${outcome.rate.failed} failed, ${outcome.rate.unfinished} unanswered`);
    for (const proc of [system, monolith])
      if (proc.child.exitCode !== null || proc.child.signalCode !== null) outcome.problems.push(`${proc.name} exited during the run`);
    return outcome;
  });
}

/** Every round of one target in one measurement, pooled: requests over the time measured. */
function pooled(measurements: readonly Measurement[]) {
  const requests = measurements.reduce((sum, { result }) => sum + result.requests, 0);
  const seconds = measurements.reduce((sum, { result }) => sum + result.durationS, 0);
  const processMs = measurements.reduce((sum, entry) => sum + entry.processMs, 0);
  return {
    rps: requests / Math.max(1e-9, seconds),
    processUsPerRequest: (processMs * 1000) / Math.max(1, requests),
    worstP99: Math.max(...measurements.map(({ result }) => result.latencyMs.p99)),
  };
}

function ratioRows(measurements: readonly Measurement[]): string[][] {
  return [CACHE_HIT, STATUS_POLL].map((label) => {
    const of = (target: Target) => measurements.filter((entry) => entry.label === label && entry.target === target);
    const [system, monolith] = [of('npm start'), of('monolith')];
    const ratio = pooled(system).rps / pooled(monolith).rps;
    const rounds = system.map((entry, index) => `${fixed(entry.result.rps / (monolith[index]?.result.rps ?? Number.NaN), 2)}×`);
    return [
      `${label}: npm start ÷ monolith ≥ ${TARGET_RATIO}×`,
      `${fixed(ratio, 2)}× (${thousands(pooled(system).rps)} ÷ ${thousands(pooled(monolith).rps)} req/s; by round ${rounds.join(', ')})`,
      ratio >= TARGET_RATIO ? 'yes' : 'NO',
    ];
  });
}

/** A measurement's rate, p50 and p99, and CPU per request of the process and of its Postgres sessions. */
function loadCells(result: LoadResult, processMs: number, postgresMs: number): string[] {
  const perRequest = (ms: number) => fixed((ms * 1000) / Math.max(1, result.requests), 0);
  return [
    thousands(result.rps),
    fixed(result.latencyMs.p50, 2),
    fixed(result.latencyMs.p99, 2),
    perRequest(processMs),
    perRequest(postgresMs),
  ];
}

export async function npmStart(options: BenchOptions, command: string): Promise<boolean> {
  const machine = describeMachine();
  const started = performance.now();
  const outcome = await measure(options);
  printRunHeading('npm-start', command, machine, started, loadAverage());
  print(
    `npm start: one process (services/standalone/dist/main.js), in-process bus, offline AI; monolith: express 5 + pg, the same look-ups (bench/src/npm-start/monolith.ts)`,
  );
  print(
    `${CONNECTIONS} connections, closed loop, ${ROUNDS} rounds alternating npm start and the monolith; each measurement: ${options.warmupS} s warm-up, then ${options.durationS} s; a cache hit is ${thousands(outcome.hitBytes['npm start'])} bytes from npm start, ${thousands(outcome.hitBytes.monolith)} from the monolith`,
  );
  print();
  print(
    table(
      ['measurement', 'target', 'round', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/request, process', 'CPU µs/request, Postgres'],
      outcome.measurements.map(({ label, target, round, result, processMs, postgresMs }) => [
        label,
        target,
        String(round),
        ...loadCells(result, processMs, postgresMs),
      ]),
      ['left', 'left', 'right'],
    ),
  );
  if (outcome.toolCalls !== undefined) {
    const { result, processMs, postgresMs } = outcome.toolCalls;
    print();
    print('npm start, MCP tools/call of job_status (the tool reads the status and the result through the gateway, in memory):');
    print();
    print(
      table(
        ['connections', 'calls/s', 'p50 ms', 'p99 ms', 'CPU µs/call, process', 'CPU µs/call, Postgres'],
        [[String(CONNECTIONS), ...loadCells(result, processMs, postgresMs)]],
      ),
    );
  }
  if (outcome.rate !== undefined) {
    print();
    print('npm start, cache hits at a fixed rate (open loop):');
    print();
    print(table(['offered req/s', ...FIXED_RATE_HEADERS], [[thousands(outcome.rate.offeredRate), ...fixedRateCells(outcome.rate)]]));
  }
  const hits = outcome.measurements.filter(({ label, target }) => label === CACHE_HIT && target === 'npm start');
  if (hits.length > 0) {
    const { worstP99, processUsPerRequest } = pooled(hits);
    print();
    print('### Ratio and targets (issues 28 and 36)');
    print();
    const rows = [
      ...ratioRows(outcome.measurements),
      [
        `npm start: cache hit p99 ≤ ${TARGET_P99_MS} ms at ${CONNECTIONS} connections`,
        `${fixed(worstP99, 2)} ms (worst round)`,
        worstP99 <= TARGET_P99_MS ? 'yes' : 'NO',
      ],
      [
        `npm start: process CPU ≤ ${TARGET_CPU_US} µs per cache hit`,
        `${fixed(processUsPerRequest, 0)} µs`,
        processUsPerRequest <= TARGET_CPU_US ? 'yes' : 'NO',
      ],
      ...(outcome.rate === undefined
        ? []
        : [
            [
              `npm start: cache hit p99 ≤ ${TARGET_RATE_P99_MS} ms at ${thousands(TARGET_RATE)} req/s (open loop)`,
              `${fixed(outcome.rate.latencyMs.p99, 2)} ms (max ${fixed(outcome.rate.latencyMs.max, 2)} ms)`,
              outcome.rate.latencyMs.p99 <= TARGET_RATE_P99_MS ? 'yes' : 'NO',
            ],
          ]),
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
