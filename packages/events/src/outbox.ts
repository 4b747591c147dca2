import { type Queryable } from '@fin/db';
import { traceHeaders } from '@fin/log';
import { withSpan } from '@fin/tracing';
import { type EventHeaders } from './bus';
import { createEnvelope, type EnvelopeOf, type EnvelopeOptions } from './envelope';
import { type AnyTopic, type PayloadInput } from './topic';
import { jobAttributes, messageAttributes } from './tracing';

/** Advisory-lock namespaces (the two-integer form), so outbox locks never collide with other advisory locks. */
export const OUTBOX_KEY_LOCK_CLASS = 0x6f627800; // "obx\0"
export const RELAY_LEADER_LOCK_CLASS = 0x6f627265; // "obre"

export interface AppendOptions extends EnvelopeOptions {
  headers?: EventHeaders;
}

/**
 * Writes an event to the outbox as part of the caller's transaction: it is published if and only if that
 * transaction commits. Pass the transaction's client (a pool works too, as a transaction of its own).
 *
 * Ordering invariant: for one (topic, key), outbox ids are allocated in commit order. The insert first takes a
 * transaction-scoped advisory lock on the key, so a second transaction writing the same key waits until the
 * first commits or rolls back before it allocates its id. The relay, which reads unpublished rows in id
 * order, can therefore never see a later event of a key while an earlier one is still uncommitted.
 *
 * The current trace (W3C traceparent) travels in the message headers, so the consumer continues it; with traces
 * exported, that is the trace's `outbox <topic>` span, parent of the relay's `send` span.
 */
export function appendToOutbox<T extends AnyTopic>(
  db: Queryable,
  topic: T,
  key: string,
  payload: PayloadInput<T>,
  options: AppendOptions = {},
): Promise<EnvelopeOf<T>> {
  const attributes = { ...messageAttributes(topic.name, key, 'send'), ...jobAttributes(payload) };
  return withSpan(`outbox ${topic.name}`, { attributes }, () => insert(db, topic, key, payload, options));
}

async function insert<T extends AnyTopic>(
  db: Queryable,
  topic: T,
  key: string,
  payload: PayloadInput<T>,
  { headers = {}, ...envelopeOptions }: AppendOptions,
): Promise<EnvelopeOf<T>> {
  const envelope = createEnvelope(topic, payload, envelopeOptions);
  // The lock is taken in a FROM subquery so that it is held before the row (and its id) is produced,
  // in one round trip.
  await db.query(
    `INSERT INTO outbox (topic, message_key, event_id, event_type, envelope, headers)
     SELECT $1::text, $2::text, $3::uuid, $4::text, $5::jsonb, $6::jsonb
     FROM (SELECT pg_advisory_xact_lock($7::int, hashtext($1::text || E'\\n' || $2::text))) AS key_lock`,
    [
      topic.name,
      key,
      envelope.id,
      envelope.type,
      JSON.stringify(envelope),
      JSON.stringify({ ...traceHeaders(), ...headers }),
      OUTBOX_KEY_LOCK_CLASS,
    ],
  );
  return envelope;
}
