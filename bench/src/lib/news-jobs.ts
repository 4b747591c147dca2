// News jobs as the benchmarks drive them: distinct requests (so every one is a cache miss and a job of its
// own), submitted through the gateway, polled on the status endpoint, and timed from both sides: the client's
// clock, and the timestamps the system writes in Postgres on the way (job row, outbox rows, processed events).
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import type { Pool } from '@fin/db';
import type { HttpClient } from './http';

/** The symbols of the fake Finnhub's sample data (packages/fakes/src/finnhub/sample-data.ts). */
const SYMBOLS = ['AAPL', 'MSFT', 'NVDA', 'GOOGL', 'AMZN', 'TSLA'] as const;
const LANGUAGES = ['en', 'de', 'fr', 'es', 'it', 'nl', 'pt', 'ja'] as const;
const SUBSETS = (1 << SYMBOLS.length) - 1;
const NS = 20;
/** How many distinct requests distinctNewsRequest() makes before it repeats: 63 symbol sets × 20 n × 8 languages. */
const DISTINCT_NEWS_REQUESTS = SUBSETS * NS * LANGUAGES.length;

export interface NewsRequestBody {
  symbols: string[];
  n: number;
  language: string;
}

/**
 * The index-th of DISTINCT_NEWS_REQUESTS requests that differ in what the cache key covers (the set of symbols, n,
 * language). Consecutive indexes walk every symbol set first, so any run of them mixes small and large jobs.
 */
function distinctNewsRequest(index: number): NewsRequestBody {
  const wrapped = index % DISTINCT_NEWS_REQUESTS;
  const subset = (wrapped % SUBSETS) + 1;
  const n = (Math.floor(wrapped / SUBSETS) % NS) + 1;
  const language = LANGUAGES[Math.floor(wrapped / (SUBSETS * NS)) % LANGUAGES.length] ?? 'en';
  return { symbols: SYMBOLS.filter((_, bit) => (subset & (1 << bit)) !== 0), n, language };
}

/** Hands out distinct requests across a whole run (every scenario phase takes fresh ones). */
export class NewsRequests {
  private next = 0;

  /** `sizes`: only requests whose n it accepts (two instances with disjoint sizes never ask the same request). */
  constructor(private readonly sizes: (n: number) => boolean = () => true) {}

  take(): NewsRequestBody {
    for (;;) {
      if (this.next >= DISTINCT_NEWS_REQUESTS) throw new Error(`a run can make at most ${DISTINCT_NEWS_REQUESTS} distinct news requests`);
      const request = distinctNewsRequest(this.next++);
      if (this.sizes(request.n)) return request;
    }
  }
}

/** Milliseconds since the epoch with sub-millisecond resolution: comparable with Postgres timestamps. */
function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}

export const NEWS_PATH = '/api/products/news';
export const statusPath = (jobId: string) => `/api/jobs/news/${jobId}/status`;

export interface Gateway {
  client: HttpClient;
  url: string;
  apiKey: string;
}

/** POST /api/products/news through the gateway; a cache miss must be accepted (202) with a job id. */
export async function submitNewsJob(gateway: Gateway, body: NewsRequestBody): Promise<string> {
  const answer = await gateway.client.request(
    'POST',
    `${gateway.url}${NEWS_PATH}`,
    { 'content-type': 'application/json', 'x-api-key': gateway.apiKey },
    JSON.stringify(body),
  );
  if (answer.status !== 202)
    throw new Error(
      `POST ${NEWS_PATH} ${JSON.stringify(body)} answered ${answer.status}, expected 202 (a cache miss): ${answer.body.slice(0, 300)}`,
    );
  const { job_id: jobId } = JSON.parse(answer.body) as { job_id?: unknown };
  if (typeof jobId !== 'string') throw new Error(`the 202 answer has no job_id: ${answer.body.slice(0, 300)}`);
  return jobId;
}

export interface TimedJob {
  jobId: string;
  /** Wall clock (ms, sub-ms resolution) when the POST was sent. */
  postedAtMs: number;
  /** POST sent → 202 received. */
  acceptMs: number;
  /** POST sent → the status endpoint answered `completed`. */
  completedMs: number;
  /** Wall clock when that answer arrived. */
  seenAtMs: number;
  polls: number;
}

/**
 * Submits a job and polls its status every `pollIntervalMs` (after each answer) until it is completed; after
 * `fastPollingMs` it polls every `slowPollIntervalMs` instead, so that jobs delayed by an overload do not multiply
 * the load (a job in flight polled every 10 ms is 100 requests a second). Throws when a request fails, the job
 * fails, or it is not completed within `timeoutMs`.
 */
