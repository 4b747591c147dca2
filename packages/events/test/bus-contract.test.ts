import { randomUUID } from 'node:crypto';
import { secureTestKafka, uniqueName, waitFor } from '@fin/testing';
import {
  type DeadLetter,
  type DeliveryMeta,
  type Envelope,
  type EnvelopeOf,
  type Subscription,
  createEnvelope,
  createPublisher,
} from '../src';
import { type BusHarness, makeKafkaBus, makeMemoryBus, pause, testTopic } from './helpers';

type TestTopic = ReturnType<typeof testTopic>;

// The same behaviour is required of both implementations of EventBus, and of the Kafka one over each kind of
// listener a cluster offers: plaintext (the shared broker), mutual TLS, and SASL/SCRAM over TLS (the secure broker
// of infra/kafka, started on first use).
describe.each([
  ['kafka', () => makeKafkaBus()],
  ['kafka over mutual TLS', async () => makeKafkaBus((await secureTestKafka()).sslEnv)],
  ['kafka over SASL_SSL with SCRAM-SHA-512', async () => makeKafkaBus((await secureTestKafka()).saslEnv('scram-sha-512'))],
  ['in-process', makeMemoryBus],
])('EventBus contract: %s', (_name, makeHarness) => {
  let harness: BusHarness;
  let subscriptions: Subscription[] = [];
  const fastRetry = { maxAttempts: 3, backoff: { initialMs: 20, maxMs: 50 } };

  beforeAll(async () => {
    harness = await makeHarness();
  }, 120_000);
  afterEach(async () => {
    await Promise.all(subscriptions.map((subscription) => subscription.stop()));
    subscriptions = [];
  });
  afterAll(async () => {
    await harness.close();
  });

  async function newTopic(): Promise<TestTopic> {
    const topic = testTopic();
    await harness.createTopics([topic]);
    return topic;
  }

  async function collectDeadLetters(topic: TestTopic): Promise<Array<{ letter: DeadLetter; meta: DeliveryMeta }>> {
    const letters: Array<{ letter: DeadLetter; meta: DeliveryMeta }> = [];
    subscriptions.push(
      await harness.bus.subscribeDeadLetters({
        topic,
        groupId: uniqueName('dlq-reader'),
        handler: async (letter, meta) => void letters.push({ letter, meta }),
      }),
    );
    return letters;
  }

  it('delivers a published envelope with its parsed payload and metadata', async () => {
    const topic = await newTopic();
    const received: Array<{ envelope: EnvelopeOf<TestTopic>; meta: DeliveryMeta }> = [];
    subscriptions.push(
      await harness.bus.subscribe({
        topic,
        groupId: uniqueName('group'),
        handler: async (envelope, meta) => void received.push({ envelope, meta }),
      }),
    );
    const sent = await createPublisher(harness.bus).publish(topic, 'key-1', { seq: 1, label: 'hello' }, { headers: { 'x-trace': 't-1' } });

    const [delivery] = await waitFor(() => received.length > 0 && received, { what: 'delivery' });
    expect(delivery?.envelope).toEqual(sent);
    expect(delivery?.envelope).toEqual({
      id: expect.any(String),
      type: 'test.happened',
      version: 1,
      occurredAt: expect.any(String),
      payload: { seq: 1, label: 'hello' },
    });
    expect(delivery?.meta).toMatchObject({ topic: topic.name, key: 'key-1', offset: '0', attempt: 1, headers: { 'x-trace': 't-1' } });
    expect(delivery?.meta.partition).toEqual(expect.any(Number));
  });

  it('keeps the order of each key across 200 events and concurrent partitions', async () => {
    const topic = await newTopic();
    const keys = ['alpha', 'bravo', 'charlie', 'delta', 'echo'];
    const seen = new Map<string, number[]>(keys.map((key) => [key, []]));
    let total = 0;
    subscriptions.push(
      await harness.bus.subscribe({
        topic,
        groupId: uniqueName('group'),
        concurrency: 3,
        handler: async (envelope, meta) => {
          await pause(Math.random() * 2);
          seen.get(meta.key ?? '')?.push(envelope.payload.seq);
          total += 1;
        },
      }),
    );
    const perKey = 40;
    const messages = Array.from({ length: perKey * keys.length }, (_, index) => {
      const key = keys[index % keys.length] as string;
      const seq = Math.floor(index / keys.length) + 1;
      return { topic: topic.name, key, envelope: createEnvelope(topic, { seq, label: key }) };
    });
    for (let start = 0; start < messages.length; start += 50) await harness.bus.publish(messages.slice(start, start + 50));

    await waitFor(() => total >= messages.length, { what: 'all 200 events', timeoutMs: 30_000 });
    const expected = Array.from({ length: perKey }, (_, index) => index + 1);
    for (const key of keys) expect(seen.get(key)).toEqual(expected);
  });

  it('retries a failing handler and commits only after it succeeds', async () => {
    const topic = await newTopic();
    const groupId = uniqueName('group');
    const attempts: number[] = [];
    const committedWhileFailing: number[] = [];
    subscriptions.push(
      await harness.bus.subscribe({
        topic,
        groupId,
        ...fastRetry,
        handler: async (_envelope, meta) => {
          attempts.push(meta.attempt);
          if (meta.attempt < 3) {
            committedWhileFailing.push(await harness.committed(groupId, topic.name));
            throw new Error(`transient failure ${meta.attempt}`);
          }
        },
      }),
    );
    await createPublisher(harness.bus).publish(topic, 'k', { seq: 1, label: 'flaky' });

    await waitFor(async () => (await harness.committed(groupId, topic.name)) === 1, { what: 'the commit' });
    expect(attempts).toEqual([1, 2, 3]);
    expect(committedWhileFailing).toEqual([0, 0]);
  });

  it('dead-letters a message whose handler always fails, with the error headers, and keeps going', async () => {
    const topic = await newTopic();
    const groupId = uniqueName('group');
    const letters = await collectDeadLetters(topic);
    const handled: number[] = [];
    let badAttempts = 0;
    subscriptions.push(
      await harness.bus.subscribe({
        topic,
        groupId,
        ...fastRetry,
        handler: async (envelope) => {
          if (envelope.payload.label === 'bad') {
            badAttempts += 1;
            throw new Error('handler rejects this one');
          }
          handled.push(envelope.payload.seq);
        },
      }),
    );
    const publisher = createPublisher(harness.bus);
    const bad = await publisher.publish(topic, 'same-key', { seq: 1, label: 'bad' }, { headers: { 'x-trace': 't-bad' } });
    await publisher.publish(topic, 'same-key', { seq: 2, label: 'good' });

    await waitFor(() => handled.length === 1 && letters.length === 1, { what: 'the later message and the dead letter' });
    expect(handled).toEqual([2]);
    expect(badAttempts).toBe(3);
    const { letter, meta } = letters[0] as { letter: DeadLetter; meta: DeliveryMeta };
    expect(meta.topic).toBe(topic.deadLetterTopic);
    expect(meta.key).toBe('same-key');
    expect(meta.headers).toMatchObject({
      'x-dlq-error': 'Error: handler rejects this one',
      'x-dlq-attempts': '3',
      'x-dlq-reason': 'exhausted',
      'x-dlq-group': groupId,
      'x-original-topic': topic.name,
      'x-original-partition': expect.stringMatching(/^\d+$/),
      'x-original-offset': '0',
      'x-trace': 't-bad',
    });
    expect(letter).toMatchObject({ originalTopic: topic.name, originalOffset: '0', reason: 'exhausted', attempts: 3, groupId });
    expect(letter.headers).toEqual({ 'x-trace': 't-bad' });
    expect(JSON.parse(letter.value ?? '')).toEqual(bad);
    await waitFor(async () => (await harness.committed(groupId, topic.name)) === 2, { what: 'both commits' });
  });

  it('dead-letters malformed messages at once, without handing them to the handler', async () => {
    const topic = await newTopic();
    const letters = await collectDeadLetters(topic);
    const handled: Envelope[] = [];
    subscriptions.push(
      await harness.bus.subscribe({
        topic,
        groupId: uniqueName('group'),
        maxAttempts: 5,
        backoff: { initialMs: 5_000 }, // a retry would show up as a long delay
        handler: async (envelope) => void handled.push(envelope),
      }),
    );
    const valid = createEnvelope(topic, { seq: 1, label: 'ok' });
    await harness.publishRaw(topic.name, 'k', '{"not json');
    await harness.bus.publish([
      { topic: topic.name, key: 'k', envelope: { ...valid, id: randomUUID(), payload: { seq: 'one' } } },
      { topic: topic.name, key: 'k', envelope: { ...valid, id: randomUUID(), type: 'other.event' } },
      { topic: topic.name, key: 'k', envelope: valid },
    ]);

    await waitFor(() => handled.length === 1 && letters.length === 3, {
      what: 'the valid message and three dead letters',
      timeoutMs: 4_000,
    });
    expect(handled).toEqual([valid]);
    expect(letters.map(({ letter }) => [letter.reason, letter.attempts])).toEqual([
      ['poison', 0],
      ['poison', 0],
      ['poison', 0],
    ]);
    const errors = letters.map(({ letter }) => letter.error);
    expect(errors[0]).toMatch(/not JSON/);
    expect(errors[1]).toMatch(/Invalid test\.happened payload/);
    expect(errors[2]).toMatch(/Event type "other\.event" does not belong/);
    expect(letters[0]?.letter.value).toBe('{"not json');
  });

  it('with payloads parsed on read, dead-letters the same malformed messages, each payload as its handler reads it', async () => {
    const topic = await newTopic();
    const letters = await collectDeadLetters(topic);
    const handled: Envelope[] = [];
    const passedOver: string[] = [];
    subscriptions.push(
      await harness.bus.subscribe({
        topic,
        groupId: uniqueName('group'),
        maxAttempts: 5,
        backoff: { initialMs: 5_000 }, // a retry would show up as a long delay
        payloadOnRead: true,
        // An observer with no use for the events of key "skip" never reads their payloads.
        handler: async (envelope, { key }) => {
          if (key === 'skip') passedOver.push(envelope.id);
          else
            handled.push({
              id: envelope.id,
              type: envelope.type,
              version: envelope.version,
              occurredAt: envelope.occurredAt,
              payload: envelope.payload,
            });
        },
      }),
    );
    const valid = createEnvelope(topic, { seq: 1, label: 'ok' });
    const unread = { ...valid, id: randomUUID(), payload: { seq: 'one' } };
    await harness.publishRaw(topic.name, 'k', '{"not json');
    await harness.bus.publish([
      { topic: topic.name, key: 'k', envelope: { ...valid, id: randomUUID(), payload: { seq: 'one' } } },
      { topic: topic.name, key: 'k', envelope: { ...valid, id: randomUUID(), type: 'other.event' } },
      { topic: topic.name, key: 'k', envelope: { ...valid, id: randomUUID(), version: topic.version + 1 } },
      { topic: topic.name, key: 'skip', envelope: unread },
      { topic: topic.name, key: 'k', envelope: valid },
    ]);

    await waitFor(() => handled.length === 1 && letters.length === 4 && passedOver.length === 1, {
      what: 'the valid message, the one passed over and four dead letters',
      timeoutMs: 4_000,
    });
    expect(handled).toEqual([valid]);
    expect(passedOver).toEqual([unread.id]);
    expect(letters.map(({ letter }) => [letter.reason, letter.attempts])).toEqual([
      ['poison', 0],
      ['poison', 0],
      ['poison', 0],
      ['poison', 0],
    ]);
    const errors = letters.map(({ letter }) => letter.error);
    expect(errors[0]).toMatch(/not JSON/);
    expect(errors[1]).toMatch(/Invalid test\.happened payload/);
    expect(errors[2]).toMatch(/Event type "other\.event" does not belong/);
    expect(errors[3]).toMatch(/is newer than this consumer/);
  });

  it('gives every group every message and shares a group between its subscriptions', async () => {
    const topic = await newTopic();
    const received = { a: [] as string[], b: [] as string[], shared1: [] as string[], shared2: [] as string[] };
    const subscribe = async (groupId: string, into: string[]) =>
      subscriptions.push(await harness.bus.subscribe({ topic, groupId, handler: async (envelope) => void into.push(envelope.id) }));
    const shared = uniqueName('shared');
    await subscribe(uniqueName('group-a'), received.a);
    await subscribe(uniqueName('group-b'), received.b);
    await subscribe(shared, received.shared1);
    await subscribe(shared, received.shared2);
    await harness.waitForMembers(shared, 2);

    const publisher = createPublisher(harness.bus);
    const ids: string[] = [];
    for (let seq = 1; seq <= 30; seq += 1) ids.push((await publisher.publish(topic, `key-${seq}`, { seq, label: 'fan-out' })).id);

    const all = [...ids].sort();
    await waitFor(() => received.a.length === 30 && received.b.length === 30 && received.shared1.length + received.shared2.length === 30, {
      what: `every delivery ${JSON.stringify([received.a.length, received.b.length, received.shared1.length, received.shared2.length])}`,
    });
    expect([...received.a].sort()).toEqual(all);
    expect([...received.b].sort()).toEqual(all);
    expect([...received.shared1, ...received.shared2].sort()).toEqual(all);
    expect(received.shared1.length).toBeGreaterThan(0);
    expect(received.shared2.length).toBeGreaterThan(0);
  });

  it('starts an ephemeral group at the newest messages and commits nothing for it', async () => {
    const topic = await newTopic();
    const publisher = createPublisher(harness.bus);
    await publisher.publish(topic, 'key-old', { seq: 1, label: 'before' });
    const labels: string[] = [];
    const groupId = uniqueName('ephemeral');
    subscriptions.push(
      await harness.bus.subscribe({
        topic,
        groupId,
        ephemeral: true,
        handler: async (envelope) => void labels.push(envelope.payload.label),
      }),
    );
    await harness.waitForMembers(groupId, 1);
    await publisher.publish(topic, 'key-new', { seq: 2, label: 'after' });
    await waitFor(() => labels.includes('after'), { what: 'the new message' });
    expect(labels).toEqual(['after']);
    expect(await harness.committed(groupId, topic.name)).toBe(0);
  });

  it('stop() waits for the handler in flight and commits it', async () => {
    const topic = await newTopic();
    const groupId = uniqueName('group');
    let started = false;
    let finished = false;
    const subscription = await harness.bus.subscribe({
      topic,
      groupId,
      handler: async () => {
        started = true;
        await pause(500);
        finished = true;
      },
    });
    await createPublisher(harness.bus).publish(topic, 'k', { seq: 1, label: 'slow' });
    await waitFor(() => started, { what: 'the handler to start' });
    await subscription.stop();
    expect(finished).toBe(true);
    expect(await harness.committed(groupId, topic.name)).toBe(1);
  });
});
