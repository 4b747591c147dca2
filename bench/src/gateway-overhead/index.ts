// Scenario gateway-overhead: a cache-hit news request through the real gateway vs the same request sent
// straight to the service, with an empty express 5 handler as the ceiling, measured side by side in one run.
// See docs/benchmarks.md for the topology and how to read the figures.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { createKey, createTenant, setLimitOverride } from '@fin/api-keys';
import { createPool, type Pool } from '@fin/db';
import { identityKey, signIdentity } from '@fin/http';
import { createTestDatabase } from '@fin/testing';
import { cpuDelta, cpuSnapshot, machineCpu, ownCpuTime, subtract, totalMs, type CpuTime, type MachineCpu } from '../lib/cpu';
import { failuresOf, runLoad, type LoadResult } from '../lib/load';
import { describeMachine, formatMachine } from '../lib/machine';
import type { BenchOptions } from '../lib/options';
import { fixed, latencyCells, note, print, table, thousands } from '../lib/output';
import { BENCH_LOG_LEVEL, Cleanup, REPO_ROOT, freePort, startNodeProcess, waitUntilReady, type NodeProcess } from '../lib/processes';
import { summariseProfile } from '../lib/profile';
import { NEWS_PATH, NEWS_REQUEST, NEWS_RESPONSE_BODY } from './fixture';

const TARGETS = ['bare', 'direct', 'gateway', 'gatewayNoLimit'] as const;
type Target = (typeof TARGETS)[number];

const TARGET_LABELS: Record<Target, string> = {
  bare: 'empty express 5 handler (ceiling)',
  direct: 'news stand-in, direct',
  gateway: 'gateway → news stand-in',
  gatewayNoLimit: 'gateway without rate limiting → news stand-in',
};

type Server = 'bare' | 'news' | 'gateway' | 'gatewayNoLimit';
const SERVER_LABELS: Record<Server, string> = {
  bare: 'bare express',
  news: 'news stand-in',
  gateway: 'gateway',
  gatewayNoLimit: 'gateway without rate limiting',
};

/** The tenant's news limit: the largest override the admin functions accept, far above what a run sends. */
const NEWS_LIMIT = 1_000_000;
/** The clock skew the stand-in allows (the services' default). */
const DIRECT_SIGNATURE_VALIDITY_MS = 30_000;
const TARGET_P50_ADDED_MS = 1;
const TARGET_THROUGHPUT_RATIO = 0.5;
/** The gateway's own CPU per request it proxies, at saturation (issue 36). */
const TARGET_GATEWAY_CPU_US = 120;
/** Connections of the third load level (after 1 and --connections). */
const CROWD_CONNECTIONS = 50;

type ModeId = 'latency' | 'throughput' | 'crowd';
interface Mode {
  id: ModeId;
  title: string;
  connections: number;
}

/** With --profile: which servers run under --cpu-prof, and the measurement whose samples are summarised. */
const PROFILED: readonly { server: Server; mode: ModeId; target: Target }[] = [
  { server: 'gateway', mode: 'throughput', target: 'gateway' },
  { server: 'news', mode: 'throughput', target: 'direct' },
];

const CPU_GROUPS = ['loadGenerator', 'bare', 'news', 'gateway', 'postgres'] as const;
type CpuGroup = (typeof CPU_GROUPS)[number];
const CPU_LABELS: Record<CpuGroup, string> = {
  loadGenerator: 'load generator',
  bare: 'bare express',
  news: 'news stand-in',
  gateway: 'gateway',
  postgres: "gateway's Postgres sessions",
};
const SERVER_GROUPS = ['bare', 'news', 'gateway', 'postgres'] as const satisfies readonly CpuGroup[];

interface Measurement {
  mode: ModeId;
  target: Target;
  result: LoadResult;
  /** CPU time per process (group) during the measurement. */
  cpu: Record<CpuGroup, CpuTime>;
  /** The whole machine during the measurement (null where /proc/stat cannot be read). */
  machine: { busyMs: number; stealMs: number; wallMs: number } | null;
  /** Monotonic microseconds (the clock of CPU profiles). */
  window: { fromUs: number; toUs: number };
}

const NS_PER_US = 1000n;
const nowUs = () => Number(process.hrtime.bigint() / NS_PER_US);

/** The Postgres sessions of the gateway processes (the real one and the variant). */
async function gatewayBackendPids(pool: Pool, database: string): Promise<number[]> {
  const { rows } = await pool.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name IN ('gateway', 'gateway-variant')",
    [database],
  );
  return rows.map((row) => row.pid);
}

