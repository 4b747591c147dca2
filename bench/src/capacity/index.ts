// Scenario capacity: the system at the model's pace and under the organisation's limits (issue 35). The fake model
// answers at the published pace (a news call ~4 s) and enforces per-model limits on requests, input and output
// tokens per minute with the API's 429s; the gateway, the jobs service, the news API and THREE news worker replicas
// run as processes of their own on a fresh database and the Kafka broker of infra/kafka. Tenant A floods news jobs
// while tenants B–E send one job a second each. Measured: B–E's wait before their job starts, the model calls as a
// share of the organisation's allowance while a backlog exists, the 429s, one worker process's jobs in flight and
// memory per in-flight job, and that every submitted job is accounted for. Time may be compressed (--time-scale):
// every model delay and limit is scaled, the system's own machinery (database, Kafka, polls) is not, so waits
// converted to model time are pessimistic by that machinery's share. See docs/benchmarks.md.
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { createPool, type Pool } from '@fin/db';
import { freePort, sharedEnv } from '@fin/e2e/src/system';
import { createTestDatabase, uniqueName } from '@fin/testing';
import { createHttpClient, type HttpClient } from '../lib/http';
import { percentiles } from '../lib/load';
import { describeMachine } from '../lib/machine';
import { countJobs, failureReasons, NewsRequests, submitNewsJob, type Gateway } from '../lib/news-jobs';
import type { BenchOptions } from '../lib/options';
import { fixed, note, print, table, thousands } from '../lib/output';
import { type Cleanup, startService, waitUntilReady, withCleanup, type NodeProcess } from '../lib/processes';
import {
  admin,
  BENCH_LIMIT_PER_MINUTE,
  deleteTopicsAndGroups,
  ensureKafka,
  FINNHUB_TOKEN,
  loadAverage,
  otelEnv,
  printRunHeading,
  startFakes,
} from '../lib/system';

/** The organisation's limits per model, per minute of model time (issue 35's example figures). */
const ORGANISATION_LIMITS = { requestsPerMinute: 4_000, inputTokensPerMinute: 2_000_000, outputTokensPerMinute: 400_000 };
/** The news model (AI_NEWS_MODEL's default) and the main model, both limited alike. */
const LIMITED_MODELS = ['claude-haiku-5-5', 'claude-sonnet-5-5'];
const NEWS_MODEL = 'claude-haiku-5-5';
const REPLICAS = 3;
const OTHER_TENANTS = ['tenant-b', 'tenant-c', 'tenant-d', 'tenant-e'];
const FLOOD_TENANT = 'tenant-a';
/** Concurrent POSTs of tenant A's flood. */
const FLOOD_SUBMITTERS = 32;
const SAMPLE_INTERVAL_MS = 250;
/**
 * The part of each budget window kept for interactive calls. The run has none, so the queued jobs' ceiling is
 * 1 − this share of the allowance; the default (0.2) would cap them at 80 %.
 */
const INTERACTIVE_SHARE = 0.05;

const TARGET_WAIT_P99_MODEL_S = 10;
const TARGET_UTILISATION = 0.9;
const TARGET_429_SHARE = 0.01;
const TARGET_IN_FLIGHT = 500;
const TARGET_BYTES_PER_JOB = 100 * 1024;

interface Settings {
  floodJobs: number;
  timeScale: number;
  concurrency: number;
  tenantCap: number;
  maxOutputTokens: number;
  /** Wall-clock ms between two jobs of one of B–E (one a second of model time). */
  otherIntervalMs: number;
  /** Jobs each of B–E sends at most (they stop earlier when A's jobs are finished). */
  otherJobs: number;
  /** Wall-clock ms the run waits for every job to finish after the flood, at most. */
  drainTimeoutMs: number;
}

interface FakeStats {
  calls: Record<string, { calls: number; maxTokens: number }>;
  rateLimited: number;
}

interface WorkerMemory {
  rss: number;
  heap: number;
  budgetWaiting: number;
}

interface Sample {
  atMs: number;
  /** Wall clock (ms since the epoch), comparable with Postgres timestamps. */
  wallMs: number;
  calls: number;
  maxTokens: number;
  rateLimited: number;
  pendingA: number;
  pendingAll: number;
  /** Jobs running per worker pid (from the lease owner, `host:pid:suffix`). */
  running: Map<number, number>;
  memory: Map<number, WorkerMemory>;
}

