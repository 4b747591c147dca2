// ensureTopics asks the cluster for its own default replication factor (-1), never a fixed single copy: on a
// cluster of several brokers a topic a service creates gets the copies the operator configured.
import type { Kafka } from 'kafkajs';
import { ensureTopics } from '../src';

function recordingKafka(existing: string[]) {
  const created: { topic: string; numPartitions?: number; replicationFactor?: number }[][] = [];
  const admin = {
    connect: () => Promise.resolve(),
    disconnect: () => Promise.resolve(),
    listTopics: () => Promise.resolve(existing),
    createTopics: ({ topics }: { topics: { topic: string; numPartitions?: number; replicationFactor?: number }[] }) => {
      created.push(topics);
      return Promise.resolve(true);
    },
    fetchTopicMetadata: ({ topics }: { topics: string[] }) =>
      Promise.resolve({ topics: topics.map((name) => ({ name, partitions: [{ partitionId: 0, leader: 1 }] })) }),
  };
  return { kafka: { admin: () => admin } as unknown as Kafka, created };
}

describe('ensureTopics', () => {
  it('creates the missing topics and their dead-letter topics at the broker default replication factor', async () => {
    const { kafka, created } = recordingKafka(['orders']);
    const names = await ensureTopics(kafka, ['orders', 'payments'], 3);
    // orders exists; its dead-letter topic, payments and payments' dead-letter topic do not.
    expect(names).toHaveLength(3);
    expect(names).toContain('payments');
    expect(names).not.toContain('orders');
    expect(created).toHaveLength(1);
    for (const topic of created[0]!) expect(topic).toMatchObject({ numPartitions: 3, replicationFactor: -1 });
    expect(created[0]!.map((topic) => topic.topic)).not.toContain('orders');
  });

  it('takes an explicit replication factor when given', async () => {
    const { kafka, created } = recordingKafka([]);
    await ensureTopics(kafka, ['orders'], 3, { replicationFactor: 3 });
    expect(created[0]!.every((topic) => topic.replicationFactor === 3)).toBe(true);
  });
});