/** INSERT ... ON CONFLICT DO UPDATE on the counters: one per counted request (an insert or an update). */
async function rateLimitWrites(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ writes: string }>(
    "SELECT (n_tup_ins + n_tup_upd)::text AS writes FROM pg_stat_user_tables WHERE relname = 'rate_limit_counters'",
  );
  return Number(rows[0]?.writes ?? 0);
}

const ms = (value: number) => fixed(value, 2);

function machineDelta(before: MachineCpu | null, after: MachineCpu | null, wallMs: number): Measurement['machine'] {
  if (before === null || after === null) return null;
  return { busyMs: after.busyMs - before.busyMs, stealMs: after.stealMs - before.stealMs, wallMs };
}

interface RunOutcome {
  measurements: Measurement[];
  problems: string[];
  gatewayRequests: number;
  upserts: number;
  profiles: { server: Server; file: string; window: Measurement['window'] | undefined }[];
}

async function measure(options: BenchOptions, modes: readonly Mode[], cleanup: Cleanup): Promise<RunOutcome> {
  const outcome: RunOutcome = { measurements: [], problems: [], gatewayRequests: 0, upserts: Number.NaN, profiles: [] };

  note('creating a database, a tenant and an API key');
  const database = await createTestDatabase();
  cleanup.add('drop the database', () => database.drop());
  const pool = createPool({ connectionString: database.url, applicationName: 'bench' });
  cleanup.add('close the database pool', () => pool.end());
  const tenant = await createTenant(pool, 'bench');
  const { apiKey, key } = await createKey(pool, { tenant: tenant.name, scopes: ['news'], name: 'bench' });
  // Counted, never refused: the rate-limit upsert stays in the measured path.
  await setLimitOverride(pool, tenant.name, 'news', NEWS_LIMIT);

  const secret = randomBytes(32).toString('hex');
  const targets = TARGETS.filter((target) => target !== 'gatewayNoLimit' || options.breakdown);
  const serverNames: Server[] = options.breakdown ? ['news', 'bare', 'gateway', 'gatewayNoLimit'] : ['news', 'bare', 'gateway'];
  const ports: Record<Server, number> = {
    news: await freePort(),
    bare: await freePort(),
    gateway: await freePort(),
    gatewayNoLimit: await freePort(),
  };
  const profileDir = path.join(REPO_ROOT, 'bench/.profiles');
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const profileFiles: Partial<Record<Server, string>> = {};
  if (options.profile) mkdirSync(profileDir, { recursive: true });
  const profileFlags = (server: Server): string[] => {
    if (!options.profile || !PROFILED.some((entry) => entry.server === server)) return [];
    const name = `${server}-${stamp}.cpuprofile`;
    profileFiles[server] = path.join(profileDir, name);
    return ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}`];
  };

  note('starting the news stand-in, the bare express app and the gateway, each a process of its own');
  const serverEntry = 'bench/dist/gateway-overhead/servers.js';
  const gatewayEnv = (port: number) => ({
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: database.url,
    INTERNAL_SIGNING_SECRET: secret,
    NEWS_URL: `http://127.0.0.1:${ports.news}`,
    LOG_LEVEL: BENCH_LOG_LEVEL,
  });
  const envs: Record<Server, { entry: string; env: Record<string, string> }> = {
    news: {
      entry: serverEntry,
      env: {
        BENCH_ROLE: 'news',
        PORT: String(ports.news),
        INTERNAL_SIGNING_SECRET: secret,
        BENCH_MAX_SKEW_MS: String(DIRECT_SIGNATURE_VALIDITY_MS),
        LOG_LEVEL: BENCH_LOG_LEVEL,
      },
    },
    bare: { entry: serverEntry, env: { BENCH_ROLE: 'bare', PORT: String(ports.bare) } },
    gateway: { entry: 'services/gateway/dist/main.js', env: gatewayEnv(ports.gateway) },
    gatewayNoLimit: {
      entry: 'bench/dist/gateway-overhead/gateway-variant.js',
      env: { ...gatewayEnv(ports.gatewayNoLimit), BENCH_VARIANT: 'no-rate-limit' },
    },
  };
  const servers: Partial<Record<Server, NodeProcess>> = {};
  for (const server of serverNames) {
    const proc = startNodeProcess({ name: SERVER_LABELS[server], ...envs[server], nodeFlags: profileFlags(server) });
    cleanup.add(`stop the ${proc.name}`, () => proc.stop());
    servers[server] = proc;
  }
  await Promise.all(
    serverNames.map((server) => {
      const proc = servers[server] as NodeProcess;
      return waitUntilReady(
        proc,
        `http://127.0.0.1:${ports[server]}/${server === 'gateway' || server === 'gatewayNoLimit' ? 'readyz' : 'healthz'}`,
      );
    }),
  );
  // The process that answers each target (whose CPU time is the target's server time).
  const serverOf: Record<Target, Server> = { bare: 'bare', direct: 'news', gateway: 'gateway', gatewayNoLimit: 'gatewayNoLimit' };
  const pidOf = (server: Server) => servers[server]?.pid ?? -1;

  const body = JSON.stringify(NEWS_REQUEST);
  const json = { 'content-type': 'application/json' };
  const identity = { requestId: 'bench-direct', caller: { tenantId: tenant.id, keyId: key.id, scopes: key.scopes } };
  // The direct request is signed anew for every request, as the gateway signs (a service accepts each nonce once).
  const newsKey = identityKey(secret, 'news');
  const signed = () => ({ path: NEWS_PATH, headers: signIdentity(identity, newsKey, { method: 'POST', path: NEWS_PATH, body }) });
  const requests: Record<Target, { url: string; headers: Record<string, string>; requestFor?: typeof signed }> = {
    bare: { url: `http://127.0.0.1:${ports.bare}${NEWS_PATH}`, headers: json },
    direct: { url: `http://127.0.0.1:${ports.news}${NEWS_PATH}`, headers: json, requestFor: signed },
    gateway: { url: `http://127.0.0.1:${ports.gateway}${NEWS_PATH}`, headers: { ...json, 'x-api-key': apiKey } },
    gatewayNoLimit: { url: `http://127.0.0.1:${ports.gatewayNoLimit}${NEWS_PATH}`, headers: { ...json, 'x-api-key': apiKey } },
  };

  // Every target answers the same bytes; the gateway counts the request (its rate-limit headers show the
  // raised limit); the stand-in refuses an unsigned request, so the direct path really checks the signature.
  for (const target of targets) {
    const headers = { ...requests[target].headers, ...requests[target].requestFor?.().headers };
    const response = await fetch(requests[target].url, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
    const text = await response.text();
    if (response.status !== 200 || text !== NEWS_RESPONSE_BODY)
      throw new Error(`${TARGET_LABELS[target]} answered ${response.status}: ${text.slice(0, 300)}`);
    if (target === 'gateway') {
      outcome.gatewayRequests++;
      const limit = response.headers.get('x-ratelimit-limit');
      if (limit !== String(NEWS_LIMIT) || response.headers.get('x-ratelimit-remaining') === null) {
        throw new Error(`the gateway's response lacks the rate-limit headers of the raised limit (X-RateLimit-Limit: ${limit})`);
      }
    }
  }
  const unsigned = await fetch(requests.direct.url, { method: 'POST', headers: json, body, signal: AbortSignal.timeout(10_000) });
  await unsigned.arrayBuffer();
  if (unsigned.status !== 401) throw new Error(`the news stand-in answered ${unsigned.status} to an unsigned request; expected 401`);

  for (const mode of modes) {
    for (const target of targets) {
      const load = {
        ...requests[target],
        method: 'POST' as const,
        body,
        expectBody: NEWS_RESPONSE_BODY,
        connections: mode.connections,
        pipelining: 1,
      };
      note(`${mode.id} · ${TARGET_LABELS[target]}: ${options.warmupS} s warm-up, ${options.durationS} s measured`);
      const warmup = await runLoad({ ...load, durationS: options.warmupS });
      if (target === 'gateway') outcome.gatewayRequests += warmup.requests + warmup.non2xx;
      const warmupFailures = failuresOf(warmup);
      if (warmupFailures !== '') outcome.problems.push(`${mode.id} · ${target} warm-up: ${warmupFailures}`);

      const pgPids = await gatewayBackendPids(pool, database.name);
      const gatewayPid = pidOf(serverOf[target] === 'gatewayNoLimit' ? 'gatewayNoLimit' : 'gateway');
      const pids = [pidOf('bare'), pidOf('news'), gatewayPid, ...pgPids];
      const before = { own: ownCpuTime(), procs: cpuSnapshot(pids), machine: machineCpu() };
      const fromUs = nowUs();
      const result = await runLoad({ ...load, durationS: options.durationS });
      const toUs = nowUs();
      const after = { own: ownCpuTime(), procs: cpuSnapshot(pids), machine: machineCpu() };
      if (target === 'gateway') outcome.gatewayRequests += result.requests + result.non2xx;

      outcome.measurements.push({
        mode: mode.id,
        target,
        result,
        window: { fromUs, toUs },
        machine: machineDelta(before.machine, after.machine, (toUs - fromUs) / 1000),
        cpu: {
          loadGenerator: subtract(after.own, before.own),
          bare: cpuDelta(before.procs, after.procs, [pidOf('bare')]),
          news: cpuDelta(before.procs, after.procs, [pidOf('news')]),
          gateway: cpuDelta(before.procs, after.procs, [gatewayPid]),
          postgres: cpuDelta(before.procs, after.procs, pgPids),
        },
      });
      const failures = failuresOf(result);
      if (failures !== '') outcome.problems.push(`${mode.id} · ${target}: ${failures}`);
    }
  }

  // Stopping the servers ends the gateway's database sessions, which flushes their statistics (then every
  // rate-limit upsert it ran shows in pg_stat_user_tables), and makes profiled processes write their profiles.
  const gatewayOutput = () => servers.gateway?.output() ?? '';
  await Promise.all(serverNames.map((server) => servers[server]?.stop() ?? Promise.resolve()));
  for (let attempt = 0; attempt < 20; attempt++) {
    outcome.upserts = await rateLimitWrites(pool);
    if (outcome.upserts > 0) break;
    await delay(100);
  }
  // Hits on one counter share upserts (arriving together, or reserved ahead for a busy key), so upserts ≪ requests; what
  // would invalidate the figures is the limiter failing open, which the gateway logs.
  if (outcome.upserts === 0 || /failing open/.test(gatewayOutput())) {
    outcome.problems.push(
      `the gateway's rate limiter did not count every request (${outcome.upserts} upserts; it logged that it failed open): the figures leave out its cost`,
    );
  }
  for (const { server, mode, target } of PROFILED) {
    const file = profileFiles[server];
    if (file === undefined) continue;
    if (!existsSync(file)) {
      outcome.problems.push(`the ${SERVER_LABELS[server]} did not write its CPU profile`);
      continue;
    }
    const window = outcome.measurements.find((entry) => entry.mode === mode && entry.target === target)?.window;
    outcome.profiles.push({ server, file, window });
  }
  return outcome;
}

