import { parseConfig } from '@fin/config';
import { createLogger, type Logger } from '@fin/log';
import { createTopics, testKafka, uniqueName } from '@fin/testing';
import { type Admin, type Kafka, type Producer } from 'kafkajs';
import { z } from 'zod';
import {
  type AnyTopic,
  createKafka,
  createKafkaBus,
  createMemoryBus,
  type EventBus,
  defineTopic,
  kafkaClientConfig,
  kafkaConfigShape,
} from '../src';

/** Silent unless LOG_LEVEL is set (e.g. LOG_LEVEL=debug jest). */
export function testLogger(): Logger {
  return createLogger({ service: 'events-test', level: process.env.LOG_LEVEL ?? 'silent' });
}

export const TestEvent = z.object({ seq: z.int().min(1), label: z.string() });

export function testTopic(prefix = 'events-test') {
  return defineTopic({ name: uniqueName(prefix), eventType: 'test.happened', version: 1, schema: TestEvent });
}

/** Short session settings so that a dead consumer's partitions move quickly. */
export const FAST_CONSUMER = { sessionTimeoutMs: 6_000, heartbeatIntervalMs: 500 };

/** A bus plus the wire-level access a contract test needs, the same for both implementations. */
export interface BusHarness {
  bus: EventBus;
  /** Makes the topics (and their dead-letter topics) exist. */
  createTopics(topics: AnyTopic[]): Promise<void>;
  /** Writes a message value byte for byte, bypassing the envelope encoding. */
  publishRaw(topic: string, key: string, value: string): Promise<void>;
  /** Sum over partitions of the group's committed offsets of `topic`. */
  committed(groupId: string, topic: string): Promise<number>;
  /** Resolves once `count` members of the group hold their partitions. */
  waitForMembers(groupId: string, count: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * A kafkajs client for a test: the shared plaintext broker, or the one a process with the KAFKA_* variables `env`
 * makes (TLS, SASL: secureTestKafka), through the same parsing and client settings as a service.
 */
export function kafkaFor(env?: Record<string, string>): Kafka {
  if (!env) return testKafka();
  const config = parseConfig(kafkaConfigShape(uniqueName('test')), env);
  return createKafka({ logger: testLogger(), ...kafkaClientConfig(config), retry: { retries: 5, initialRetryTime: 100 } });
}

/** The Kafka bus and its wire-level access, on the shared broker or as `env` connects (kafkaFor). */
export async function makeKafkaBus(env?: Record<string, string>): Promise<BusHarness> {
  const kafka = kafkaFor(env);
  const bus = createKafkaBus({ kafka, logger: testLogger(), ...FAST_CONSUMER });
  const admin: Admin = kafka.admin();
  await admin.connect();
  let producer: Producer | undefined;
  const deleters: Array<() => Promise<void>> = [];
  return {
    bus,
    async createTopics(topics) {
      deleters.push(
        await createTopics(
          kafka,
          topics.flatMap((topic) => [topic.name, topic.deadLetterTopic]),
          3,
        ),
      );
    },
    async publishRaw(topic, key, value) {
      if (!producer) {
        producer = kafka.producer({ allowAutoTopicCreation: false });
        await producer.connect();
      }
      await producer.send({ topic, messages: [{ key, value }] });
    },
    async committed(groupId, topic) {
      const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
      return (offsets?.partitions ?? []).reduce((sum, { offset }) => sum + Math.max(0, Number(offset)), 0);
    },
    async waitForMembers(groupId, count) {
      for (;;) {
        const { groups } = await admin.describeGroups([groupId]);
        const group = groups[0];
        if (group?.state === 'Stable' && group.members.length === count) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async close() {
      await bus.close();
      await producer?.disconnect();
      for (const remove of deleters) await remove();
      await admin.disconnect();
    },
  };
}

export async function makeMemoryBus(): Promise<BusHarness> {
  const bus = createMemoryBus({ logger: testLogger() });
  return {
    bus,
    createTopics: async () => undefined,
    publishRaw: (topic, key, value) => bus.publishRaw({ topic, key, value, headers: {} }),
    committed: async (groupId, topic) => bus.committedOffsets(groupId, topic).reduce((sum, offset) => sum + offset, 0),
    waitForMembers: async () => undefined,
    close: () => bus.close(),
  };
}

/** Resolves after `ms`. */
export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
