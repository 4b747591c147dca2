// The JSON body of a delivery (the contract's WebhookEvent): built once per event, stored with each delivery and
// sent byte for byte on every attempt, so the signature and a receiver's de-duplication see the same message.
import { JobUsage, jobUrls, type JobType, type WebhookEvent } from '@fin/contracts';

/** A result larger than this (as JSON) is left out of the body: the receiver reads result_url instead. */
const MAX_INLINE_RESULT_BYTES = 64 * 1024;

export interface TerminalJob {
  jobId: string;
  jobType: JobType;
  status: 'completed' | 'failed';
  /** When the job reached the state. */
  at: Date;
  result?: Record<string, unknown> | null;
  error?: { type: string; detail: string } | null;
  /** What the job's attempts cost (the job.state event's `usage`); left out when it is not a JobUsage. */
  usage?: unknown;
}

export type JobEventType = 'job.completed' | 'job.failed';

export function eventTypeOf(status: TerminalJob['status']): JobEventType {
  return status === 'completed' ? 'job.completed' : 'job.failed';
}

/** `<job id>:<status>`: with the target, what makes a delivery unique (an event consumed twice queues one). */
export function eventKeyOf(job: Pick<TerminalJob, 'jobId' | 'status'>): string {
  return `${job.jobId}:${job.status}`;
}

export function jobEventBody(job: TerminalJob): string {
  const data: WebhookEvent['data'] = { job_id: job.jobId, job_type: job.jobType, status: job.status, ...jobUrls(job.jobType, job.jobId) };
  if (job.status === 'completed' && job.result) {
    const result = JSON.stringify(job.result);
    if (Buffer.byteLength(result, 'utf8') <= MAX_INLINE_RESULT_BYTES) data.result = job.result;
  }
  if (job.status === 'failed' && job.error) data.error = { type: job.error.type, detail: job.error.detail };
  const usage = JobUsage.safeParse(job.usage);
  if (usage.success) data.usage = usage.data;
  const event: WebhookEvent = { type: eventTypeOf(job.status), timestamp: job.at.toISOString(), data };
  return JSON.stringify(event);
}

export function testEventBody(at: Date): string {
  const event: WebhookEvent = {
    type: 'webhook.test',
    timestamp: at.toISOString(),
    data: { job_id: null, job_type: null, status: null, status_url: null, result_url: null },
  };
  return JSON.stringify(event);
}
