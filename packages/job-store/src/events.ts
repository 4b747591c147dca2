// A job.state event written to the outbox by the same statement that changes the job, so the state and its
// event commit together (or neither does). The INSERT matches appendToOutbox (@fin/events): the per-key advisory
// lock is taken before the row's id is drawn, so a key's events are numbered in commit order.
import { OUTBOX_KEY_LOCK_CLASS, createEnvelope, jobsEventsTopic, type JobStateEventPayload } from '@fin/events';
import { traceHeaders } from '@fin/log';

/**
 * `INSERT INTO outbox` for one job.state event, its parameters numbered from `first`, written only when the
 * data-modifying CTE `source` produced a row (the job changed). Parameters: topic, key, event id, event type,
 * envelope, headers, lock class. `envelope` and `key` turn the envelope's and the key's parameters into the
 * inserted values (to fill in what only the statement knows).
 */
export function outboxInsertFrom(
  source: string,
  first: number,
  envelope: (parameter: string) => string = (parameter) => `${parameter}::jsonb`,
  key: (parameter: string) => string = (parameter) => `${parameter}::text`,
): string {
  const p = (n: number) => `$${first + n}`;
  return `INSERT INTO outbox (topic, message_key, event_id, event_type, envelope, headers)
    SELECT ${p(0)}::text, ${key(p(1))}, ${p(2)}::uuid, ${p(3)}::text, ${envelope(p(4))}, ${p(5)}::jsonb
      FROM ${source}, LATERAL (SELECT pg_advisory_xact_lock(${p(6)}::int, hashtext(${p(0)}::text || E'\\n' || ${key(p(1))}))) AS key_lock`;
}

/** The parameters of outboxInsertFrom for `payload` (checked against the topic's schema, as every producer does). */
export function outboxValues(payload: JobStateEventPayload): unknown[] {
  const envelope = createEnvelope(jobsEventsTopic, payload);
  return [
    jobsEventsTopic.name,
    payload.job_id,
    envelope.id,
    envelope.type,
    JSON.stringify(envelope),
    JSON.stringify(traceHeaders()),
    OUTBOX_KEY_LOCK_CLASS,
  ];
}
