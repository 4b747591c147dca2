import { ErrorType, JobStatus, JobType } from '@fin/contracts';
import { z } from 'zod';
import { defineCatalog, defineTopic, type TopicDefinition } from './topic';

// The job types, statuses and error types are the API's own: an event can carry nothing the status endpoint
// could not answer with.
export { JobType };

/**
 * A job to run, written to the outbox in the same transaction as its `pending` job row (key = job_id). It names
 * the job only: the worker reads the request from the job row when it claims the job, so request bodies (and the
 * custom data in them) stay in Postgres and never travel through the broker. (Version 2 dropped the `request`
 * field that version 1 carried; a version 1 message still parses, its request ignored.)
 */
export const JobRequestedPayload = z.object({
  job_id: z.uuid(),
  job_type: JobType,
  tenant_id: z.uuid(),
  /** 1 for the first run; a retry after a lost worker carries the next attempt. */
  attempt: z.int().positive().optional(),
});
export type JobRequestedPayload = z.infer<typeof JobRequestedPayload>;

/**
 * The `seq` of a job's events is `attempt × SEQ_PER_ATTEMPT + n`, n = 1 … SEQ_PER_ATTEMPT − 1 within the attempt,
 * so every event of a later attempt sorts after every event of an earlier one. A runner never lets n leave its
 * range: past it, progress events are dropped and the terminal event takes the last number.
 */
export const SEQ_PER_ATTEMPT = 1000;

/**
 * A job's state as reported by its worker (key = job_id). `seq` increases with every event of one job, so the
 * job-status service can apply events monotonically and ignore late or duplicate ones. A `failed` event
 * always says why.
 */
export const JobStateEventPayload = z
  .object({
    job_id: z.uuid(),
    job_type: JobType,
    seq: z.int().min(1),
    status: JobStatus,
    progress: z.int().min(0).max(100),
    currently_working_on: z.string().optional(),
    result: z.record(z.string(), z.unknown()).optional(),
    error: z.object({ type: ErrorType, detail: z.string() }).optional(),
    worker_id: z.string().optional(),
    /**
     * On a `completed` event: which customer tools the run offered the model, as the database's digest of the set
     * (`customer_tool_set_digest`), or null when it offered none. A result is cached only under a key made for
     * exactly this set, and shared with other tenants only when it is null and the request had no custom data;
     * absent (a runner that does not report it), the result is not cached at all.
     */
    customer_tool_set: z.string().min(1).nullable().optional(),
    /**
     * On a terminal (completed or failed) event: what the job's attempts cost, as @fin/contracts' JobUsage (the
     * completed result's meta.usage). Producers before JobUsage sent only input_tokens and output_tokens of the last
     * attempt, so a reader checks it against JobUsage and ignores what does not match.
     */
    usage: z.record(z.string(), z.unknown()).optional(),
  })
  .refine((event) => event.status !== 'failed' || event.error !== undefined, {
    message: 'A failed job event carries an error',
    path: ['error'],
  });
export type JobStateEventPayload = z.infer<typeof JobStateEventPayload>;

/**
 * Job requests, one topic per product so that each product's workers read only their own work and scale on
 * their own lag.
 */
export const jobRequestTopics = {
  news: defineTopic({ name: 'jobs.news.requested', eventType: 'job.requested', version: 2, schema: JobRequestedPayload }),
  'stock-report': defineTopic({ name: 'jobs.stock-report.requested', eventType: 'job.requested', version: 2, schema: JobRequestedPayload }),
  analysis: defineTopic({ name: 'jobs.analysis.requested', eventType: 'job.requested', version: 2, schema: JobRequestedPayload }),
} as const;

export const jobsEventsTopic = defineTopic({
  name: 'jobs.events',
  eventType: 'job.state',
  version: 1,
  schema: JobStateEventPayload,
});

/** jobs.events, or a topic of the same event type (tests read their own). */
export type JobEventsTopic = TopicDefinition<string, (typeof jobsEventsTopic)['eventType'], (typeof jobsEventsTopic)['schema']>;

/** Every topic of the system; deployments create these (and their dead-letter topics) with ensureTopics. */
export const eventCatalog = defineCatalog(
  jobRequestTopics.news,
  jobRequestTopics['stock-report'],
  jobRequestTopics.analysis,
  jobsEventsTopic,
);
