// The whole system under load, for the job-pipeline, cache-hit and status-poll scenarios: the real gateway, jobs
// service, news API role and news worker role, each a process of its own, on a fresh database, the Kafka broker
// of infra/kafka under a topic prefix of the run's own, the fake Claude (offline analyst, zero latency) and the
// fake Finnhub in a process of their own.
//
// The services are started as their images start them: `node dist/main.js` in the service's folder, with the
// image's NODE_OPTIONS (lib/processes.ts). The environment is the system tests' (`sharedEnv` of e2e/src/system.ts)
// and the composition that of `startSystem`, repeated here because that helper does not expose the services' ports
// (the status-poll scenario also measures the jobs service directly) or their environment per service (--profile).
// Where this differs from the system tests, it is towards production: the compiled output (the system tests run the
// sources), LOG_LEVEL=info (the level of k8s/base and docker-compose.yml; the system tests run at warn), and each
// process writes its log to a file instead of a pipe to the runner (see lib/processes.ts).
// JOB_REAPER_INTERVAL_MS=250 for the jobs service, as in the system tests; one news worker with the default
// configuration.
//
// Clean-up (registered on `cleanup`, run last-registered first): stop the services and the fakes, delete the
// run's Kafka topics and consumer groups, drop the database.
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { createPool, type Pool } from '@fin/db';
import { freePort, sharedEnv } from '@fin/e2e/src/system';
import { createTestDatabase, testKafka, uniqueName, type TestDatabase } from '@fin/testing';
import { cpuSnapshot, machineCpu, ownCpuTime, totalMs, type CpuTime, type MachineCpu } from './cpu';
import { formatMachine, type Machine } from './machine';
import { fixed, note, print, table } from './output';
import { type Cleanup, REPO_ROOT, startNodeProcess, startService, waitUntilReady, type NodeProcess } from './processes';

const SERVICES = ['gateway', 'newsApi', 'newsWorker', 'jobs'] as const;
export type ServiceName = (typeof SERVICES)[number];

export const SERVICE_LABELS: Record<ServiceName, string> = {
  gateway: 'gateway',
  newsApi: 'news API',
  newsWorker: 'news worker',
  jobs: 'jobs service',
};

/** The tenant's per-minute limits: the largest override the admin CLI accepts, far above what a run sends. */
export const BENCH_LIMIT_PER_MINUTE = 1_000_000;
const TENANT = 'bench';
export const FINNHUB_TOKEN = 'finnhub-bench-token';

export interface BenchSystem {
  gatewayUrl: string;
  /** The jobs service itself (requests must carry identity headers signed with `secret`). */
  jobsUrl: string;
  /** The news API role itself (requests must carry identity headers signed with `secret`). */
  newsUrl: string;
  services: Record<ServiceName, NodeProcess>;
  fakes: NodeProcess;
  /** INTERNAL_SIGNING_SECRET shared by the services. */
  secret: string;
  topicPrefix: string;
  database: TestDatabase;
  /** A pool of the runner's own on the system's database (reading job timings). */
  pool: Pool;
  tenantId: string;
  apiKey: string;
  keyId: string;
  keyScopes: string[];
  /** The Kafka broker's pid, when this machine runs it from infra/kafka. */
  kafkaPid: number | null;
  /** With --profile: the CPU profile each profiled service writes when it exits. */
  profiles: Partial<Record<ServiceName, string>>;
  /** Stops the services (profiled ones then write their profiles). Clean-up does it too. */
  stopServices(): Promise<void>;
}

export interface BenchSystemOptions {
  scenario: string;
  /** Services to run under the V8 CPU profiler (--profile). */
  profile?: readonly ServiceName[];
}

