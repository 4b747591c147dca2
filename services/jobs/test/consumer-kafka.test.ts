// The one test through the real broker: job events published on Kafka reach the database through the consumer.
import { type Pool, createPool } from '@fin/db';
import { type EventBus, type Subscription, createKafkaBus, createPublisher, defineTopic, jobsEventsTopic } from '@fin/events';
import { type TestDatabase, createTestDatabase, createTopics, testKafka, uniqueName, waitFor } from '@fin/testing';
import { startJobEventConsumer } from '../src/consumer';
import { NEWS_RESULT, createTenant, insertJob, jobRow, testLogger } from './support';

describe('job event consumer on Kafka', () => {
  let db: TestDatabase;
  let pool: Pool;
  let bus: EventBus;
  let subscription: Subscription | undefined;
  let deleteTopics: () => Promise<void>;
  // jobs.events' schema and event type under a name of this test's own.
  const topic = defineTopic({ name: uniqueName('jobs-events-test'), eventType: jobsEventsTopic.eventType, version: jobsEventsTopic.version, schema: jobsEventsTopic.schema });

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'jobs-kafka-test' });
    const kafka = testKafka();
    deleteTopics = await createTopics(kafka, [topic.name, topic.deadLetterTopic]);
    bus = createKafkaBus({ kafka, logger: testLogger(), sessionTimeoutMs: 6_000, heartbeatIntervalMs: 500 });
  });
  afterAll(async () => {
    await subscription?.stop();
    await bus.close();
    await deleteTopics();
    await pool.end();
    await db.drop();
  });

  it('applies published events in order, once, and ignores the late and the duplicate ones', async () => {
    const tenantId = await createTenant(pool);
    const id = await insertJob(pool, { tenantId, attempts: 1, cacheKey: `news:${uniqueName('key')}` });
    subscription = await startJobEventConsumer({ bus, pool, logger: testLogger(), topic, groupId: uniqueName('jobs-service') });

    const publisher = createPublisher(bus);
    const event = (seq: number, fields: object) => ({ job_id: id, job_type: 'news' as const, seq, status: 'running' as const, progress: 0, ...fields });
    await publisher.publish(topic, id, event(1001, { progress: 20, currently_working_on: 'Fetching news for AAPL' }));
    const progress = await publisher.publish(topic, id, event(1002, { progress: 60, currently_working_on: 'Ranking news by relevance' }));
    // A redelivery of the same envelope, and a late event from earlier in the attempt.
    await bus.publish([{ topic: topic.name, key: id, envelope: progress }]);
    await publisher.publish(topic, id, event(1001, { progress: 10, currently_working_on: 'Late' }));
    await publisher.publish(topic, id, event(1003, { status: 'completed', progress: 100, result: NEWS_RESULT, customer_tool_set: null, usage: { input_tokens: 10, output_tokens: 4 } }));
    // After the terminal event: must not reopen the job.
    await publisher.publish(topic, id, event(1004, { progress: 5, currently_working_on: 'After the end' }));

    await waitFor(async () => {
      const { rows } = await pool.query<{ count: string }>('SELECT count(*) FROM processed_events');
      return Number(rows[0]?.count) === 5;
    }, { timeoutMs: 30_000, what: 'the consumer to process all five distinct events' });

    const row = await jobRow(pool, id);
    expect(row).toMatchObject({ status: 'completed', progress: 100, result: NEWS_RESULT, event_seq: 1003, input_tokens: 10, output_tokens: 4 });
    const { rows: cached } = await pool.query<{ job_id: string }>('SELECT job_id::text AS job_id FROM result_cache');
    expect(cached).toEqual([{ job_id: id }]);
  });
});
