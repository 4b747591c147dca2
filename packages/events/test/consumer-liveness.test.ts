import { createLogger } from '@fin/log';
import { livenessProblems, startMetricsServer, type MetricsServer } from '@fin/metrics';
import { testKafka, uniqueName, waitFor } from '@fin/testing';
import { type Admin, type Kafka } from 'kafkajs';
import { createKafkaBus, createPublisher, type EventBus, type Subscription } from '../src';
import { FAST_CONSUMER, testLogger, testTopic } from './helpers';

/**
 * A consumer that crashed and will not restart must make the process fail its liveness probe (kafkajs leaves it
 * stopped and the process would otherwise look up while consuming nothing). The crash here is a real one: a
 * message is dead-lettered to a dead-letter topic whose size limit is smaller than the message, which the broker
 * refuses with MESSAGE_TOO_LARGE, an error kafkajs does not retry.
 */
describe('liveness of Kafka consumers', () => {
  let kafka: Kafka;
  let admin: Admin;
  let bus: EventBus;
  let metrics: MetricsServer;
  const subscriptions: Subscription[] = [];
  const topics: string[] = [];

  beforeAll(async () => {
    kafka = testKafka();
    admin = kafka.admin();
    await admin.connect();
    metrics = await startMetricsServer({ port: 0, host: '127.0.0.1', logger: createLogger({ service: 'liveness-test', level: 'silent' }) });
  });
  beforeEach(() => {
    bus = createKafkaBus({ kafka, logger: testLogger(), ...FAST_CONSUMER });
  });
  afterEach(async () => {
    await Promise.allSettled(subscriptions.splice(0).map((subscription) => subscription.stop()));
    await bus.close();
  });
  afterAll(async () => {
    await admin.deleteTopics({ topics });
    await admin.disconnect();
    await metrics.close();
  });

  const healthz = () => fetch(metrics.url.replace(/\/metrics$/, '/healthz'));

  async function createTopic(name: string, config: Record<string, string> = {}): Promise<void> {
    topics.push(name);
    await admin.createTopics({
      waitForLeaders: true,
      topics: [{ topic: name, numPartitions: 1, configEntries: Object.entries(config).map(([key, value]) => ({ name: key, value })) }],
    });
  }

  it('reports live while its consumers run and handle messages', async () => {
    const topic = testTopic('live');
    await createTopic(topic.name);
    await createTopic(topic.deadLetterTopic);
    const handled: number[] = [];
    subscriptions.push(
      await bus.subscribe({ topic, groupId: uniqueName('live-group'), handler: async ({ payload }) => void handled.push(payload.seq) }),
    );
    await createPublisher(bus).publish(topic, 'k', { seq: 1, label: 'fine' });
    await waitFor(() => handled.length === 1, { what: 'the message to be handled' });
    const response = await healthz();
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('reports not live (503) once a consumer crashed without restarting, and live again once it is stopped', async () => {
    const topic = testTopic('crash-live');
    await createTopic(topic.name);
    // Smaller than the message below with its dead-letter headers.
    await createTopic(topic.deadLetterTopic, { 'max.message.bytes': '1024' });
    const groupId = uniqueName('crash-live-group');
    const subscription = await bus.subscribe({
      topic,
      groupId,
      maxAttempts: 1,
      handler: () => Promise.reject(new Error('this handler always fails')),
    });
    subscriptions.push(subscription);
    await createPublisher(bus).publish(topic, 'k', { seq: 1, label: 'x'.repeat(2_000) });

    await waitFor(() => livenessProblems().length > 0, { what: 'the consumer to crash', timeoutMs: 60_000 });
    const response = await healthz();
    expect(response.status).toBe(503);
    const body = (await response.json()) as { detail: string; status_code: number; type: string };
    expect(body).toMatchObject({ status_code: 503, type: 'service_unavailable' });
    expect(body.detail).toContain(`the Kafka consumer of group ${groupId} crashed and stopped`);

    // A consumer stopped on purpose (shutdown) no longer counts.
    await subscription.stop();
    expect((await healthz()).status).toBe(200);
  });
});