export function ensureKafka(): void {
  const run = spawnSync('bash', [path.join(REPO_ROOT, 'infra/kafka/start.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 120_000,
  });
  if (run.status !== 0) throw new Error(`infra/kafka/start.sh failed (${run.status ?? run.signal}):\n${run.stderr}`);
}

function kafkaPid(): number | null {
  const port = (process.env.KAFKA_BROKERS ?? '127.0.0.1:19092').split(',')[0]?.split(':')[1] ?? '19092';
  const file = path.join(REPO_ROOT, 'infra/kafka/.run', port, 'kafka.pid');
  if (!existsSync(file)) return null;
  const pid = Number(readFileSync(file, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

/**
 * The fakes process (fakes-server.ts), stopped by `cleanup`; resolves with their URLs once they listen. `env` adds
 * the fake model's pace and limits (BENCH_FAKE_*, see fakes-server.ts).
 */
export async function startFakes(
  cleanup: Cleanup,
  env: Record<string, string> = {},
): Promise<{ fakes: NodeProcess; anthropicUrl: string; finnhubUrl: string; statsUrl: string }> {
  const fakes = startNodeProcess({
    name: 'fakes (Claude, Finnhub)',
    entry: 'bench/dist/lib/fakes-server.js',
    env: { ...env, BENCH_FINNHUB_TOKEN: FINNHUB_TOKEN },
  });
  cleanup.add('stop the fakes', () => fakes.stop());
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const line = fakes
      .output()
      .split('\n')
      .find((entry) => entry.startsWith('{"anthropicUrl"'));
    if (line !== undefined) return { fakes, ...(JSON.parse(line) as { anthropicUrl: string; finnhubUrl: string; statsUrl: string }) };
    if (fakes.child.exitCode !== null || fakes.child.signalCode !== null) break;
    await delay(50);
  }
  throw new Error(`the fakes did not start:\n${fakes.output()}`);
}

/** The runner's OTEL_* variables (trace export), passed on to the services. */
export function otelEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter((entry): entry is [string, string] => entry[0].startsWith('OTEL_') && entry[1] !== undefined),
  );
}

/** The admin CLI against the system's database, as the gateway's image runs it (node dist/admin/cli.js). */
export async function admin(databaseUrl: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, ['dist/admin/cli.js', ...args], {
      cwd: path.join(REPO_ROOT, 'services/gateway'),
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl },
      encoding: 'utf8',
    });
    return stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new Error(`admin ${args.join(' ')} failed: ${stderr || (error instanceof Error ? error.message : String(error))}`, {
      cause: error,
    });
  }
}

export async function deleteTopicsAndGroups(prefix: string): Promise<void> {
  const kafka = testKafka(uniqueName('bench-clean-up'));
  const client = kafka.admin();
  await client.connect();
  try {
    const topics = (await client.listTopics()).filter((topic) => topic.startsWith(prefix));
    if (topics.length > 0) await client.deleteTopics({ topics, timeout: 15_000 });
    const groups = (await client.listGroups()).groups.map((group) => group.groupId).filter((group) => group.startsWith(prefix));
    // A group can only be deleted once empty: a consumer that did not leave (its process was killed) keeps it
    // until its session times out (10 to 30 s), so this retries for a while.
    let left = groups;
    for (let attempt = 0; left.length > 0 && attempt < 40; attempt++) {
      if (attempt > 0) await delay(1_000);
      try {
        await client.deleteGroups(left);
        left = [];
      } catch (error) {
        const failed =
          (error as { groups?: { groupId: string; errorCode: number }[] }).groups?.filter((group) => group.errorCode !== 0) ?? [];
        left = failed.length > 0 ? failed.map((group) => group.groupId) : left;
        if (attempt === 39)
          throw new Error(
            `could not delete the consumer groups ${left.join(', ')}: ${error instanceof Error ? error.message : String(error)}`,
            { cause: error },
          );
      }
    }
    note(`deleted ${topics.length} Kafka topics and ${groups.length} consumer groups under the prefix ${prefix}`);
  } finally {
    await client.disconnect();
  }
}