export async function submitAndPoll(
  gateway: Gateway,
  body: NewsRequestBody,
  { pollIntervalMs = 10, fastPollingMs = 1_000, slowPollIntervalMs = 100, timeoutMs = 60_000 } = {},
): Promise<TimedJob> {
  const postedAtMs = wallClockMs();
  const start = performance.now();
  const jobId = await submitNewsJob(gateway, body);
  const acceptMs = performance.now() - start;
  const headers = { 'x-api-key': gateway.apiKey };
  const url = `${gateway.url}${statusPath(jobId)}`;
  for (let polls = 1; ; polls++) {
    const answer = await gateway.client.request('GET', url, headers);
    const now = performance.now();
    if (answer.status !== 200) throw new Error(`GET ${statusPath(jobId)} answered ${answer.status}: ${answer.body.slice(0, 300)}`);
    const status = (JSON.parse(answer.body) as { status?: string }).status;
    if (status === 'completed')
      return { jobId, postedAtMs, acceptMs, completedMs: now - start, seenAtMs: performance.timeOrigin + now, polls };
    if (status === 'failed') throw new Error(`job ${jobId} failed: ${answer.body.slice(0, 500)}`);
    if (now - start > timeoutMs) throw new Error(`job ${jobId} was not completed within ${timeoutMs} ms (last status ${status})`);
    await delay(now - start < fastPollingMs ? pollIntervalMs : slowPollIntervalMs);
  }
}

export interface JobCounts {
  completed: number;
  failed: number;
  unfinished: number;
}

export async function countJobs(pool: Pool, ids: readonly string[]): Promise<JobCounts> {
  const { rows } = await pool.query<{ completed: number; failed: number; total: number }>(
    `SELECT count(*) FILTER (WHERE status = 'completed')::int AS completed, count(*) FILTER (WHERE status = 'failed')::int AS failed, count(*)::int AS total
       FROM jobs WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  const row = rows[0] ?? { completed: 0, failed: 0, total: 0 };
  return { completed: row.completed, failed: row.failed, unfinished: ids.length - row.completed - row.failed };
}

/** Waits until every job is completed or failed, or `timeoutMs` passed; returns the last counts. */
export async function waitForJobs(pool: Pool, ids: readonly string[], timeoutMs: number, intervalMs = 100): Promise<JobCounts> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const counts = await countJobs(pool, ids);
    if (counts.unfinished === 0 || performance.now() > deadline) return counts;
    await delay(intervalMs);
  }
}

/** Reasons of failed jobs (the error the status endpoint shows), at most `limit`. */
export async function failureReasons(pool: Pool, ids: readonly string[], limit = 5): Promise<string[]> {
  const { rows } = await pool.query<{ id: string; error: unknown }>(
    `SELECT id::text AS id, error FROM jobs WHERE id = ANY($1::uuid[]) AND status = 'failed' LIMIT $2`,
    [ids, limit],
  );
  return rows.map((row) => `${row.id}: ${JSON.stringify(row.error)}`);
}

/**
 * One job's way through the system, from the timestamps Postgres wrote (all wall-clock ms since the epoch; a
 * timestamp is the start of the transaction that wrote it, `now()`):
 * created (the news API's transaction: job row and job.requested outbox row) → requestRelayed (the outbox
 * relay's batch that published the request began) → running (the worker claimed the job and wrote its
 * `running` event) → completedWritten (the worker committed its result and the `completed` event) →
 * finished (the same commit set the job's status, result and finished_at) → completedRelayed (the relay's batch that
 * published the `completed` event to the observers began).
 */
export interface JobTrace {
  jobId: string;
  created: number;
  requestRelayed: number;
  running: number;
  completedWritten: number;
  completedRelayed: number;
  finished: number;
  /** Job events (running, progress, completed) the worker wrote. */
  events: number;
}

export async function jobTraces(pool: Pool, ids: readonly string[]): Promise<JobTrace[]> {
  const ms = (column: string) => `(extract(epoch FROM ${column}) * 1000)::float8`;
  const { rows } = await pool.query<JobTrace>(
    `SELECT j.id::text AS "jobId",
            ${ms('j.created_at')} AS created,
            ${ms('r.published_at')} AS "requestRelayed",
            ${ms('e.first_written')} AS running,
            ${ms('e.completed_written')} AS "completedWritten",
            ${ms('e.completed_relayed')} AS "completedRelayed",
            ${ms('j.finished_at')} AS finished,
            e.events::int AS events
       FROM jobs j
       JOIN outbox r ON r.topic = 'jobs.news.requested' AND r.message_key = j.id::text
       JOIN LATERAL (
         SELECT min(o.created_at) AS first_written,
                max(o.created_at) FILTER (WHERE o.envelope->'payload'->>'status' = 'completed') AS completed_written,
                max(o.published_at) FILTER (WHERE o.envelope->'payload'->>'status' = 'completed') AS completed_relayed,
                count(*) AS events
           FROM outbox o WHERE o.topic = 'jobs.events' AND o.message_key = j.id::text) e ON true
      WHERE j.id = ANY($1::uuid[]) AND j.status = 'completed'`,
    [ids],
  );
  return rows;
}

/** Which service's outbox relay is the leader (holds the leader lock): it publishes every service's events. */
export async function relayLeader(pool: Pool): Promise<string> {
  const { rows } = await pool.query<{ application_name: string }>(
    `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.classid::text::bigint = $1 AND l.objid::text::bigint = 0 AND l.objsubid = 2
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [0x6f627265], // RELAY_LEADER_LOCK_CLASS of packages/events/src/outbox.ts
  );
  return rows.map((row) => row.application_name).join(', ') || 'none';
}
