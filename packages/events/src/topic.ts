import { type z } from 'zod';

/** Dead letters of topic `t` go to `t.dlq`: one dead-letter topic per topic, shared by all consumer groups. */
export type DeadLetterTopicName<Name extends string> = `${Name}.dlq`;

/**
 * One entry of the event catalog: a topic carries exactly one event type, whose payload `schema` both
 * producers and consumers parse. Schemas evolve additively under one `version`; a consumer treats a message
 * of a newer version than it knows as poison (it is dead-lettered, to be replayed once the consumer is upgraded).
 */
export interface TopicDefinition<Name extends string = string, Type extends string = string, Schema extends z.ZodType = z.ZodType> {
  readonly name: Name;
  readonly eventType: Type;
  readonly version: number;
  readonly schema: Schema;
  readonly deadLetterTopic: DeadLetterTopicName<Name>;
}

export type AnyTopic = TopicDefinition;

/** The payload as consumers see it (after parsing). */
export type PayloadOf<T extends AnyTopic> = z.output<T['schema']>;
/** The payload as producers may write it (before parsing: defaults not yet applied). */
export type PayloadInput<T extends AnyTopic> = z.input<T['schema']>;

/** A catalog maps each topic name to its definition. */
export type Catalog<T extends AnyTopic = AnyTopic> = { readonly [K in T as K['name']]: K };

// Kafka allows 249 characters; room is kept for the ".dlq" suffix.
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,244}$/;

export function deadLetterTopicName<Name extends string>(topic: Name): DeadLetterTopicName<Name> {
  return `${topic}.dlq`;
}

export function defineTopic<const Name extends string, const Type extends string, Schema extends z.ZodType>(definition: {
  name: Name;
  eventType: Type;
  version: number;
  schema: Schema;
}): TopicDefinition<Name, Type, Schema> {
  const { name, eventType, version, schema } = definition;
  if (!TOPIC_NAME.test(name)) throw new Error(`Invalid topic name "${name}"`);
  if (name.endsWith('.dlq')) throw new Error(`Topic "${name}" ends with ".dlq", which is reserved for dead letters`);
  if (eventType.length === 0) throw new Error(`Topic "${name}" needs an event type`);
  if (!Number.isInteger(version) || version < 1) throw new Error(`Topic "${name}" needs a positive integer version`);
  return Object.freeze({ name, eventType, version, schema, deadLetterTopic: deadLetterTopicName(name) });
}

/** Builds a catalog from topic definitions; topic names must be unique. */
export function defineCatalog<const T extends readonly AnyTopic[]>(...topics: T): Catalog<T[number]> {
  const catalog: Record<string, AnyTopic> = {};
  for (const topic of topics) {
    if (catalog[topic.name]) throw new Error(`Topic "${topic.name}" is defined twice`);
    catalog[topic.name] = topic;
  }
  return Object.freeze(catalog) as Catalog<T[number]>;
}
