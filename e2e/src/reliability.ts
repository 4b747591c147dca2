// What the fault suite (e2e/test/faults) shares: its size, its one-line reports, and read-only looks into the
// system's database (the job ledger a fault test judges by). See docs/reliability.md#fault-tests.
import { appendFileSync } from 'node:fs';
import { createKey, createTenant, setLimitOverride } from '@fin/api-keys';
import { startFakeAnthropic, startFakeFinnhub, type FakeAnthropicOptions } from '@fin/fakes';
import pg from 'pg';
import { sharedEnv, startSystem, type ServiceProcess, type System, type SystemOptions } from './system';

/**
 * `RELIABILITY_SIZE=full` runs every fault scenario at its full size (more jobs, more faults); anything else (or
 * nothing) runs the CI size, which keeps the whole fault suite within a few minutes on a 2-core machine.
 */
export type ReliabilitySize = 'ci' | 'full';

const reliabilitySize: ReliabilitySize = process.env.RELIABILITY_SIZE === 'full' ? 'full' : 'ci';

/** The value for the size this run has. */
export function bySize<T>(sizes: Record<ReliabilitySize, T>): T {
  return sizes[reliabilitySize];
}

export interface SurvivalReport {
  /** The scenario, as named in docs/reliability.md's table. */
  scenario: string;
  /** Units of work exposed to the fault (jobs, events, streams, …), named by `unit`. */
  n: number;
  /** How many of them ended as promised: a job completed (or failed with its reason), a stream ended, … */
  survived: number;
  /** How many were lost: accepted and then missing, stuck, or with two results. */
  lost: number;
  unit?: string;
  /** Further counts worth reading (faults injected, completed vs failed, duplicates absorbed, …). */
  details?: Record<string, number | string>;
  /** What went wrong with each unit that did not survive: printed with the line, and asserted empty. */
  problems?: readonly string[];
}

/**
 * Prints a scenario's line ("survived N of N, lost 0") to the test output and, when `RELIABILITY_REPORT` names a
 * file, appends it there as one JSON line; then asserts that everything survived and nothing was lost. The line
 * is written first, so a failing run still shows its counts.
 */
/** Whether a survival report of this test file failed: its fault system then prints the services' output. */
let survivalFailed = false;

export function reportSurvival(report: SurvivalReport): void {
  const unit = report.unit ?? 'jobs';
  const details = Object.entries(report.details ?? {})
    .map(([name, value]) => `${name} ${value}`)
    .join(', ');
  const line = `[reliability] ${report.scenario}: survived ${report.survived} of ${report.n} ${unit}, lost ${report.lost}${details ? ` (${details})` : ''} [size ${reliabilitySize}]`;
  const problems = report.problems ?? [];
  process.stdout.write(
    `${line}\n${problems
      .slice(0, 20)
      .map((problem) => `  not survived: ${problem}\n`)
      .join('')}`,
  );
  const file = process.env.RELIABILITY_REPORT;
  if (file)
    appendFileSync(
      file,
      `${JSON.stringify({ ...report, problems: problems.length, unit, size: reliabilitySize, at: new Date().toISOString() })}\n`,
    );
  survivalFailed ||= problems.length > 0 || report.lost > 0 || report.survived !== report.n;
  expect(problems).toEqual([]);
  expect(report.n).toBeGreaterThan(0);
  expect(report.lost).toBe(0);
  expect(report.survived).toBe(report.n);
}

/**
 * Prints what every service process wrote, the last 20,000 characters each: after a survival report that failed
 * (what a CI log needs to tell why), or always with E2E_DEBUG set.
 */
function printServiceOutput(
  services: readonly { name: string; child: { exitCode: number | null; signalCode: NodeJS.Signals | null }; output(): string }[],
): void {
  if (!process.env.E2E_DEBUG && !survivalFailed) return;
  for (const service of services)
    process.stdout.write(
      `--- ${service.name} (exit ${service.child.exitCode ?? service.child.signalCode ?? 'none'})\n${service.output()}\n`,
    );
}

