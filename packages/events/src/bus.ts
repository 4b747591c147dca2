import { createEnvelope, type Envelope, type EnvelopeOf, type EnvelopeOptions } from './envelope';
import { type AnyTopic, type PayloadInput } from './topic';

export type EventHeaders = Readonly<Record<string, string>>;

/** An envelope to publish. Messages of one key keep their order (they go to one partition, in array order). */
export interface OutgoingMessage {
  topic: string;
  key: string;
  /** The envelope, or its JSON text as stored (the outbox relay sends the rows' text as it reads it). */
  envelope: Envelope | string;
  headers?: EventHeaders;
}

/** The message value of an envelope: its JSON text. */
export function encodeEnvelope(envelope: Envelope | string): string {
  return typeof envelope === 'string' ? envelope : JSON.stringify(envelope);
}

/** Where and how a message was delivered. */
export interface DeliveryMeta {
  topic: string;
  partition: number;
  /** The message's offset in its partition (a decimal string: Kafka offsets are 64-bit). */
  offset: string;
  key: string | null;
  headers: EventHeaders;
  /** 1 on the first try of this delivery, counting in-process retries (a redelivery starts again at 1). */
  attempt: number;
  /** Aborted when the subscription stops; long handlers may stop early (the message is then redelivered). */
  signal: AbortSignal;
}

export type EventHandler<T extends AnyTopic> = (envelope: EnvelopeOf<T>, meta: DeliveryMeta) => Promise<void>;

/** Why and where a message was dead-lettered, with the original message as it was read. */
export interface DeadLetter {
  originalTopic: string;
  originalPartition: number;
  originalOffset: string;
  /** The consumer group that gave up on the message. */
  groupId: string;
  reason: 'poison' | 'exhausted';
  error: string;
  /** Handler attempts made: 0 for poison, which no attempt can handle (found before its handler ran, or as it read the payload). */
  attempts: number;
  failedAt: string;
  key: string | null;
  /** The original value, byte for byte (it may not be valid JSON). */
  value: string | null;
  /** The original message's own headers. */
  headers: EventHeaders;
}

export type DeadLetterHandler = (letter: DeadLetter, meta: DeliveryMeta) => Promise<void>;

/** One topic, or several (then the handler gets a union of envelopes, discriminated by `type`). */
export type TopicSelection<T extends AnyTopic> = { topic: T; topics?: undefined } | { topics: readonly T[]; topic?: undefined };

export interface ConsumerOptions {
  /** Each group receives every message once; subscriptions in one group share the partitions. */
  groupId: string;
  /** Attempts before a failing message is dead-lettered (default 5). */
  maxAttempts?: number;
  /** Delay between attempts: doubles from `initialMs` up to `maxMs`, with jitter. */
  backoff?: { initialMs?: number; maxMs?: number };
  /** Partitions handled at the same time by this subscription (default 3); one message at a time per partition. */
  concurrency?: number;
  /**
   * A group that lives only as long as this subscription (its id unique to the process): it starts where each
   * partition ends when subscribe is called (every message published after subscribe resolves is delivered, in
   * order; never the retained ones), and commits no offsets, so that it leaves nothing behind on the broker and
   * reports no lag once gone. For fanning every message out to each process (each process its own group), where a
   * message missed while a process was down does not matter.
   */
  ephemeral?: boolean;
  /**
   * For an observer that may see a message a few ms late: after each fetched batch, the subscription waits this
   * long before it fetches again, so that while messages keep coming, each fetch brings many of them (default 0:
   * the next fetch at once).
   */
  batchWindowMs?: number;
  /**
   * Handled offsets are committed at most this often, in one request for every partition, instead of as each
   * message is handled (default 0: at once). What was handled but not yet committed when a consumer dies, or when
   * its partitions move, is delivered again: only for handlers that take a message twice as they take it once.
   */
  commitIntervalMs?: number;
  /**
   * For an observer that has no use for many of its events: the envelope is checked as it arrives (JSON, its
   * topic's type, a version it reads) and its payload parsed with the topic's schema only when the handler reads it
   * (decodeEnvelopeLazily); a payload the schema rejects is dead-lettered then, as one found on arrival is
   * (default false: every payload parsed before the handler runs).
   */
  payloadOnRead?: boolean;
}

/**
 * The batching of an observer of job state events (the jobs service's observer and event streams, webhooks): it
 * writes no job state and nobody waits on it for a job to complete, and it takes a message twice as it takes it
 * once. Fetching 5 ms after the previous batch and committing twice a second, it reads a busy topic many
 * messages per fetch and commits once per interval rather than once per message (docs/benchmarks.md, issue 29).
 */
export const OBSERVER_BATCHING = { batchWindowMs: 5, commitIntervalMs: 500 } as const satisfies Pick<
  ConsumerOptions,
  'batchWindowMs' | 'commitIntervalMs'
>;

export type SubscribeOptions<T extends AnyTopic> = TopicSelection<T> & ConsumerOptions & { handler: EventHandler<T> };

export type DeadLetterSubscribeOptions = TopicSelection<AnyTopic> & ConsumerOptions & { handler: DeadLetterHandler };

export interface Subscription {
  /** Stops taking messages, waits for in-flight handlers, and leaves the group. Uncommitted messages are redelivered. */
  stop(): Promise<void>;
}

/**
 * Publishes envelopes and delivers them to consumer groups, at least once and in order per key.
 * A message is committed only after its handler succeeds or it has been dead-lettered; a handler that keeps
 * failing is retried `maxAttempts` times, then its message goes to the topic's `.dlq` and later messages flow.
 */
export interface EventBus {
  /** Resolves once every message is durably accepted; rejects if any may not have been. */
  publish(messages: readonly OutgoingMessage[]): Promise<void>;
  subscribe<T extends AnyTopic>(options: SubscribeOptions<T>): Promise<Subscription>;
  /** Reads the dead-letter topics of the selected topics. */
  subscribeDeadLetters(options: DeadLetterSubscribeOptions): Promise<Subscription>;
  /** Stops every subscription, then flushes and disconnects. */
  close(): Promise<void>;
}

export interface PublishOptions extends EnvelopeOptions {
  headers?: EventHeaders;
}

export interface Publisher {
  /** Parses `payload` with the topic's schema, wraps it and publishes it; returns the envelope sent. */
  publish<T extends AnyTopic>(topic: T, key: string, payload: PayloadInput<T>, options?: PublishOptions): Promise<EnvelopeOf<T>>;
}

/** Typed publishing straight to the bus (not transactional: use appendToOutbox beside a state change). */
export function createPublisher(bus: Pick<EventBus, 'publish'>): Publisher {
  return {
    async publish(topic, key, payload, { headers, ...envelopeOptions } = {}) {
      const envelope = createEnvelope(topic, payload, envelopeOptions);
      await bus.publish([{ topic: topic.name, key, envelope, ...(headers ? { headers } : {}) }]);
      return envelope;
    },
  };
}