export async function gatewayOverhead(options: BenchOptions, command: string): Promise<boolean> {
  const machine = describeMachine();
  const modes: Mode[] = [
    { id: 'latency', title: 'Latency: 1 connection, one request at a time', connections: 1 },
    {
      id: 'throughput',
      title: `Throughput: ${options.connections} connections, pipelining 1 (closed loop, saturating)`,
      connections: options.connections,
    },
    { id: 'crowd', title: `More clients: ${CROWD_CONNECTIONS} connections, pipelining 1 (closed loop)`, connections: CROWD_CONNECTIONS },
  ];
  const cleanup = new Cleanup();
  const onSignal = (signal: NodeJS.Signals) => {
    note(`${signal}: stopping the servers and dropping the database`);
    void cleanup.runAll().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const started = Date.now();
  let outcome: RunOutcome;
  try {
    outcome = await measure(options, modes, cleanup);
  } finally {
    await cleanup.runAll();
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }

  report({ options, command, machine: formatMachine(machine), modes, outcome, elapsedS: (Date.now() - started) / 1000 });
  for (const { server, file, window } of outcome.profiles) reportProfile(server, file, window);
  if (outcome.problems.length > 0) {
    print();
    print(`FAILED: the figures above are not valid: ${outcome.problems.join('; ')}`);
    return false;
  }
  return true;
}

interface ReportInput {
  options: BenchOptions;
  command: string;
  machine: string;
  modes: readonly Mode[];
  outcome: RunOutcome;
  elapsedS: number;
}

function report({ options, command, machine, modes, outcome, elapsedS }: ReportInput): void {
  const { measurements } = outcome;
  const find = (mode: ModeId, target: Target) => measurements.find((entry) => entry.mode === mode && entry.target === target);
  print();
  print('## gateway-overhead');
  print();
  print(`command: ${command}`);
  print(machine);
  print(
    `each measurement: ${options.warmupS} s warm-up (discarded), then ${options.durationS} s; one target at a time; the run took ${fixed(elapsedS, 0)} s`,
  );
  if (options.profile)
    print(
      `NOTE: ${PROFILED.map((entry) => SERVER_LABELS[entry.server]).join(' and ')} ran under --cpu-prof, which slows them: compare unprofiled runs`,
    );

  for (const mode of modes) {
    print();
    print(`### ${mode.title}`);
    print();
    const rows = TARGETS.flatMap((target) => {
      const entry = find(mode.id, target);
      if (entry === undefined) return [];
      const { result } = entry;
      const failures = `${result.errors + result.timeouts}/${result.non2xx}/${result.mismatches}`;
      return [[TARGET_LABELS[target], thousands(result.rps), ...latencyCells(result.latencyMs), thousands(result.requests), failures]];
    });
    print(table(['target', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'requests', 'errors/non-2xx/bad body'], rows));
    const direct = find(mode.id, 'direct')?.result;
    const viaGateway = find(mode.id, 'gateway')?.result;
    const bare = find(mode.id, 'bare')?.result;
    if (direct && viaGateway) {
      const added = (key: 'p50' | 'p90' | 'p99') => `+${ms(viaGateway.latencyMs[key] - direct.latencyMs[key])} ms`;
      print();
      print(
        `gateway/direct throughput ${fixed(viaGateway.rps / direct.rps, 2)}× · direct/ceiling ${bare ? fixed(direct.rps / bare.rps, 2) : 'n/a'}× · ` +
          `added by the gateway: p50 ${added('p50')}, p90 ${added('p90')}, p99 ${added('p99')}`,
      );
    }
    const noLimit = find(mode.id, 'gatewayNoLimit')?.result;
    if (direct && noLimit) {
      print(
        `without rate limiting (--breakdown): gateway/direct throughput ${fixed(noLimit.rps / direct.rps, 2)}× · ` +
          `added: p50 +${ms(noLimit.latencyMs.p50 - direct.latencyMs.p50)} ms, p99 +${ms(noLimit.latencyMs.p99 - direct.latencyMs.p99)} ms`,
      );
    }
  }

  const levels = modes.flatMap((mode) => {
    const direct = find(mode.id, 'direct')?.result;
    const viaGateway = find(mode.id, 'gateway')?.result;
    return direct && viaGateway ? [{ mode, direct, viaGateway }] : [];
  });
  if (levels.length > 1) {
    print();
    print('### How the overhead grows with load (closed loop: more connections, more requests in flight)');
    print();
    print(
      table(
        [
          'connections',
          'direct req/s',
          'gateway req/s',
          'gateway/direct',
          'direct p50 / p99 ms',
          'gateway p50 / p99 ms',
          'added p50 ms',
          'added p99 ms',
        ],
        levels.map(({ mode, direct, viaGateway }) => [
          String(mode.connections),
          thousands(direct.rps),
          thousands(viaGateway.rps),
          `${fixed(viaGateway.rps / direct.rps, 2)}×`,
          `${ms(direct.latencyMs.p50)} / ${ms(direct.latencyMs.p99)}`,
          `${ms(viaGateway.latencyMs.p50)} / ${ms(viaGateway.latencyMs.p99)}`,
          `+${ms(viaGateway.latencyMs.p50 - direct.latencyMs.p50)}`,
          `+${ms(viaGateway.latencyMs.p99 - direct.latencyMs.p99)}`,
        ]),
      ),
    );
  }

  print();
  print('### CPU time per request in µs (share spent in the kernel), measured phases');
  print();
  const groups = CPU_GROUPS;
  const cpus = os.availableParallelism();
  const cpuRows = measurements.map(({ mode, target, result, cpu, machine }) => {
    const per = (time: CpuTime) => {
      const total = totalMs(time);
      if (total === 0) return '-';
      return `${fixed((total * 1000) / Math.max(1, result.requests), 0)} (${fixed((time.systemMs / total) * 100, 0)} %)`;
    };
    const servers = SERVER_GROUPS.reduce((sum, group) => sum + totalMs(cpu[group]), 0);
    const core = (value: number, wallMs: number) => fixed((value / wallMs) * 100, 0);
    const wallMs = machine?.wallMs ?? result.durationS * 1000;
    const ours = servers + totalMs(cpu.loadGenerator);
    return [
      `${mode} · ${target}`,
      ...groups.map((group) => per(cpu[group])),
      core(servers, wallMs),
      machine ? core(machine.busyMs, wallMs) : 'n/a',
      machine ? core(Math.max(0, machine.busyMs - ours), wallMs) : 'n/a',
      machine ? core(machine.stealMs, wallMs) : 'n/a',
    ];
  });
  print(table(['measurement', ...groups.map((group) => CPU_LABELS[group]), 'servers %', 'machine busy %', 'others %', 'steal %'], cpuRows));
  print(`(% columns: per cent of one core, summed over the ${cpus} CPUs; "others" is the machine's busy time outside the processes above)`);

  const saturatedDirect = find('throughput', 'direct');
  const perRequestUs = (entry: Measurement, group: CpuGroup) => (totalMs(entry.cpu[group]) * 1000) / Math.max(1, entry.result.requests);
  if (saturatedDirect) {
    const newsUs = perRequestUs(saturatedDirect, 'news');
    print();
    for (const target of ['gateway', 'gatewayNoLimit'] as const) {
      const saturated = find('throughput', target);
      if (saturated === undefined) continue;
      const gatewayUs = perRequestUs(saturated, 'gateway');
      print(
        `capacity with a core each (1 s / CPU per request): ${SERVER_LABELS[target]} ≈ ${thousands(1e6 / gatewayUs)} req/s, news stand-in ≈ ${thousands(1e6 / newsUs)} req/s ` +
          `(${fixed(gatewayUs / newsUs, 2)}× the service's CPU per request)`,
      );
    }
  }
  print(
    `rate-limit upserts run by the gateway: ${thousands(outcome.upserts)} for ${thousands(outcome.gatewayRequests)} requests it answered (hits arriving together, and hits reserved ahead for a busy key, share an upsert)`,
  );

  const latency = { direct: find('latency', 'direct')?.result, gateway: find('latency', 'gateway')?.result };
  const throughput = { direct: find('throughput', 'direct')?.result, gateway: find('throughput', 'gateway')?.result };
  const saturatedGateway = find('throughput', 'gateway');
  if (latency.direct && latency.gateway && throughput.direct && throughput.gateway && saturatedGateway) {
    const added = latency.gateway.latencyMs.p50 - latency.direct.latencyMs.p50;
    const ratio = throughput.gateway.rps / throughput.direct.rps;
    const gatewayUs = perRequestUs(saturatedGateway, 'gateway');
    print();
    print('### Targets (issues 4 and 28)');
    print();
    print(
      table(
        ['target', 'measured', 'met'],
        [
          [
            `throughput through the gateway ≥ ${TARGET_THROUGHPUT_RATIO}× direct (${options.connections} connections)`,
            `${fixed(ratio, 2)}×`,
            ratio >= TARGET_THROUGHPUT_RATIO ? 'yes' : 'NO',
          ],
          [
            `added latency at p50 ≤ ${TARGET_P50_ADDED_MS} ms (1 connection)`,
            `+${ms(added)} ms`,
            added <= TARGET_P50_ADDED_MS ? 'yes' : 'NO',
          ],
          [
            `gateway CPU per proxied cache hit ≤ ${TARGET_GATEWAY_CPU_US} µs (${options.connections} connections)`,
            `${fixed(gatewayUs, 0)} µs`,
            gatewayUs <= TARGET_GATEWAY_CPU_US ? 'yes' : 'NO',
          ],
        ],
        ['left', 'right', 'left'],
      ),
    );
  }
}

function reportProfile(server: Server, file: string, window: Measurement['window'] | undefined): void {
  const summary = summariseProfile(file, REPO_ROOT, window);
  print();
  print(
    `### Where the ${SERVER_LABELS[server]}'s CPU time goes (${summary.windowed ? 'samples of its saturating measurement' : 'whole profile'})`,
  );
  print();
  print(
    `profile: ${path.relative(REPO_ROOT, file)} (Chrome DevTools › Performance, or speedscope); busy ${thousands(summary.busyMs)} ms, idle ${thousands(summary.idleMs)} ms`,
  );
  print();
  print(
    table(
      ['self time by origin', 'ms', 'share'],
      summary.origins.slice(0, 12).map(({ origin, ms: value, share }) => [origin, thousands(value), `${fixed(share * 100, 1)} %`]),
    ),
  );
  print();
  print(
    table(
      ['time in stacks through (inclusive, overlapping)', 'ms', 'share'],
      summary.through.slice(0, 16).map(({ origin, ms: value, share }) => [origin, thousands(value), `${fixed(share * 100, 1)} %`]),
    ),
  );
  print();
  print(
    table(
      ['top functions by self time', 'origin', 'ms', 'share'],
      summary.functions
        .slice(0, 15)
        .map(({ name, origin, ms: value, share }) => [name, origin, thousands(value), `${fixed(share * 100, 1)} %`]),
      ['left', 'left', 'right', 'right'],
    ),
  );
}
