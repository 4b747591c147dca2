// Every metric the services export, in one place (docs/operations.md#metrics lists them for operators). One
// registry per process: a service process exports its own; the single-process setup exports all of them.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
// Process CPU, memory, event-loop lag, GC and open handles, prefixed like ours.
collectDefaultMetrics({ register: registry, prefix: 'fin_' });

/** Latency buckets in seconds, from a cache hit (~1 ms) to a slow upstream (10 s). */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Job durations in seconds: news runs seconds, analysis up to minutes. */
const JOB_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300];

export const httpRequests = new Counter({
  name: 'fin_http_requests_total',
  help: 'HTTP requests answered, by service, method, route template and status code.',
  labelNames: ['service', 'method', 'route', 'status'] as const,
  registers: [registry],
});

export const httpRequestDuration = new Histogram({
  name: 'fin_http_request_duration_seconds',
  help: 'Time from request to the end of the response (for event streams: the whole stream), by service, method and route template.',
  labelNames: ['service', 'method', 'route'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const sseStreamsOpen = new Gauge({
  name: 'fin_sse_streams_open',
  help: 'Server-Sent Event streams open now, by service.',
  labelNames: ['service'] as const,
  registers: [registry],
});

export const jobSubmissions = new Counter({
  name: 'fin_job_submissions_total',
  help: 'Product requests by job type and how they were answered: cached (a cache hit), created (a new job), joined (an identical job in flight), replayed (same Idempotency-Key). Cache hit ratio: cached / (cached + created + joined).',
  labelNames: ['type', 'result'] as const,
  registers: [registry],
});

export const jobsFinished = new Counter({
  name: 'fin_jobs_finished_total',
  help: 'Jobs that reached a final state, by job type and outcome (completed or failed).',
  labelNames: ['type', 'outcome'] as const,
  registers: [registry],
});

export const jobDuration = new Histogram({
  name: 'fin_job_duration_seconds',
  help: "Time from a job's creation to its final state, by job type and outcome.",
  labelNames: ['type', 'outcome'] as const,
  buckets: JOB_BUCKETS,
  registers: [registry],
});

export const consumerLag = new Gauge({
  name: 'fin_kafka_consumer_lag',
  help: "Messages not yet consumed, by consumer group, topic and partition: the partition's end offset minus the group's committed offset, read from the broker every KAFKA_LAG_INTERVAL_MS by the job-status service, so a consumer that stalls or is gone shows growing lag.",
  labelNames: ['group', 'topic', 'partition'] as const,
  registers: [registry],
});

export const eventsHandled = new Counter({
  name: 'fin_events_handled_total',
  help: 'Events handled by consumers, by consumer group, topic and outcome (ok, dead_lettered).',
  labelNames: ['group', 'topic', 'outcome'] as const,
  registers: [registry],
});

export const modelTokens = new Counter({
  name: 'fin_model_tokens_total',
  help: 'Tokens billed by the model API, by model and kind (input, output, cache_read, cache_write).',
  labelNames: ['model', 'kind'] as const,
  registers: [registry],
});

export const modelRequests = new Counter({
  name: 'fin_model_requests_total',
  help: 'Requests to the model API, by model and outcome (ok or the error kind).',
  labelNames: ['model', 'outcome'] as const,
  registers: [registry],
});

/** Waits for the organisation's model allowance, in seconds: none at all up to minutes when a backlog exists. */
const BUDGET_WAIT_BUCKETS = [0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300];

export const modelBudgetWaitSeconds = new Histogram({
  name: 'fin_model_budget_wait_seconds',
  help: "Time a model call waited for the organisation's shared allowance before it was sent, by model and priority (interactive or queued).",
  labelNames: ['model', 'priority'] as const,
  buckets: BUDGET_WAIT_BUCKETS,
  registers: [registry],
});

export const modelBudgetWaiting = new Gauge({
  name: 'fin_model_budget_waiting',
  help: "Model calls of this process waiting for the organisation's shared allowance, by model and priority: work waiting for the model budget, not for a worker.",
  labelNames: ['model', 'priority'] as const,
  registers: [registry],
});

export const citationsResolved = new Counter({
  name: 'fin_citations_total',
  help: 'Citations the model claimed in a result, by product and outcome: kept, or dropped because the URL was not retrieved in the run (unknown_url) or the quote does not occur in the retrieved material (quote_not_found).',
  labelNames: ['product', 'outcome'] as const,
  registers: [registry],
});

export const figureChecks = new Counter({
  name: 'fin_figure_checks_total',
  help: "What the figure check after a stock report's answer did to each part stating financial figures (part: insight, implication, quick_insight): kept, or removed because a figure it states matches none given or its citations were all dropped; service_written: quick insights the service wrote from the figures to reach the minimum.",
  labelNames: ['part', 'outcome'] as const,
  registers: [registry],
});

export const outboxUnpublishedRows = new Gauge({
  name: 'fin_outbox_unpublished_rows',
  help: 'Outbox rows not yet published to Kafka (the whole table, read by every outbox relay every few seconds: take the max across pods).',
  registers: [registry],
});

export const outboxOldestUnpublishedAge = new Gauge({
  name: 'fin_outbox_oldest_unpublished_age_seconds',
  help: 'Age of the oldest outbox row not yet published (0 when none waits): how late job requests and events reach Kafka.',
  registers: [registry],
});

export const outboxRelayLeader = new Gauge({
  name: 'fin_outbox_relay_leader',
  help: '1 in the process whose outbox relay holds the leader lock (it alone publishes), 0 in the others: the sum across pods is 1.',
  registers: [registry],
});

export const jobsInFlight = new Gauge({
  name: 'fin_jobs_in_flight',
  help: 'Jobs not finished yet, by job type and status (pending: waiting for a worker; running), counted by every job-status service replica every 15 s: take the max across pods.',
  labelNames: ['type', 'status'] as const,
  registers: [registry],
});

export const reaperActions = new Counter({
  name: 'fin_reaper_actions_total',
  help: "What the lease reaper did to jobs, by action: requeued (a worker's lease ran out, next attempt requested), failed_expired (the lease ran out on the last attempt), failed_unclaimed (no worker claimed the job in time).",
  labelNames: ['action'] as const,
  registers: [registry],
});

export const mcpToolCalls = new Counter({
  name: 'fin_mcp_tool_calls_total',
  help: "MCP tool calls, by tool and outcome: ok (the result), pending (a job not finished within the tool's wait, answered with its id), refused (the key lacks the tool's scope), failed (the API's error, e.g. 429, or a failed job).",
  labelNames: ['tool', 'outcome'] as const,
  registers: [registry],
});

export const webhookAttempts = new Counter({
  name: 'fin_webhook_attempts_total',
  help: 'Webhook delivery attempts, by outcome (ok, http_error, blocked_address, redirect_refused, timeout, connection_failed, invalid_endpoint) and what became of the delivery: succeeded, retrying, failed (no 2xx within its retry window).',
  labelNames: ['outcome', 'delivery'] as const,
  registers: [registry],
});

/** A connection pool's counters, as pg.Pool keeps them; read at each scrape. */
export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
  max: number;
}

/** The pools of this process by name (`undefined` from a reader: that pool has ended and is forgotten). */
const poolReaders = new Map<() => PoolStats | undefined, string>();

/** Reports a pool's counters under `name` (pools of one name are added up) from now until the reader says it ended. */
export function meterPool(name: string, read: () => PoolStats | undefined): void {
  poolReaders.set(read, name);
}

function poolStats(): Map<string, PoolStats> {
  const byName = new Map<string, PoolStats>();
  for (const [read, name] of poolReaders) {
    const stats = read();
    if (stats === undefined) {
      poolReaders.delete(read);
      continue;
    }
    const sum = byName.get(name) ?? { total: 0, idle: 0, waiting: 0, max: 0 };
    byName.set(name, {
      total: sum.total + stats.total,
      idle: sum.idle + stats.idle,
      waiting: sum.waiting + stats.waiting,
      max: sum.max + stats.max,
    });
  }
  return byName;
}

/** A gauge per pool whose value is read from the pools at scrape time; an ended pool's series goes away. */
function poolGauge(name: string, help: string, field: keyof PoolStats): Gauge<'pool'> {
  return new Gauge({
    name,
    help,
    labelNames: ['pool'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [pool, stats] of poolStats()) this.set({ pool }, stats[field]);
    },
  });
}

// Pool names are the pool's `application_name` (the service and role, e.g. news-worker). Registered in the
// registry, read only through it.
poolGauge('fin_db_pool_connections', 'PostgreSQL connections open in the pool (busy and idle), by pool.', 'total');
poolGauge('fin_db_pool_idle_connections', 'Open PostgreSQL connections nobody is using, by pool.', 'idle');
poolGauge(
  'fin_db_pool_waiting_checkouts',
  'Requests for a connection queued because every connection of the pool is busy, by pool.',
  'waiting',
);
poolGauge('fin_db_pool_max_connections', 'The most connections the pool opens (its configured size), by pool.', 'max');

export const dbPoolCheckoutWait = new Histogram({
  name: 'fin_db_pool_checkout_wait_seconds',
  help: 'Time a request for a connection waited because every connection of the pool was busy, by pool (only such waits are observed: the count is the number of waits).',
  labelNames: ['pool'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const buildInfo = new Gauge({
  name: 'fin_build_info',
  help: 'Always 1; the labels say which release runs: version (FIN_VERSION, else the package version), commit (FIN_COMMIT, empty when not set) and the Node.js version.',
  labelNames: ['version', 'commit', 'node_version'] as const,
  registers: [registry],
});
