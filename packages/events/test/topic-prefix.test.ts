import { testKafka, uniqueName, waitFor } from '@fin/testing';
import { createKafkaBus, createPublisher, ensureTopics, type Envelope } from '../src';
import { FAST_CONSUMER, testLogger, testTopic } from './helpers';

describe('Kafka bus with a topic prefix', () => {
  it('namespaces topics and groups on the wire while handlers see catalog names', async () => {
    const kafka = testKafka();
    const prefix = `${uniqueName('env')}.`;
    const topic = testTopic('prefixed');
    const bus = createKafkaBus({ kafka, logger: testLogger(), topicPrefix: prefix, ...FAST_CONSUMER });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const created = await ensureTopics(kafka, [topic], 1, { topicPrefix: prefix });
      expect(created.sort()).toEqual([`${prefix}${topic.name}`, `${prefix}${topic.name}.dlq`].sort());
      const received: { envelope: Envelope; topic: string }[] = [];
      const groupId = uniqueName('group');
      const subscription = await bus.subscribe({
        topic,
        groupId,
        handler: async (envelope, meta) => void received.push({ envelope, topic: meta.topic }),
      });
      await createPublisher(bus).publish(topic, 'k', { seq: 1, label: 'one' });
      await waitFor(() => received.length === 1);
      expect(received[0]?.topic).toBe(topic.name);
      expect(received[0]?.envelope.payload).toEqual({ seq: 1, label: 'one' });
      const groups = (await admin.listGroups()).groups.map((group) => group.groupId);
      expect(groups).toContain(`${prefix}${groupId}`);
      expect(await admin.fetchTopicOffsets(`${prefix}${topic.name}`)).toEqual([expect.objectContaining({ offset: '1' })]);
      await subscription.stop();
      await admin.deleteTopics({ topics: created });
    } finally {
      await bus.close();
      await admin.disconnect();
    }
  });
});
