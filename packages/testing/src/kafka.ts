import { randomBytes } from 'node:crypto';
import { waitForLeaders } from '@fin/events';
import { Kafka, logLevel } from 'kafkajs';

/**
 * Kafka for tests: the broker started by infra/kafka/start.sh (KAFKA_BROKERS, default 127.0.0.1:19092),
 * with topics and consumer groups named uniquely per test so that files run in parallel and reruns start clean.
 */
export const TEST_KAFKA_BROKERS = (process.env.KAFKA_BROKERS ?? '127.0.0.1:19092').split(',');

/** A name no other test (or earlier run) uses: `<prefix>.<pid>.<random>`. */
export function uniqueName(prefix: string): string {
  return `${prefix}.${process.pid}.${randomBytes(4).toString('hex')}`;
}

export function testKafka(clientId = uniqueName('test')): Kafka {
  return new Kafka({
    clientId,
    brokers: TEST_KAFKA_BROKERS,
    logLevel: logLevel.NOTHING,
    retry: { retries: 5, initialRetryTime: 100 },
  });
}

/** Creates topics and returns a function that deletes them. */
export async function createTopics(kafka: Kafka, topics: string[], numPartitions = 3): Promise<() => Promise<void>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({
      waitForLeaders: false,
      topics: topics.map((topic) => ({ topic, numPartitions, replicationFactor: 1 })),
    });
    await waitForLeaders(admin, topics);
  } finally {
    await admin.disconnect();
  }
  return async () => {
    const cleanup = kafka.admin();
    await cleanup.connect();
    try {
      await cleanup.deleteTopics({ topics, timeout: 10_000 });
    } finally {
      await cleanup.disconnect();
    }
  };
}
