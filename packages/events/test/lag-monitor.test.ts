import { consumerLag } from '@fin/metrics';
import { createTopics, testKafka, uniqueName, waitFor } from '@fin/testing';
import { type Kafka } from 'kafkajs';
import { type ConsumerLagMonitor, createConsumerLagMonitor } from '../src/lag-monitor';
import { type EventBus, createEnvelope, createKafkaBus } from '../src';
import { FAST_CONSUMER, testLogger, testTopic } from './helpers';

describe('consumer lag from the broker', () => {
  let kafka: Kafka;
  let bus: EventBus;
  let monitor: ConsumerLagMonitor;
  let deleteTopics: () => Promise<void>;
  // A deployment of its own on the shared broker: its groups and topics carry this prefix.
  const prefix = `${uniqueName('lag')}.`;
  const topic = testTopic('lag');
  const groupId = 'lag-workers';
  let release: () => void = () => undefined;

  beforeAll(async () => {
    kafka = testKafka();
    deleteTopics = await createTopics(kafka, [prefix + topic.name, prefix + topic.deadLetterTopic], 1);
    bus = createKafkaBus({ kafka, logger: testLogger(), topicPrefix: prefix, ...FAST_CONSUMER });
    monitor = createConsumerLagMonitor({ kafka, logger: testLogger(), topicPrefix: prefix, intervalMs: 100 });
  });
  afterAll(async () => {
    release();
    await monitor.stop();
    await bus.close();
    await deleteTopics();
  });

  const publish = (...labels: string[]) =>
    bus.publish(
      labels.map((label, index) => ({ topic: topic.name, key: 'k', envelope: createEnvelope(topic, { seq: index + 1, label }) })),
    );
  const lagOf = (readings: { group: string; topic: string; partition: number; lag: number }[]) =>
    readings.find((reading) => reading.group === groupId && reading.topic === topic.name && reading.partition === 0)?.lag;

  it('shows the lag of a stalled consumer growing, on the gauge too, and falling to 0 once it moves again', async () => {
    const handled: string[] = [];
    const stalled = new Promise<void>((resolve) => {
      release = resolve;
    });
    await bus.subscribe({
      topic,
      groupId,
      handler: async (envelope) => {
        handled.push(envelope.payload.label);
        // The handler hangs on this message, as one waiting on a dead upstream would: nothing after it is consumed.
        if (envelope.payload.label === 'stall') await stalled;
      },
    });
    await publish('a', 'b', 'stall');
    await waitFor(() => handled.includes('stall'), { what: 'the consumer to reach the stalling message' });
    // a and b are committed; the stalling message is not: 1 behind.
    await waitFor(async () => lagOf(await monitor.measure()) === 1, { what: 'a lag of 1' });

    await publish('c', 'd', 'e');
    const readings = await monitor.measure();
    expect(lagOf(readings)).toBe(4);
    // Reported under the catalog's names, without the deployment's prefix.
    const series = (await consumerLag.get()).values.find((value) => value.labels.group === groupId && value.labels.topic === topic.name);
    expect(series).toMatchObject({ labels: { partition: '0' }, value: 4 });

    // The timer keeps reading while the consumer stays stalled; once it moves again the lag drains.
    monitor.start();
    release();
    await waitFor(async () => lagOf(await monitor.measure()) === 0, { what: 'the lag to drain' });
    await waitFor(() => handled.length === 6, { what: 'every message handled' });
  });
});
