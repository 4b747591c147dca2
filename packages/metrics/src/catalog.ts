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
  help: "Messages behind the end of the partition when the last batch was fetched, by consumer group, topic and partition (the KEDA scaler reads the broker's own figure; this one is for dashboards).",
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