/** Runs `work` on a connection of its own to the database at `url`. */
export async function withDb<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: 'fin-fault-tests' });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * A tenant with a key of every scope and request limits far above what a fault test sends, made with the
 * operator functions the admin CLI runs (in-process, so it can run while the system starts).
 */
async function faultTenantKey(databaseUrl: string, name: string): Promise<string> {
  const pool = new pg.Pool({ connectionString: databaseUrl, application_name: 'fin-fault-tests', max: 1 });
  try {
    await createTenant(pool, name);
    for (const product of ['news', 'stock-report', 'analysis', 'jobs', 'tools']) await setLimitOverride(pool, name, product, 100_000);
    return (await createKey(pool, { tenant: name })).apiKey;
  } finally {
    await pool.end();
  }
}

export interface FaultSystemOptions {
  /** The database the system runs on (the test creates it: a test database, or a private cluster). */
  databaseUrl: string;
  /** The tenant whose key the test sends its requests with (faultTenantKey). */
  tenant: string;
  /** What the fake Claude answers: a scripted model's handler. */
  model: FakeAnthropicOptions['handler'];
  /** Added to every service's environment (e.g. KAFKA_BROKERS of the test's own broker). */
  env?: Record<string, string>;
  /** Added to every worker's environment. */
  workerEnv?: Record<string, string>;
  system?: SystemOptions;
}

export interface FaultSystem {
  system: System;
  /** The tenant's API key. */
  key: string;
  /** Stops the services (resuming any the test left paused) and the fakes; prints their output after a failed report. */
  stop(): Promise<void>;
}

/**
 * What every fault test runs against: the fakes at the wire (Claude answering as `model` says, Finnhub), the
 * system (startSystem) on `databaseUrl`, and a tenant with limits far above what the test sends.
 */
export async function startFaultSystem({
  databaseUrl,
  tenant,
  model,
  env = {},
  workerEnv = {},
  system: options = {},
}: FaultSystemOptions): Promise<FaultSystem> {
  const claude = await startFakeAnthropic({ handler: model, recordRequests: false });
  const finnhub = await startFakeFinnhub({ token: 'finnhub-e2e-token' }).catch(async (error: unknown) => {
    await claude.close();
    throw error;
  });
  const closeFakes = () => Promise.all([claude.close(), finnhub.close()]);
  try {
    const shared = {
      ...sharedEnv({ databaseUrl, anthropicUrl: claude.url, finnhubUrl: finnhub.apiBaseUrl, finnhubToken: 'finnhub-e2e-token' }),
      ...env,
    };
    const [system, key] = await Promise.all([startSystem(shared, workerEnv, options), faultTenantKey(databaseUrl, tenant)]);
    return {
      system,
      key,
      async stop() {
        printServiceOutput(system.services);
        for (const service of system.services) if (service.child.exitCode === null) service.child.kill('SIGCONT');
        await system.stop();
        await closeFakes();
      },
    };
  } catch (error) {
    await closeFakes();
    throw error;
  }
}

/** A job as the fault tests judge it: its row, and how many terminal events its workers committed. */
export interface JobLedgerEntry {
  id: string;
  status: 'pending' | 'running' | 'completed' | 'failed';
  attempts: number;
  eventSeq: number;
  error: { type: string; detail: string } | null;
  hasResult: boolean;
  /** `completed` job.state events in the outbox: what workers committed as results (at most one may exist). */
  completions: number;
  /** `failed` job.state events in the outbox. */
  failures: number;
}

/** The ledger of the given jobs; ids without a row are missing from it. */
export async function jobLedger(client: pg.Client, ids: readonly string[]): Promise<Map<string, JobLedgerEntry>> {
  const { rows } = await client.query<{
    id: string;
    status: JobLedgerEntry['status'];
    attempts: number;
    event_seq: number;
    error: JobLedgerEntry['error'];
    has_result: boolean;
    completions: string;
    failures: string;
  }>(
    `SELECT j.id::text AS id, j.status, j.attempts, j.event_seq, j.error, j.result IS NOT NULL AS has_result,
            count(o.id) FILTER (WHERE o.envelope->'payload'->>'status' = 'completed') AS completions,
            count(o.id) FILTER (WHERE o.envelope->'payload'->>'status' = 'failed') AS failures
       FROM jobs j
       LEFT JOIN outbox o ON o.topic = 'jobs.events' AND o.message_key = j.id::text
      WHERE j.id = ANY($1::uuid[])
      GROUP BY j.id`,
    [ids],
  );
  return new Map(
    rows.map((row) => [
      row.id,
      {
        id: row.id,
        status: row.status,
        attempts: row.attempts,
        eventSeq: row.event_seq,
        error: row.error,
        hasResult: row.has_result,
        completions: Number(row.completions),
        failures: Number(row.failures),
      },
    ]),
  );
}

