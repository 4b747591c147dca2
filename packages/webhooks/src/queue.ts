// Queuing deliveries: the statements that turn a job's terminal state into delivery rows, one per enabled endpoint
// of the job's tenant that wants the event and may read the job's product (its `products`, the scopes of the key
// that registered it), and one per callback URL left on the job (its request was made with the product's scope).
// Each row is unique per target and event (ON CONFLICT DO NOTHING), so an event consumed twice, or a callback
// registered while its job finished, queues exactly one delivery.
import type { Queryable } from '@fin/db';
import { eventKeyOf, eventTypeOf, jobEventBody, type TerminalJob } from './event-body';
import { DEFAULT_RETRY_WINDOW_MS } from './store';

export interface QueueOptions {
  /** How long the deliveries are retried. */
  retryWindowMs?: number;
}

/**
 * Queues the deliveries of a job's terminal event. The tenant comes from the job row (events do not carry it), so
 * only that tenant's endpoints and callbacks are ever matched. `callbackUrl` limits it to that one callback (a
 * callback registered after its job finished). Returns how many rows were queued.
 */
export async function queueJobEvent(
  db: Queryable,
  job: TerminalJob,
  { retryWindowMs = DEFAULT_RETRY_WINDOW_MS, callbackUrl }: QueueOptions & { callbackUrl?: string } = {},
): Promise<number> {
  const values = [job.jobId, eventKeyOf(job), eventTypeOf(job.status), jobEventBody(job), retryWindowMs];
  let queued = 0;
  if (callbackUrl === undefined) {
    const endpoints = await db.query({
      name: 'webhooks-queue-endpoints',
      text: `INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_key, event_type, job_id, job_type, body, give_up_at)
             SELECT j.tenant_id, e.id, $2, $3, j.id, j.type, $4, now() + $5 * interval '1 millisecond'
               FROM jobs j JOIN webhook_endpoints e ON e.tenant_id = j.tenant_id AND e.enabled AND $3 = ANY (e.events) AND j.type = ANY (e.products)
              WHERE j.id = $1
             ON CONFLICT (endpoint_id, event_key) WHERE endpoint_id IS NOT NULL DO NOTHING`,
      values,
    });
    queued += endpoints.rowCount ?? 0;
  }
  const callbacks = await db.query({
    name: 'webhooks-queue-callbacks',
    text: `INSERT INTO webhook_deliveries (tenant_id, callback_url, event_key, event_type, job_id, job_type, body, give_up_at)
           SELECT j.tenant_id, c.url, $2, $3, j.id, j.type, $4, now() + $5 * interval '1 millisecond'
             FROM jobs j JOIN webhook_callbacks c ON c.job_id = j.id AND c.tenant_id = j.tenant_id
            WHERE j.id = $1 AND ($6::text IS NULL OR c.url = $6)
           ON CONFLICT (tenant_id, callback_url, event_key) WHERE callback_url IS NOT NULL DO NOTHING`,
    values: [...values, callbackUrl ?? null],
  });
  return queued + (callbacks.rowCount ?? 0);
}

interface JobRow {
  type: TerminalJob['jobType'];
  status: string;
  result: Record<string, unknown> | null;
  error: { type: string; detail: string } | null;
  finished_at: Date | null;
  usage: unknown;
}

/**
 * Leaves a product request's callback_url on its job. Written first and committed, then the job is read: if it
 * has already finished, the delivery is queued here. Together with the consumer (which reads the callbacks after
 * the terminal state committed) one of the two always sees the other's write, so no callback is missed, and the
 * unique index keeps it to one delivery.
 */
export async function registerCallback(
  db: Queryable,
  { tenantId, jobId, url }: { tenantId: string; jobId: string; url: string },
  options: QueueOptions = {},
): Promise<void> {
  await db.query({
    name: 'webhooks-register-callback',
    text: 'INSERT INTO webhook_callbacks (job_id, url, tenant_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
    values: [jobId, url, tenantId],
  });
  const { rows } = await db.query<JobRow>({
    name: 'webhooks-callback-job',
    text: 'SELECT type, status, result, error, finished_at, usage FROM jobs WHERE id = $1 AND tenant_id = $2',
    values: [jobId, tenantId],
  });
  const job = rows[0];
  if (job === undefined || (job.status !== 'completed' && job.status !== 'failed')) return;
  await queueJobEvent(
    db,
    {
      jobId,
      jobType: job.type,
      status: job.status,
      at: job.finished_at ?? new Date(),
      result: job.result,
      error: job.error,
      usage: job.usage,
    },
    { ...options, callbackUrl: url },
  );
}

/** Whether the tenant has a callback secret: a request with callback_url is refused until it has. */
export async function hasCallbackSecret(db: Queryable, tenantId: string): Promise<boolean> {
  const { rowCount } = await db.query({
    name: 'webhooks-has-callback-secret',
    text: 'SELECT 1 FROM webhook_callback_secrets WHERE tenant_id = $1',
    values: [tenantId],
  });
  return (rowCount ?? 0) > 0;
}