interface Worker {
  process: NodeProcess;
  metricsUrl: string;
}

interface Outcome {
  problems: string[];
  samples: Sample[];
  floodIds: string[];
  otherIds: string[];
  floodSubmitS: number;
  idle: Map<number, WorkerMemory>;
  pool?: Pool;
  waits: { tenant: string; waitMs: number; runMs: number }[];
  counts: { completed: number; failed: number; unfinished: number };
  failedBy429: number;
  failureReasons: string[];
  attempts: { jobs: number; retried: number };
  tokens: { windowInput: number; windowOutput: number; windowCalls: number };
  window?: { from: Sample; to: Sample };
  drainS: number;
}

async function fakeStats(client: HttpClient, url: string): Promise<{ calls: number; maxTokens: number; rateLimited: number }> {
  const answer = await client.request('GET', url, {});
  const stats = JSON.parse(answer.body) as FakeStats;
  const all = Object.values(stats.calls);
  return {
    calls: all.reduce((sum, entry) => sum + entry.calls, 0),
    maxTokens: all.reduce((sum, entry) => sum + entry.maxTokens, 0),
    rateLimited: stats.rateLimited,
  };
}

/** The worker's heap, RSS and model calls waiting for the budget, from its metrics endpoint. */
async function workerMemory(client: HttpClient, url: string): Promise<WorkerMemory> {
  const answer = await client.request('GET', url, {});
  const value = (name: string) => {
    let sum = 0;
    for (const line of answer.body.split('\n')) if (line.startsWith(name)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    return sum;
  };
  return {
    rss: value('fin_process_resident_memory_bytes'),
    heap: value('fin_nodejs_heap_size_used_bytes'),
    budgetWaiting: value('fin_model_budget_waiting{'),
  };
}

async function sample(client: HttpClient, pool: Pool, statsUrl: string, workers: readonly Worker[], tenantA: string): Promise<Sample> {
  const atMs = performance.now();
  const [stats, pending, running, memories] = await Promise.all([
    fakeStats(client, statsUrl),
    pool.query<{ a: number; all: number }>(
      `SELECT count(*) FILTER (WHERE tenant_id = $1)::int AS a, count(*)::int AS all FROM jobs WHERE type = 'news' AND status = 'pending'`,
      [tenantA],
    ),
    pool.query<{ owner: string; running: number }>(
      `SELECT lease_owner AS owner, count(*)::int AS running FROM jobs
        WHERE type = 'news' AND status = 'running' AND lease_owner IS NOT NULL GROUP BY lease_owner`,
    ),
    Promise.all(workers.map((worker) => workerMemory(client, worker.metricsUrl).catch(() => undefined))),
  ]);
  const runningByPid = new Map<number, number>();
  for (const row of running.rows) {
    const pid = Number(row.owner.split(':')[1]);
    runningByPid.set(pid, (runningByPid.get(pid) ?? 0) + row.running);
  }
  const memory = new Map<number, WorkerMemory>();
  workers.forEach((worker, index) => {
    const entry = memories[index];
    if (entry !== undefined) memory.set(worker.process.pid, entry);
  });
  return {
    atMs,
    wallMs: performance.timeOrigin + atMs,
    calls: stats.calls,
    maxTokens: stats.maxTokens,
    rateLimited: stats.rateLimited,
    pendingA: pending.rows[0]?.a ?? 0,
    pendingAll: pending.rows[0]?.all ?? 0,
    running: runningByPid,
    memory,
  };
}

const budgetWaiting = (entry: Sample) => [...entry.memory.values()].reduce((sum, memory) => sum + memory.budgetWaiting, 0);

interface Tenant {
  name: string;
  id: string;
  gateway: Gateway;
}

async function createTenant(databaseUrl: string, pool: Pool, client: HttpClient, gatewayUrl: string, name: string): Promise<Tenant> {
  await admin(databaseUrl, ['tenants', 'create', name]);
  // At a compressed time scale one job a second of model time is several a wall-clock second: every tenant's
  // request limits are lifted, as the other scenarios lift their one tenant's.
  await admin(databaseUrl, ['limits', 'set', '--tenant', name, '--product', 'news', '--per-minute', String(BENCH_LIMIT_PER_MINUTE)]);
  await admin(databaseUrl, ['limits', 'set', '--tenant', name, '--product', 'jobs', '--per-minute', String(BENCH_LIMIT_PER_MINUTE)]);
  const key = JSON.parse(
    await admin(databaseUrl, ['keys', 'create', '--tenant', name, '--scopes', 'news', '--name', 'bench', '--json']),
  ) as {
    api_key: string;
  };
  const { rows } = await pool.query<{ id: string }>('SELECT id::text AS id FROM tenants WHERE name = $1', [name]);
  const id = rows[0]?.id;
  if (id === undefined) throw new Error(`the admin CLI did not create the tenant ${name}`);
  return { name, id, gateway: { client, url: gatewayUrl, apiKey: key.api_key } };
}

async function startSystem(cleanup: Cleanup, settings: Settings) {
  note('checking the Kafka broker (infra/kafka/start.sh)');
  ensureKafka();
  note('creating a database, starting the fakes with the pace and the limits');
  const database = await createTestDatabase();
  cleanup.add('drop the database', () => database.drop());
  const pool = createPool({ connectionString: database.url, applicationName: 'bench', max: 4 });
  cleanup.add('close the database pool', () => pool.end());
  const limits = Object.fromEntries(LIMITED_MODELS.map((model) => [model, ORGANISATION_LIMITS]));
  const { fakes, anthropicUrl, finnhubUrl, statsUrl } = await startFakes(cleanup, {
    BENCH_FAKE_PACE: 'true',
    BENCH_FAKE_RATE_LIMITS: JSON.stringify({ models: limits }),
    BENCH_FAKE_TIME_SCALE: String(settings.timeScale),
  });
  const topicPrefix = `${uniqueName('bench')}.`;
  // The budget counts per wall-clock minute: the limits stated per wall-clock minute (÷ time scale, as the fake's
  // headers state them) and a window of the same share of the bucket as the default 30 s at full time.
  const wallLimits = Object.fromEntries(
    LIMITED_MODELS.map((model) => [
      model,
      Object.fromEntries(Object.entries(ORGANISATION_LIMITS).map(([name, value]) => [name, Math.round(value / settings.timeScale)])),
    ]),
  );
  const env: Record<string, string> = {
    ...sharedEnv({ databaseUrl: database.url, anthropicUrl, finnhubUrl, finnhubToken: FINNHUB_TOKEN }),
    KAFKA_TOPIC_PREFIX: topicPrefix,
    AI_MODEL_LIMITS: JSON.stringify(wallLimits),
    AI_MODEL_BUDGET_INTERACTIVE_SHARE: String(INTERACTIVE_SHARE),
    AI_MAX_OUTPUT_TOKENS: String(settings.maxOutputTokens),
    ...otelEnv(),
  };
  cleanup.add('delete the Kafka topics and consumer groups', () => deleteTopicsAndGroups(topicPrefix));

  note(`starting the gateway, the jobs service, the news API and ${REPLICAS} news workers, each a process of its own`);
  const [gatewayPort, newsPort, jobsPort] = [await freePort(), await freePort(), await freePort()];
  const services: NodeProcess[] = [];
  const jobs = startService('jobs', 'jobs', { ...env, PORT: String(jobsPort), JOB_REAPER_INTERVAL_MS: '250' });
  const newsApi = startService('news-api', 'news', { ...env, NEWS_ROLE: 'api', PORT: String(newsPort) });
  const gateway = startService('gateway', 'gateway', {
    ...env,
    PORT: String(gatewayPort),
    NEWS_URL: `http://127.0.0.1:${newsPort}`,
    JOBS_URL: `http://127.0.0.1:${jobsPort}`,
  });
  services.push(jobs, newsApi, gateway);
  const workers: Worker[] = [];
  for (let replica = 0; replica < REPLICAS; replica++) {
    const metricsPort = await freePort();
    const process = startService(`news-worker-${replica + 1}`, 'news', {
      ...env,
      NEWS_ROLE: 'worker',
      PORT: '0',
      METRICS_PORT: String(metricsPort),
      NEWS_WORKER_CONCURRENCY: String(settings.concurrency),
      NEWS_WORKER_TENANT_CAP: String(settings.tenantCap),
    });
    services.push(process);
    workers.push({ process, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics` });
  }
  cleanup.add('stop the services', () => Promise.all(services.map((service) => service.stop())).then(() => undefined));
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  await Promise.all([
    waitUntilReady(jobs, `http://127.0.0.1:${jobsPort}/readyz`, 90_000),
    waitUntilReady(newsApi, `http://127.0.0.1:${newsPort}/readyz`, 90_000),
    waitUntilReady(gateway, `${gatewayUrl}/readyz`, 90_000),
    ...workers.map(async (worker) => {
      const deadline = Date.now() + 90_000;
      for (;;) {
        try {
          const answer = await fetch(worker.metricsUrl, { signal: AbortSignal.timeout(2_000) });
          await answer.arrayBuffer();
          if (answer.status === 200) return;
        } catch {
          // not listening yet
        }
        if (worker.process.child.exitCode !== null) throw new Error(`${worker.process.name} exited:\n${worker.process.output()}`);
        if (Date.now() > deadline) throw new Error(`${worker.process.name} did not serve its metrics within 90 s`);
        await delay(200);
      }
    }),
  ]);
  return { database, pool, fakes, statsUrl, gatewayUrl, services, workers };
}

async function measure(settings: Settings): Promise<Outcome> {
  return withCleanup(async (cleanup) => {
    const system = await startSystem(cleanup, settings);
    const client = createHttpClient({ maxSockets: 256 });
    cleanup.add('close the HTTP client', () => {
      client.close();
      return Promise.resolve();
    });
    const { pool } = system;
    const outcome: Outcome = {
      problems: [],
      samples: [],
      floodIds: [],
      otherIds: [],
      floodSubmitS: 0,
      idle: new Map(),
      waits: [],
      counts: { completed: 0, failed: 0, unfinished: 0 },
      failedBy429: 0,
      failureReasons: [],
      attempts: { jobs: 0, retried: 0 },
      tokens: { windowInput: 0, windowOutput: 0, windowCalls: 0 },
      drainS: 0,
    };
    note('creating tenants A–E (request limits lifted) and their keys');
    const tenants = await Promise.all(
      [FLOOD_TENANT, ...OTHER_TENANTS].map((name) => createTenant(system.database.url, pool, client, system.gatewayUrl, name)),
    );
    const [tenantA, ...others] = tenants as [Tenant, ...Tenant[]];
    // A floods requests of every size (n = 1–20 but 4 and 5); B–E ask what a user asks by default (n = 5, or 4):
    // disjoint, so no request of B–E is answered by one of A's (news results are shared across tenants).
    const requests = new NewsRequests((n) => n !== 4 && n !== 5);
    const usualRequests = new NewsRequests((n) => n === 4 || n === 5);

    // Warm-up: the workers join their consumer group, every process's JIT and pools warm; then the idle memory.
    note('warm-up: 12 jobs of tenant B, until finished');
    const warmIds: string[] = [];
    for (let index = 0; index < 12; index++) warmIds.push(await submitNewsJob(others[0]?.gateway ?? tenantA.gateway, requests.take()));
    const warm = await waitForAll(pool, warmIds, 120_000);
    if (warm.unfinished > 0 || warm.failed > 0) {
      outcome.problems.push(
        `warm-up: ${warm.failed} failed, ${warm.unfinished} unfinished: ${(await failureReasons(pool, warmIds)).join('; ')}`,
      );
      return outcome;
    }
    await delay(2_000);
    const idle = await sample(client, pool, system.statsUrl, system.workers, tenantA.id);
    outcome.idle = idle.memory;

    // The sampler runs until the end of the run.
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        try {
          outcome.samples.push(await sample(client, pool, system.statsUrl, system.workers, tenantA.id));
        } catch (error) {
          note(`a sample failed: ${error instanceof Error ? error.message : String(error)}`);
        }
        await delay(SAMPLE_INTERVAL_MS);
      }
    })();

    const floodStart = performance.now();
    let floodDone = false;
    // B–E: one job a second of model time each, from the flood's start until A's backlog is gone.
    const othersRunning = others.map(async (tenant, index) => {
      await delay((settings.otherIntervalMs * index) / others.length);
      const started = performance.now();
      const sends: Promise<void>[] = [];
      for (let sent = 0; sent < settings.otherJobs; sent++) {
        const wait = started + sent * settings.otherIntervalMs - performance.now();
        if (wait > 0) await delay(wait);
        if (floodDone) break;
        const body = usualRequests.take();
        sends.push(
          submitNewsJob(tenant.gateway, body).then(
            (id) => void outcome.otherIds.push(id),
            (error: unknown) => void outcome.problems.push(`${tenant.name}: ${error instanceof Error ? error.message : String(error)}`),
          ),
        );
      }
      await Promise.all(sends);
    });

    note(
      `tenant A floods ${thousands(settings.floodJobs)} news jobs (${FLOOD_SUBMITTERS} POSTs at a time); B–E send one a model second each`,
    );
    const bodies = Array.from({ length: settings.floodJobs }, () => requests.take());
    let next = 0;
    await Promise.all(
      Array.from({ length: FLOOD_SUBMITTERS }, async () => {
        while (next < bodies.length) {
          const body = bodies[next++];
          if (body === undefined) break;
          try {
            outcome.floodIds.push(await submitNewsJob(tenantA.gateway, body));
          } catch (error) {
            outcome.problems.push(`tenant A: ${error instanceof Error ? error.message : String(error)}`);
          }
        }
      }),
    );
    outcome.floodSubmitS = (performance.now() - floodStart) / 1000;
    note(`flood submitted in ${fixed(outcome.floodSubmitS, 1)} s; waiting until tenant A's jobs are finished`);
    const floodCounts = await waitForAll(pool, outcome.floodIds, settings.drainTimeoutMs);
    floodDone = true;
    await Promise.all(othersRunning);
    note('waiting until B–E’s last jobs are finished');
    await waitForAll(pool, outcome.otherIds, 120_000);
    outcome.drainS = (performance.now() - floodStart) / 1000;
    sampling = false;
    await sampler;
    if (floodCounts.unfinished > 0)
      note(`${floodCounts.unfinished} of A's jobs were not finished within ${settings.drainTimeoutMs / 1000} s`);

    const all = [...outcome.floodIds, ...outcome.otherIds];
    outcome.counts = await countJobs(pool, all);
    const { rows: failed } = await pool.query<{ n: number; by429: number }>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE error::text ILIKE '%rate%limit%' OR error::text ILIKE '%429%')::int AS by429
         FROM jobs WHERE id = ANY($1::uuid[]) AND status = 'failed'`,
      [all],
    );
    outcome.failedBy429 = failed[0]?.by429 ?? 0;
    outcome.failureReasons = await failureReasons(pool, all);
    const { rows: attempts } = await pool.query<{ jobs: number; retried: number }>(
      `SELECT count(*)::int AS jobs, count(*) FILTER (WHERE attempts > 1)::int AS retried FROM jobs WHERE id = ANY($1::uuid[])`,
      [all],
    );
    outcome.attempts = attempts[0] ?? { jobs: 0, retried: 0 };
    const { rows: waits } = await pool.query<{ tenant: string; wait_ms: number; run_ms: number }>(
      `SELECT t.name AS tenant, (extract(epoch FROM j.started_at - j.created_at) * 1000)::float8 AS wait_ms,
              (extract(epoch FROM j.finished_at - j.started_at) * 1000)::float8 AS run_ms
         FROM jobs j JOIN tenants t ON t.id = j.tenant_id
        WHERE j.id = ANY($1::uuid[]) AND j.started_at IS NOT NULL AND j.finished_at IS NOT NULL`,
      [all],
    );
    outcome.waits = waits.map((row) => ({ tenant: row.tenant, waitMs: row.wait_ms, runMs: row.run_ms }));

    // The backlog: A's jobs waiting for a worker, or model calls waiting for the budget in any replica.
    const backlog = outcome.samples.filter((entry) => entry.pendingA > 0 || budgetWaiting(entry) > 0);
    const from = backlog[0];
    const to = backlog[backlog.length - 1];
    if (from !== undefined && to !== undefined && to !== from) {
      outcome.window = { from, to };
      // Tokens of the jobs finished within the window (jobs.usage: every attempt's calls).
      const { rows: tokens } = await pool.query<{ input: number; output: number; calls: number }>(
        `SELECT coalesce(sum((usage->>'input_tokens')::bigint + (usage->>'cache_creation_input_tokens')::bigint), 0)::float8 AS input,
                coalesce(sum((usage->>'output_tokens')::bigint), 0)::float8 AS output,
                coalesce(sum((usage->>'model_calls')::bigint), 0)::float8 AS calls
           FROM jobs WHERE type = 'news' AND finished_at >= to_timestamp($1 / 1000.0) AND finished_at < to_timestamp($2 / 1000.0)`,
        [from.wallMs, to.wallMs],
      );
      outcome.tokens = { windowInput: tokens[0]?.input ?? 0, windowOutput: tokens[0]?.output ?? 0, windowCalls: tokens[0]?.calls ?? 0 };
    }
    for (const service of system.services)
      if (service.child.exitCode !== null || service.child.signalCode !== null)
        outcome.problems.push(
          `${service.name} exited (${service.child.exitCode ?? service.child.signalCode}):\n${service.output().slice(-2000)}`,
        );
    return outcome;
  });
}

async function waitForAll(pool: Pool, ids: readonly string[], timeoutMs: number) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const counts = await countJobs(pool, ids);
    if (counts.unfinished === 0 || performance.now() > deadline) return counts;
    await delay(250);
  }
}

export async function capacity(options: BenchOptions, command: string): Promise<boolean> {
  const timeScale = options.timeScale ?? 1;
  const concurrency = options.concurrency ?? (options.quick ? 200 : 600);
  const settings: Settings = {
    floodJobs: options.jobs ?? (options.quick ? 300 : 3_000),
    timeScale,
    concurrency,
    // Tenant A may hold all but a quarter of one replica's slots (1,650 of 1,800 at the default 600): more than 500
    // a worker, while the other tenants find a slot free. With every slot A's (a first run), A's jobs, served after
    // B–E's at the budget, freed a slot about a second, and B–E waited up to 13 s for one before theirs could cycle.
    tenantCap: concurrency * REPLICAS - Math.floor(concurrency / 4),
    maxOutputTokens: options.maxTokens ?? 8_192,
    otherIntervalMs: 1_000 * timeScale,
    otherJobs: options.quick ? 30 : 150,
    // A's jobs at the output limit: ~2,300 output tokens a job (n = 1–20) against 400,000 a model minute is ~170 a
    // minute, so 3,000 take ~18 model minutes; twice that, at the time scale.
    drainTimeoutMs: Math.max(300_000, Math.round(((options.jobs ?? (options.quick ? 300 : 3_000)) / 170) * 2 * 60_000 * timeScale)),
  };
  const machine = describeMachine();
  const started = performance.now();
  const outcome = await measure(settings);
  printRunHeading('capacity', command, machine, started, loadAverage());
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

const met = (ok: boolean) => (ok ? 'yes' : 'NO');
const kb = (bytes: number) => fixed(bytes / 1024, 1);

function report(settings: Settings, outcome: Outcome): void {
  const scale = settings.timeScale;
  const modelS = (wallMs: number) => wallMs / 1000 / scale;
  print();
  print(
    `settings: time scale ${scale} (1 s of model time = ${fixed(scale, 2)} s wall-clock); organisation limits per model ` +
      `(${LIMITED_MODELS.join(', ')}), per minute of model time: ${thousands(ORGANISATION_LIMITS.requestsPerMinute)} requests, ` +
      `${thousands(ORGANISATION_LIMITS.inputTokensPerMinute)} input tokens, ${thousands(ORGANISATION_LIMITS.outputTokensPerMinute)} output tokens; ` +
      `fake pace: the defaults (news on ${NEWS_MODEL}); ${REPLICAS} news workers, NEWS_WORKER_CONCURRENCY=${settings.concurrency}, ` +
      `NEWS_WORKER_TENANT_CAP=${settings.tenantCap}; AI_MODEL_LIMITS at the limits ÷ time scale, ` +
      `AI_MODEL_BUDGET_INTERACTIVE_SHARE=${INTERACTIVE_SHARE}, AI_MAX_OUTPUT_TOKENS=${settings.maxOutputTokens}, AI_MAX_RETRIES=1; ` +
      `tenant A: ${thousands(settings.floodJobs)} jobs; B–E (news of n = 4–5, the default size; A: n = 1–20 but those): one job every ${fixed(settings.otherIntervalMs, 0)} ms wall-clock each, ` +
      `at most ${settings.otherJobs} each (fewer when A's jobs finish first)`,
  );
  print(
    `tenant A's flood was submitted in ${fixed(outcome.floodSubmitS, 1)} s; every job finished ${fixed(outcome.drainS, 1)} s ` +
      `(${fixed(outcome.drainS / scale / 60, 1)} model minutes) after the flood began`,
  );

  // B–E's wait before their job starts, and their run.
  const others = outcome.waits.filter((entry) => entry.tenant !== FLOOD_TENANT);
  const flood = outcome.waits.filter((entry) => entry.tenant === FLOOD_TENANT);
  const waitStats = percentiles(others.map((entry) => entry.waitMs));
  const runStats = percentiles(others.map((entry) => entry.runMs));
  const floodWait = percentiles(flood.map((entry) => entry.waitMs));
  const floodRun = percentiles(flood.map((entry) => entry.runMs));
  const row = (label: string, jobs: number, stats: ReturnType<typeof percentiles>) => [
    label,
    thousands(jobs),
    `${fixed(stats.p50 / 1000, 2)} (${fixed(modelS(stats.p50), 1)})`,
    `${fixed(stats.p99 / 1000, 2)} (${fixed(modelS(stats.p99), 1)})`,
    `${fixed(stats.max / 1000, 2)} (${fixed(modelS(stats.max), 1)})`,
  ];
  print();
  print('### Jobs: wait before the job starts (started_at − created_at) and run (finished_at − started_at), s wall-clock (model time)');
  print();
  print(
    table(
      ['', 'jobs', 'p50', 'p99', 'max'],
      [
        row('B–E: wait before start', others.length, waitStats),
        row('B–E: run', others.length, runStats),
        row('A: wait before start', flood.length, floodWait),
        row('A: run', flood.length, floodRun),
      ],
    ),
  );

  // The allowance used while a backlog existed.
  const window = outcome.window;
  let utilisation = Number.NaN;
  let binding = 'n/a';
  const calls = { total: 0, rateLimited: 0 };
  const last = outcome.samples[outcome.samples.length - 1];
  if (last !== undefined) calls.total = last.calls;
  if (last !== undefined) calls.rateLimited = last.rateLimited;
  if (window !== undefined) {
    const minutes = modelS(window.to.atMs - window.from.atMs) / 60;
    const requests = (window.to.calls - window.from.calls) / (ORGANISATION_LIMITS.requestsPerMinute * minutes);
    const reserved = (window.to.maxTokens - window.from.maxTokens) / (ORGANISATION_LIMITS.outputTokensPerMinute * minutes);
    const input = outcome.tokens.windowInput / (ORGANISATION_LIMITS.inputTokensPerMinute * minutes);
    const output = outcome.tokens.windowOutput / (ORGANISATION_LIMITS.outputTokensPerMinute * minutes);
    const dims: [string, number, string][] = [
      ['requests', requests, `${thousands((window.to.calls - window.from.calls) / minutes)} a minute`],
      [
        'input tokens (uncached input and cache writes, of the jobs finished)',
        input,
        `${thousands(outcome.tokens.windowInput / minutes)} a minute`,
      ],
      ['output tokens written (of the jobs finished)', output, `${thousands(outcome.tokens.windowOutput / minutes)} a minute`],
      [
        'output tokens reserved at admission (max_tokens, given back at the end)',
        reserved,
        `${thousands((window.to.maxTokens - window.from.maxTokens) / minutes)} a minute`,
      ],
    ];
    const top = dims
      .filter(([name]) => !name.startsWith('output tokens reserved'))
      .reduce((best, entry) => (entry[1] > best[1] ? entry : best));
    utilisation = top[1];
    binding = top[0];
    print();
    print(
      `### The organisation's allowance while a backlog existed (${fixed(modelS(window.to.atMs - window.from.atMs), 0)} s of model time, ` +
        `${fixed((window.to.atMs - window.from.atMs) / 1000, 1)} s wall-clock; A's jobs pending or model calls waiting for the budget)`,
    );
    print();
    print(
      table(
        ['dimension', 'used', 'share of the limit'],
        dims.map(([name, share, used]) => [name, used, `${fixed(share * 100, 1)} %`]),
      ),
    );
  }

  // One worker process: jobs in flight and memory per in-flight job.
  let best = { pid: 0, inFlight: 0, rssPerJob: Number.NaN, heapPerJob: Number.NaN };
  const pids = [...outcome.idle.keys()];
  const perWorker = pids.map((pid) => {
    const idle = outcome.idle.get(pid) as WorkerMemory;
    const withPid = outcome.samples.filter((entry) => entry.memory.has(pid));
    const peak = Math.max(0, ...withPid.map((entry) => entry.running.get(pid) ?? 0));
    // The samples at 90 % of the peak or more: memory per job from their median deltas.
    const near = withPid.filter((entry) => (entry.running.get(pid) ?? 0) >= peak * 0.9 && peak > 0);
    const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
    const rssPerJob = median(near.map((entry) => ((entry.memory.get(pid)?.rss ?? 0) - idle.rss) / (entry.running.get(pid) ?? 1)));
    const heapPerJob = median(near.map((entry) => ((entry.memory.get(pid)?.heap ?? 0) - idle.heap) / (entry.running.get(pid) ?? 1)));
    const peakRss = Math.max(...withPid.map((entry) => entry.memory.get(pid)?.rss ?? 0));
    const entry = { pid, inFlight: peak, rssPerJob, heapPerJob, idle, peakRss };
    if (peak > best.inFlight) best = entry;
    return entry;
  });
  print();
  print('### One worker process: jobs in flight (running, leased by it) and memory per in-flight job');
  print();
  print(
    table(
      ['worker (pid)', 'jobs in flight, peak', 'idle RSS MB', 'idle heap MB', 'peak RSS MB', 'RSS Δ per job KB', 'heap Δ per job KB'],
      perWorker.map((entry) => [
        String(entry.pid),
        thousands(entry.inFlight),
        fixed(entry.idle.rss / 2 ** 20, 0),
        fixed(entry.idle.heap / 2 ** 20, 0),
        fixed(entry.peakRss / 2 ** 20, 0),
        kb(entry.rssPerJob),
        kb(entry.heapPerJob),
      ]),
    ),
  );

  const submitted = outcome.floodIds.length + outcome.otherIds.length;
  const { counts } = outcome;
  const share429 = calls.rateLimited / Math.max(1, calls.total + calls.rateLimited);
  print();
  print(
    `model calls answered: ${thousands(calls.total)}; 429s: ${thousands(calls.rateLimited)}; jobs retried (attempts > 1): ${thousands(outcome.attempts.retried)}; ` +
      `output tokens written per call: ${fixed(outcome.tokens.windowOutput / Math.max(1, outcome.tokens.windowCalls), 0)}, input per call: ${thousands(outcome.tokens.windowInput / Math.max(1, outcome.tokens.windowCalls))}; ` +
      `failed: ${thousands(counts.failed)} (by a 429: ${thousands(outcome.failedBy429)})${outcome.failureReasons.length > 0 ? `: ${outcome.failureReasons.join('; ')}` : ''}`,
  );
  const memoryPerJob = Math.max(best.rssPerJob, best.heapPerJob);
  print();
  print('### Targets (issue 35)');
  print();
  print(
    table(
      ['target', 'measured', 'met'],
      [
        [
          `B–E wait before start p99 ≤ ${TARGET_WAIT_P99_MODEL_S} s of model time`,
          `${fixed(modelS(waitStats.p99), 1)} s (${fixed(waitStats.p99 / 1000, 2)} s wall-clock)`,
          met(modelS(waitStats.p99) <= TARGET_WAIT_P99_MODEL_S),
        ],
        [
          `model calls ≥ ${TARGET_UTILISATION * 100} % of the allowance while a backlog exists (binding dimension)`,
          `${fixed(utilisation * 100, 1)} % (${binding})`,
          met(utilisation >= TARGET_UTILISATION),
        ],
        [
          `model 429s ≤ ${TARGET_429_SHARE * 100} % of calls, no job failed by one`,
          `${fixed(share429 * 100, 2)} %, ${outcome.failedBy429} failed by one`,
          met(share429 <= TARGET_429_SHARE && outcome.failedBy429 === 0),
        ],
        [
          `one worker process ≥ ${TARGET_IN_FLIGHT} jobs in flight at ≤ ${TARGET_BYTES_PER_JOB / 1024} KB each`,
          `${thousands(best.inFlight)} at ${kb(best.rssPerJob)} KB RSS, ${kb(best.heapPerJob)} KB heap`,
          met(best.inFlight >= TARGET_IN_FLIGHT && memoryPerJob <= TARGET_BYTES_PER_JOB),
        ],
        [
          'every submitted job accounted for (completed + failed = submitted)',
          `${thousands(submitted)} submitted: ${thousands(counts.completed)} completed, ${thousands(counts.failed)} failed, ${thousands(counts.unfinished)} unfinished`,
          met(counts.unfinished === 0 && counts.completed + counts.failed === submitted),
        ],
      ],
      ['left', 'left', 'left'],
    ),
  );
}
