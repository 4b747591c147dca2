import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { type AnyTopic, type PayloadInput, type PayloadOf } from './topic';

/** What travels on every topic: the event's identity and type around its payload. */
export const Envelope = z.object({
  /** Unique per event; consumers deduplicate on it (see processOnce). */
  id: z.uuid(),
  type: z.string().min(1),
  version: z.int().positive(),
  occurredAt: z.iso.datetime({ offset: true }),
  payload: z.unknown(),
});
export interface Envelope<Type extends string = string, Payload = unknown> {
  id: string;
  type: Type;
  version: number;
  occurredAt: string;
  payload: Payload;
}

/** The envelope of a topic's event, with its parsed payload (a union for a union of topics). */
export type EnvelopeOf<T extends AnyTopic> = T extends AnyTopic ? Envelope<T['eventType'], PayloadOf<T>> : never;

/** A producer tried to publish a payload its topic's schema rejects: a bug in the producer, never sent. */
export class InvalidEventError extends Error {
  override readonly name = 'InvalidEventError';
  constructor(
    readonly topic: string,
    detail: string,
  ) {
    super(`Invalid ${topic} event: ${detail}`);
  }
}

/** A message that can never be handled (not JSON, not an envelope, or a payload its schema rejects). */
export class PoisonMessageError extends Error {
  override readonly name = 'PoisonMessageError';
}

export interface EnvelopeOptions {
  /** Defaults to a new random UUID; pass one to make a retried publish carry the same identity. */
  id?: string;
  occurredAt?: Date;
}

/** Wraps a payload for `topic`, parsing it with the topic's schema first. */
export function createEnvelope<T extends AnyTopic>(
  topic: T,
  payload: PayloadInput<T>,
  { id = randomUUID(), occurredAt = new Date() }: EnvelopeOptions = {},
): EnvelopeOf<T> {
  const parsed = topic.schema.safeParse(payload);
  if (!parsed.success) throw new InvalidEventError(topic.name, z.prettifyError(parsed.error));
  const envelope = { id, type: topic.eventType, version: topic.version, occurredAt: occurredAt.toISOString(), payload: parsed.data };
  const checked = Envelope.safeParse(envelope);
  if (!checked.success) throw new InvalidEventError(topic.name, z.prettifyError(checked.error));
  return envelope as EnvelopeOf<T>;
}

/** Parses a message value read from `topic`; throws PoisonMessageError when it can never be handled. */
export function decodeEnvelope<T extends AnyTopic>(topic: T, value: string | null): EnvelopeOf<T> {
  const envelope = Envelope.safeParse(messageJson(value));
  if (!envelope.success) throw new PoisonMessageError(`Message is not an envelope: ${z.prettifyError(envelope.error)}`);
  const { type, version, payload } = envelope.data;
  checkTopicType(topic, type);
  checkVersion(topic, version);
  const parsed = topic.schema.safeParse(payload);
  if (!parsed.success) throw new PoisonMessageError(`Invalid ${type} payload: ${z.prettifyError(parsed.error)}`);
  return { ...envelope.data, payload: parsed.data } as EnvelopeOf<T>;
}

/**
 * Decodes a message value read from `topic` for an observer, which has no use for most events (an event stream
 * nobody follows) or none for most of an event: what makes a message one it can never handle is checked now (not
 * JSON, not an object, a type of another topic, a version newer than it reads, an id or time that is not a string),
 * and the payload is parsed with the topic's schema when the handler first reads it, which throws PoisonMessageError
 * for a payload its schema rejects (the processor dead-letters the message then, as it does here). The id's and
 * the time's formats are their producer's to check (createEnvelope); the observer reads them as given.
 */
export function decodeEnvelopeLazily<T extends AnyTopic>(topic: T, value: string | null): EnvelopeOf<T> {
  const json = messageJson(value);
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new PoisonMessageError('Message is not an envelope: not an object');
  const { id, type, version, occurredAt, payload } = json as Record<string, unknown>;
  if (typeof id !== 'string' || id === '') throw new PoisonMessageError('Message is not an envelope: id is not a string');
  if (typeof occurredAt !== 'string') throw new PoisonMessageError('Message is not an envelope: occurredAt is not a string');
  checkTopicType(topic, type);
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
    throw new PoisonMessageError('Message is not an envelope: version is not a positive integer');
  }
  checkVersion(topic, version);
  let parsed: { data: unknown } | undefined;
  return {
    id,
    type,
    version,
    occurredAt,
    get payload() {
      if (parsed === undefined) {
        const result = topic.schema.safeParse(payload);
        if (!result.success) throw new PoisonMessageError(`Invalid ${topic.eventType} payload: ${z.prettifyError(result.error)}`);
        parsed = { data: result.data };
      }
      return parsed.data;
    },
  } as EnvelopeOf<T>;
}

/** What both decoders read first: the message's value as JSON (PoisonMessageError when it has none, or not JSON). */
function messageJson(value: string | null): unknown {
  if (value === null) throw new PoisonMessageError('Message has no value');
  try {
    return JSON.parse(value) as unknown;
  } catch (error) {
    throw new PoisonMessageError(`Message is not JSON: ${(error as Error).message}`);
  }
}

/** PoisonMessageError for an event of another topic's type. */
function checkTopicType(topic: AnyTopic, type: unknown): void {
  if (type !== topic.eventType) {
    throw new PoisonMessageError(`Event type "${String(type)}" does not belong on ${topic.name} (expects "${topic.eventType}")`);
  }
}

/** PoisonMessageError for a version newer than this consumer reads. */
function checkVersion(topic: AnyTopic, version: number): void {
  if (version > topic.version) throw new PoisonMessageError(`Event version ${version} is newer than this consumer's ${topic.version}`);
}
