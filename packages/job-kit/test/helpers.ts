import type { Pool } from '@fin/db';

/** A job.state event as a runner wrote it to the outbox. */
export interface EventRow {
  seq: number;
  status: string;
  progress: number;
  currently_working_on: string;
  result?: unknown;
  error?: { type: string; detail: string };
  usage?: unknown;
  customer_tool_set?: string | null;
}

/** The outbox rows of a job, oldest first: each row's topic and payload. */
export async function outboxOf(pool: Pool, jobId: string): Promise<{ topic: string; payload: EventRow }[]> {
  const { rows } = await pool.query<{ topic: string; envelope: { payload: EventRow } }>(
    'SELECT topic, envelope FROM outbox WHERE message_key = $1 ORDER BY id',
    [jobId],
  );
  return rows.map((row) => ({ topic: row.topic, payload: row.envelope.payload }));
}

/** The job.state events of a job, oldest first. */
export async function jobEvents(pool: Pool, jobId: string): Promise<EventRow[]> {
  return (await outboxOf(pool, jobId)).filter((row) => row.topic === 'jobs.events').map((row) => row.payload);
}
