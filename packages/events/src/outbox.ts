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
  return withOutboxRow(
    topic,
    key,
    payload,
    async (row, envelope) => {
      // The lock is taken in a FROM subquery so that it is held before the row (and its id) is produced,
      // in one round trip.
      await db.query(
        `INSERT INTO outbox (topic, message_key, event_id, event_type, envelope, headers)
         SELECT $1::text, $2::text, $3::uuid, $4::text, $5::jsonb, $6::jsonb
         FROM (SELECT pg_advisory_xact_lock($7::int, hashtext($1::text || E'\\n' || $2::text))) AS key_lock`,
        [row.topic, row.key, row.eventId, row.eventType, row.envelope, row.headers, row.lockClass],
      );
      return envelope;
    },
    options,
  );
}

/** An outbox row's columns, for a statement that writes the row together with the change it reports. */
export interface PreparedOutboxRow {
  topic: string;
  key: string;
  eventId: string;
  eventType: string;
  /** The envelope's JSON text. */
  envelope: string;
  /** The headers' JSON text (the trace context included). */
  headers: string;
  /** The advisory-lock namespace of outbox keys: the statement locks (lockClass, hashtext(topic || E'\n' || key)). */
  lockClass: number;
}

/**
 * For a caller whose own statement writes the outbox row (in the same statement as the change it reports, so
 * both commit together): the row `appendToOutbox` would insert, handed to `write` inside the same `outbox <topic>`
 * span. The statement must take the key's advisory lock before it inserts the row, as `appendToOutbox` does, to
 * keep the ordering invariant.
 */
export function withOutboxRow<T extends AnyTopic, R>(
  topic: T,
  key: string,
  payload: PayloadInput<T>,
  write: (row: PreparedOutboxRow, envelope: EnvelopeOf<T>) => Promise<R>,
  { headers = {}, ...envelopeOptions }: AppendOptions = {},
): Promise<R> {
  const attributes = { ...messageAttributes(topic.name, key, 'send'), ...jobAttributes(payload) };
  return withSpan(`outbox ${topic.name}`, { attributes }, () => {
    const envelope = createEnvelope(topic, payload, envelopeOptions);
    const row: PreparedOutboxRow = {
      topic: topic.name,
      key,
      eventId: envelope.id,
      eventType: envelope.type,
      envelope: JSON.stringify(envelope),
      headers: JSON.stringify({ ...traceHeaders(), ...headers }),
      lockClass: OUTBOX_KEY_LOCK_CLASS,
    };
    return write(row, envelope);
  });
}