export async function startBenchSystem(cleanup: Cleanup, { scenario, profile = [] }: BenchSystemOptions): Promise<BenchSystem> {
  note('checking the Kafka broker (infra/kafka/start.sh)');
  ensureKafka();
  note('creating a database, starting the fakes');
  const database = await createTestDatabase();
  cleanup.add('drop the database', () => database.drop());
  const pool = createPool({ connectionString: database.url, applicationName: 'bench', max: 4 });
  cleanup.add('close the database pool', () => pool.end());
  const { fakes, anthropicUrl, finnhubUrl } = await startFakes(cleanup);

  const topicPrefix = `${uniqueName('bench')}.`;
  const env: Record<string, string> = {
    ...sharedEnv({ databaseUrl: database.url, anthropicUrl, finnhubUrl, finnhubToken: FINNHUB_TOKEN }),
    KAFKA_TOPIC_PREFIX: topicPrefix,
    // Trace export when the runner's environment sets it (OTEL_EXPORTER_OTLP_ENDPOINT=… npm run bench), to compare
    // the figures with and without it; the services get nothing else of the runner's environment.
    ...otelEnv(),
  };
  const secret = env.INTERNAL_SIGNING_SECRET ?? randomBytes(32).toString('hex');
  // Registered before the services, so that it runs after they stopped.
  cleanup.add('delete the Kafka topics and consumer groups', () => deleteTopicsAndGroups(topicPrefix));

  const profiles: Partial<Record<ServiceName, string>> = {};
  const profileDir = path.join(REPO_ROOT, 'bench/.profiles');
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  if (profile.length > 0) mkdirSync(profileDir, { recursive: true });
  const profiled = (service: ServiceName): Record<string, string> => {
    if (!profile.includes(service)) return {};
    const file = path.join(profileDir, `${scenario}-${service}-${stamp}.cpuprofile`);
    profiles[service] = file;
    return { NODE_OPTIONS: `--require ${path.join(REPO_ROOT, 'bench/src/lib/cpu-profile-hook.cjs')}`, BENCH_CPU_PROFILE: file };
  };

  note('starting the gateway, the jobs service, the news API and one news worker, each a process of its own');
  const [gatewayPort, newsPort, jobsPort] = [await freePort(), await freePort(), await freePort()];
  const services: Record<ServiceName, NodeProcess> = {
    jobs: startService('jobs', 'jobs', { ...env, PORT: String(jobsPort), JOB_REAPER_INTERVAL_MS: '250', ...profiled('jobs') }),
    newsApi: startService('news-api', 'news', { ...env, NEWS_ROLE: 'api', PORT: String(newsPort), ...profiled('newsApi') }),
    gateway: startService('gateway', 'gateway', {
      ...env,
      PORT: String(gatewayPort),
      NEWS_URL: `http://127.0.0.1:${newsPort}`,
      JOBS_URL: `http://127.0.0.1:${jobsPort}`,
      ...profiled('gateway'),
    }),
    newsWorker: startService('news-worker', 'news', { ...env, NEWS_ROLE: 'worker', PORT: '0', ...profiled('newsWorker') }),
  };
  let stopped: Promise<void> | undefined;
  const stopServices = () => (stopped ??= Promise.all(SERVICES.map((name) => services[name].stop())).then(() => undefined));
  cleanup.add('stop the services', stopServices);

  // The tenant, its raised limits and its key, with the admin CLI, while the services start.
  const tenantSetup = (async () => {
    await admin(database.url, ['tenants', 'create', TENANT]);
    await admin(database.url, ['limits', 'set', '--tenant', TENANT, '--product', 'news', '--per-minute', String(BENCH_LIMIT_PER_MINUTE)]);
    await admin(database.url, ['limits', 'set', '--tenant', TENANT, '--product', 'jobs', '--per-minute', String(BENCH_LIMIT_PER_MINUTE)]);
    return JSON.parse(
      await admin(database.url, ['keys', 'create', '--tenant', TENANT, '--scopes', 'news', '--name', 'bench', '--json']),
    ) as {
      api_key: string;
      id: string;
      scopes: string[];
    };
  })();
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  const jobsUrl = `http://127.0.0.1:${jobsPort}`;
  const [key] = await Promise.all([
    tenantSetup,
    waitUntilReady(services.jobs, `${jobsUrl}/readyz`, 90_000),
    waitUntilReady(services.newsApi, `http://127.0.0.1:${newsPort}/readyz`, 90_000),
    waitUntilReady(services.gateway, `${gatewayUrl}/readyz`, 90_000),
  ]);
  if (services.newsWorker.child.exitCode !== null) throw new Error(`the news worker exited:\n${services.newsWorker.output()}`);
  const { rows } = await pool.query<{ id: string }>('SELECT id::text AS id FROM tenants WHERE name = $1', [TENANT]);
  const tenantId = rows[0]?.id;
  if (tenantId === undefined) throw new Error('the admin CLI did not create the tenant');

  return {
    gatewayUrl,
    jobsUrl,
    newsUrl: `http://127.0.0.1:${newsPort}`,
    services,
    fakes,
    secret,
    topicPrefix,
    database,
    pool,
    tenantId,
    apiKey: key.api_key,
    keyId: key.id,
    keyScopes: key.scopes,
    kafkaPid: kafkaPid(),
    profiles,
    stopServices,
  };
}

