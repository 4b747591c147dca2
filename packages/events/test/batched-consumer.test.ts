import { uniqueName, waitFor } from '@fin/testing';
import { createPublisher, type Subscription } from '../src';
import { type BusHarness, makeKafkaBus, pause, testTopic } from './helpers';

describe('an observer that fetches and commits in batches (batchWindowMs, commitIntervalMs)', () => {
  let harness: BusHarness;
  let subscription: Subscription | undefined;

  beforeAll(async () => {
    harness = await makeKafkaBus();
  });
  afterAll(async () => {
    await subscription?.stop();
    await harness.close();
  });

  it('handles every message in order per key, commits them on its timer and on stop, and leaves none to redeliver', async () => {
    const topic = testTopic('batched');
    await harness.createTopics([topic]);
    const groupId = uniqueName('batched-group');
    const publisher = createPublisher(harness.bus);
    const handled: string[] = [];
    subscription = await harness.bus.subscribe({
      topic,
      groupId,
      batchWindowMs: 20,
      commitIntervalMs: 300,
      handler: async (envelope, meta) => void handled.push(`${meta.key}:${envelope.payload.seq}`),
    });
    await harness.waitForMembers(groupId, 1);

    for (let seq = 1; seq <= 20; seq++) await publisher.publish(topic, `k${seq % 4}`, { seq, label: 'observed' });
    await waitFor(() => handled.length === 20, { what: 'every message handled', timeoutMs: 15_000 });
    for (let key = 0; key < 4; key++) {
      const seqs = handled.filter((entry) => entry.startsWith(`k${key}:`)).map((entry) => Number(entry.split(':')[1]));
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    }
    // Committed by the timer, without waiting for another message or a stop.
    await waitFor(async () => (await harness.committed(groupId, topic.name)) === 20, { what: 'the timed commit', timeoutMs: 5_000 });

    // Handled just before the stop: committed by the stop, so the group's next member gets nothing again.
    for (let seq = 21; seq <= 24; seq++) await publisher.publish(topic, `k${seq % 4}`, { seq, label: 'before the stop' });
    await waitFor(() => handled.length === 24, { what: 'the last messages handled', timeoutMs: 15_000 });
    await subscription.stop();
    expect(await harness.committed(groupId, topic.name)).toBe(24);

    const again: number[] = [];
    subscription = await harness.bus.subscribe({
      topic,
      groupId,
      batchWindowMs: 20,
      commitIntervalMs: 300,
      handler: async (envelope) => void again.push(envelope.payload.seq),
    });
    await harness.waitForMembers(groupId, 1);
    await publisher.publish(topic, 'k1', { seq: 25, label: 'after the restart' });
    await waitFor(() => again.length > 0, { what: 'the new message', timeoutMs: 15_000 });
    await pause(200);
    expect(again).toEqual([25]);
  });
});
