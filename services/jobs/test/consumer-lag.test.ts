// The job-status service as main.ts starts it, on the real broker: it reads every consumer group's lag from Kafka
// and reports it, here for a worker group that has no consumer at all (the case the consumers cannot report).
import { parseConfig } from '@fin/config';
import { jobRequestTopics } from '@fin/events';
import { consumerLag } from '@fin/metrics';
import {
  TEST_KAFKA_BROKERS,
  type TestDatabase,
  createTestDatabase,
  testCustomerToolsKey,
  testKafka,
  uniqueName,
  waitFor,
} from '@fin/testing';
import { jobsConfigShape } from '../src/config';
import { serveDefinition, type RunningService } from '@fin/http';
import { jobsService } from '../src/service';
import { SECRET, testLogger } from './support';

describe('the job-status service reporting consumer lag', () => {
  let db: TestDatabase;
  let service: RunningService | undefined;
  // A deployment of its own on the shared broker.
  const prefix = `${uniqueName('jobs-lag')}.`;
  const kafka = testKafka();
  const admin = kafka.admin();

  beforeAll(async () => {
    db = await createTestDatabase();
    await admin.connect();
  });
  afterAll(async () => {
    for (const closer of service?.closers ?? []) await closer.close();
    if (service?.server?.listening) await new Promise((resolve) => service?.server?.close(resolve));
    const topics = (await admin.listTopics()).filter((topic) => topic.startsWith(prefix));
    await admin.deleteTopics({ topics });
    await admin.disconnect();
    await db.drop();
  });

  it('reports the lag of a worker group none of whose workers runs, and stops reading with the service', async () => {
    const config = parseConfig(jobsConfigShape, {
      DATABASE_URL: db.url,
      INTERNAL_SIGNING_SECRET: SECRET,
      CUSTOMER_TOOLS_ENCRYPTION_KEY: testCustomerToolsKey(),
      KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
      KAFKA_TOPIC_PREFIX: prefix,
      KAFKA_LAG_INTERVAL_MS: '100',
      PORT: '0',
    });
    service = await serveDefinition(jobsService, { config, logger: testLogger() });
    expect(service.closers.map((closer) => closer.name)).toContain('consumer lag monitor');

    // Three news requests wait on partition 0; the news workers' group committed the first and then went away.
    const topic = prefix + jobRequestTopics.news.name;
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: ['a', 'b', 'c'].map((value) => ({ partition: 0, value })) });
    await producer.disconnect();
    await admin.setOffsets({ groupId: `${prefix}news-workers`, topic, partitions: [{ partition: 0, offset: '1' }] });

    const lag = () =>
      consumerLag
        .get()
        .then(({ values }) =>
          values.find(
            ({ labels }) => labels.group === 'news-workers' && labels.topic === jobRequestTopics.news.name && labels.partition === '0',
          ),
        );
    await waitFor(async () => (await lag())?.value === 2, { what: 'a lag of 2 for news-workers' });
  });
});