/** Fails when a service or the fakes exited (a crash makes the figures meaningless). */
export function exitedProcesses(system: BenchSystem): string[] {
  const problems: string[] = [];
  for (const name of SERVICES) {
    const { child } = system.services[name];
    if (child.exitCode !== null || child.signalCode !== null)
      problems.push(
        `the ${SERVICE_LABELS[name]} exited (${child.exitCode ?? child.signalCode}):\n${system.services[name].output().slice(-2000)}`,
      );
  }
  if (system.fakes.child.exitCode !== null || system.fakes.child.signalCode !== null)
    problems.push(`the fakes exited:\n${system.fakes.output().slice(-2000)}`);
  return problems;
}

// ---------------------------------------------------------------------------------------------------------------
// CPU time of every process of the system, per measurement.

export const CPU_GROUPS = ['runner', 'fakes', 'gateway', 'newsApi', 'newsWorker', 'jobs', 'postgres', 'kafka'] as const;
export type CpuGroup = (typeof CPU_GROUPS)[number];

const CPU_GROUP_LABELS: Record<CpuGroup, string> = {
  runner: 'bench runner (load)',
  fakes: 'fakes',
  gateway: 'gateway',
  newsApi: 'news API',
  newsWorker: 'news worker',
  jobs: 'jobs service',
  postgres: "Postgres (the services' sessions)",
  kafka: 'Kafka broker',
};

/** application_name of each service's pool (their Postgres sessions). */
const POSTGRES_APPLICATIONS = ['gateway', 'news-api', 'news-worker', 'jobs'];

export interface SystemCpuSnapshot {
  own: CpuTime;
  procs: Map<number, CpuTime>;
  groups: Map<number, CpuGroup>;
  machine: MachineCpu | null;
  atMs: number;
}

export interface SystemCpuDelta {
  byGroup: Record<CpuGroup, CpuTime>;
  wallMs: number;
  /** Machine-wide busy and steal time (ms summed over CPUs), null where /proc/stat cannot be read. */
  machine: { busyMs: number; stealMs: number } | null;
}

export async function systemCpuSnapshot(system: BenchSystem): Promise<SystemCpuSnapshot> {
  const groups = new Map<number, CpuGroup>();
  for (const name of SERVICES) {
    const pid = system.services[name].child.pid;
    if (pid !== undefined) groups.set(pid, name);
  }
  groups.set(system.fakes.pid, 'fakes');
  if (system.kafkaPid !== null) groups.set(system.kafkaPid, 'kafka');
  const { rows } = await system.pool.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = ANY($2::text[])',
    [system.database.name, POSTGRES_APPLICATIONS],
  );
  for (const { pid } of rows) groups.set(pid, 'postgres');
  return { own: ownCpuTime(), procs: cpuSnapshot([...groups.keys()]), groups, machine: machineCpu(), atMs: performance.now() };
}

/**
 * CPU time between two snapshots, by group. A Postgres session opened in between counts from zero (all its CPU
 * time falls in the window); one that closed in between is missed (pools keep their sessions 30 s).
 */
export function systemCpuDelta(before: SystemCpuSnapshot, after: SystemCpuSnapshot): SystemCpuDelta {
  const byGroup = Object.fromEntries(CPU_GROUPS.map((group) => [group, { userMs: 0, systemMs: 0 }])) as Record<CpuGroup, CpuTime>;
  byGroup.runner = { userMs: after.own.userMs - before.own.userMs, systemMs: after.own.systemMs - before.own.systemMs };
  for (const [pid, end] of after.procs) {
    const group = after.groups.get(pid);
    if (group === undefined) continue;
    const start = before.procs.get(pid) ?? (group === 'postgres' ? { userMs: 0, systemMs: 0 } : undefined);
    if (start === undefined) continue;
    byGroup[group].userMs += end.userMs - start.userMs;
    byGroup[group].systemMs += end.systemMs - start.systemMs;
  }
  const machine =
    before.machine !== null && after.machine !== null
      ? { busyMs: after.machine.busyMs - before.machine.busyMs, stealMs: after.machine.stealMs - before.machine.stealMs }
      : null;
  return { byGroup, wallMs: after.atMs - before.atMs, machine };
}

