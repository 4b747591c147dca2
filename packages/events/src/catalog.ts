import { z } from 'zod';
import { defineCatalog, defineTopic } from './topic';

/** The products that run as asynchronous jobs. */
export const JobType = z.enum(['news', 'stock-report', 'analysis']);
export type JobType = z.infer<typeof JobType>;

export const JobStatus = z.enum(['pending', 'running', 'completed', 'failed']);
export type JobStatus = z.infer<typeof JobStatus>;

/** A job to run, written to the outbox in the same transaction as its `pending` job row (key = job_id). */
export const JobRequestedPayload = z.object({
  job_id: z.uuid(),
  job_type: JobType,
  tenant_id: z.uuid(),
  /** The product request as validated by the product service. */
  request: z.record(z.string(), z.unknown()),
  /** 1 for the first run; a retry after a lost worker carries the next attempt. */
  attempt: z.int().positive().optional(),
});
export type JobRequestedPayload = z.infer<typeof JobRequestedPayload>;

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
    error: z.object({ type: z.string().min(1), detail: z.string() }).optional(),
    worker_id: z.string().optional(),
    /** Model tokens this attempt used, reported on its terminal (completed or failed) event. */
    usage: z.object({ input_tokens: z.int().min(0), output_tokens: z.int().min(0) }).optional(),
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
  news: defineTopic({ name: 'jobs.news.requested', eventType: 'job.requested', version: 1, schema: JobRequestedPayload }),
  'stock-report': defineTopic({ name: 'jobs.stock-report.requested', eventType: 'job.requested', version: 1, schema: JobRequestedPayload }),
  analysis: defineTopic({ name: 'jobs.analysis.requested', eventType: 'job.requested', version: 1, schema: JobRequestedPayload }),
} as const;

export const jobsEventsTopic = defineTopic({
  name: 'jobs.events',
  eventType: 'job.state',
  version: 1,
  schema: JobStateEventPayload,
});

/** Every topic of the system; deployments create these (and their dead-letter topics) with ensureTopics. */
export const eventCatalog = defineCatalog(
  jobRequestTopics.news,
  jobRequestTopics['stock-report'],
  jobRequestTopics.analysis,
  jobsEventsTopic,
);
export type EventCatalog = typeof eventCatalog;