/** Whether a job has reached a final state. */
const isFinal = (entry: JobLedgerEntry | undefined): boolean => entry?.status === 'completed' || entry?.status === 'failed';

/**
 * Whether a finished job kept every promise: completed with its one result (exactly one completion committed by
 * a worker), or failed with a readable reason and no result committed.
 */
export function keptPromises(entry: JobLedgerEntry | undefined): boolean {
  if (entry?.status === 'completed') return entry.hasResult && entry.completions === 1;
  if (entry?.status === 'failed') return entry.error !== null && entry.error.detail.length > 0 && entry.completions === 0;
  return false;
}

export interface JobOutcomes {
  n: number;
  /** Finished and kept every promise (see keptPromises). */
  survived: number;
  /** Missing, still pending or running, or finished with two results (or none). */
  lost: number;
  completed: number;
  failed: number;
  /** Failure reasons by error type. */
  failedBy: Record<string, number>;
  /** Ids that did not survive, with what is wrong, for the failure message. */
  problems: string[];
}

/** Judges every accepted job by the ledger. */
function judgeJobs(ids: readonly string[], ledger: Map<string, JobLedgerEntry>): JobOutcomes {
  const outcomes: JobOutcomes = { n: ids.length, survived: 0, lost: 0, completed: 0, failed: 0, failedBy: {}, problems: [] };
  for (const id of ids) {
    const entry = ledger.get(id);
    if (entry?.status === 'completed') outcomes.completed += 1;
    if (entry?.status === 'failed') {
      outcomes.failed += 1;
      const type = entry.error?.type ?? 'none';
      outcomes.failedBy[type] = (outcomes.failedBy[type] ?? 0) + 1;
    }
    if (keptPromises(entry)) outcomes.survived += 1;
    else {
      outcomes.lost += 1;
      outcomes.problems.push(
        entry
          ? `${id}: ${entry.status}, ${entry.completions} completion(s) committed, error ${JSON.stringify(entry.error)}`
          : `${id}: no such job`,
      );
    }
  }
  return outcomes;
}

/**
 * Waits until every job has reached a final state (or the hang guard passes), then judges them. The hang guard
 * is not an assertion about speed: a job still unfinished when it passes counts as lost.
 */
export async function settleJobs(client: pg.Client, ids: readonly string[], { timeoutMs }: { timeoutMs: number }): Promise<JobOutcomes> {
  const deadline = Date.now() + timeoutMs;
  let ledger = await jobLedger(client, ids);
  while (Date.now() < deadline && !ids.every((id) => isFinal(ledger.get(id)))) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    ledger = await jobLedger(client, ids);
  }
  return judgeJobs(ids, ledger);
}

/** The process id inside a worker id (`host:pid:random`), as written to jobs.lease_owner. */
/** The system's news workers still running (not exited, not killed). */
export function liveNewsWorkers(system: System): ServiceProcess[] {
  return system.services.filter(
    (service) => service.name === 'news-worker' && service.child.exitCode === null && service.child.signalCode === null,
  );
}

export function pidOfWorkerId(workerId: string): number {
  const pid = Number(workerId.split(':').at(-2));
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`Not a worker id: ${workerId}`);
  return pid;
}

/** Failure messages that name what went wrong, for expect(...).toEqual([]) style checks. */
export function describeOutcomes(outcomes: JobOutcomes): Record<string, number | string> {
  return {
    completed: outcomes.completed,
    'failed with a reason': outcomes.failed,
    ...Object.fromEntries(Object.entries(outcomes.failedBy).map(([type, count]) => [`failed ${type}`, count])),
  };
}