/** Per cent of one core (200 % = both CPUs of this machine). */
export function coreShare(ms: number, wallMs: number): string {
  return fixed((ms / wallMs) * 100, 0);
}

/** Busy time of the machine outside the processes accounted for, in ms. */
export function othersMs(delta: SystemCpuDelta): number {
  if (delta.machine === null) return Number.NaN;
  const ours = CPU_GROUPS.reduce((sum, group) => sum + totalMs(delta.byGroup[group]), 0);
  return Math.max(0, delta.machine.busyMs - ours);
}

/** Reads /proc/loadavg (1, 5, 15 minutes), for the report. */
export function loadAverage(): string {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return 'n/a';
  }
}

export interface CpuRow {
  label: string;
  delta: SystemCpuDelta;
  /** What the CPU time is divided by (requests, jobs). */
  units: number;
}

/**
 * Two tables over the same measurements: CPU time per unit (request or job) of each process group, in `scale`
 * (µs or ms), and the share of one core each group used (200 % = this whole 2-CPU machine), with the machine's
 * busy time and the part of it outside the run's processes ("others": other work on a shared machine).
 */
export function cpuTables(
  rows: readonly CpuRow[],
  { unit, scale }: { unit: string; scale: 'µs' | 'ms' },
  groups: readonly CpuGroup[] = CPU_GROUPS,
): string {
  const factor = scale === 'µs' ? 1000 : 1;
  const perUnit = rows.map(({ label, delta, units }) => [
    label,
    ...groups.map((group) => {
      const ms = totalMs(delta.byGroup[group]);
      return fixed((ms * factor) / Math.max(1, units), scale === 'µs' ? 0 : 2);
    }),
    fixed(
      (CPU_GROUPS.reduce((sum, group) => sum + totalMs(delta.byGroup[group]), 0) * factor) / Math.max(1, units),
      scale === 'µs' ? 0 : 2,
    ),
  ]);
  const shares = rows.map(({ label, delta }) => [
    label,
    ...groups.map((group) => coreShare(totalMs(delta.byGroup[group]), delta.wallMs)),
    delta.machine === null ? 'n/a' : coreShare(delta.machine.busyMs, delta.wallMs),
    coreShare(othersMs(delta), delta.wallMs),
  ]);
  const headers = groups.map((group) => CPU_GROUP_LABELS[group]);
  return [
    `CPU time per ${unit}, ${scale}:`,
    '',
    table(['measurement', ...headers, 'all of these'], perUnit),
    '',
    'Share of one core, % (200 % = the whole machine):',
    '',
    table(['measurement', ...headers, 'machine busy', 'others'], shares),
  ].join('\n');
}

export interface Window {
  /** Monotonic microseconds (the clock of CPU profiles). */
  fromUs: number;
  toUs: number;
}

const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/** Runs `work` between two CPU snapshots of the system; returns its result, the CPU time and the time window. */
export async function withCpu<T>(system: BenchSystem, work: () => Promise<T>): Promise<{ result: T; cpu: SystemCpuDelta; window: Window }> {
  const before = await systemCpuSnapshot(system);
  const fromUs = nowUs();
  const result = await work();
  const toUs = nowUs();
  const cpu = systemCpuDelta(before, await systemCpuSnapshot(system));
  return { result, cpu, window: { fromUs, toUs } };
}

/** The heading every whole-system scenario prints before its tables: what ran, where, and how busy the machine was. */
export function printRunHeading(scenario: string, command: string, machine: Machine, startedAt: number, loadAfter: string): void {
  print();
  print(`## ${scenario}`);
  print();
  print(`command: ${command}`);
  print(formatMachine(machine));
  print(`load average after the run: ${loadAfter}; the run took ${fixed((performance.now() - startedAt) / 1000, 0)} s`);
}
