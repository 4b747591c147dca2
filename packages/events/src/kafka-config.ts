import { csv, int } from '@fin/config';
import type { Logger } from '@fin/log';
import { z } from 'zod';
import type { EventBus } from './bus';
import { eventCatalog } from './catalog';
import { createKafka, createKafkaBus, ensureTopics } from './kafka-bus';

/** The Kafka part of a process's environment; `clientId` names the process in the broker's logs. */
export function kafkaConfigShape(clientId: string) {
  return {
    KAFKA_BROKERS: csv().pipe(z.array(z.string()).min(1, 'expected at least one host:port')),
    KAFKA_CLIENT_ID: z.string().default(clientId),
    /** Prepended to topic and consumer-group names, so environments (or test runs) can share a cluster. */
    KAFKA_TOPIC_PREFIX: z
      .string()
      .regex(/^[a-zA-Z0-9._-]*$/, 'may contain only letters, digits, ".", "_" and "-"')
      .default(''),
    /** A consumer that stops heartbeating this long loses its partitions to the rest of its group. */
    KAFKA_SESSION_TIMEOUT_MS: int(6_000, 300_000).default(10_000),
  };
}

export type KafkaConfig = z.output<z.ZodObject<ReturnType<typeof kafkaConfigShape>>>;

/** Connects to Kafka as configured, makes sure every topic of the catalog (and its dead-letter topic) exists. */
export async function connectKafkaBus(config: KafkaConfig, logger: Logger): Promise<EventBus> {
  const kafka = createKafka({ logger, clientId: config.KAFKA_CLIENT_ID, brokers: config.KAFKA_BROKERS });
  await ensureTopics(kafka, Object.values(eventCatalog), 3, { topicPrefix: config.KAFKA_TOPIC_PREFIX });
  return createKafkaBus({
    kafka,
    logger,
    topicPrefix: config.KAFKA_TOPIC_PREFIX,
    sessionTimeoutMs: config.KAFKA_SESSION_TIMEOUT_MS,
    heartbeatIntervalMs: Math.floor(config.KAFKA_SESSION_TIMEOUT_MS / 5),
  });
}
