// The one test through the real broker: job events published on Kafka reach the observer, in order per job, and
// the observer writes nothing (the runner already committed the state the events describe).
import { type Pool, createPool } from '@fin/db';
import {
  type EventBus,
  type JobStateEventPayload,
  type Subscription,
  createKafkaBus,
  createPublisher,
  defineTopic,
  jobsEventsTopic,
} from '@fin/events';
import { type TestDatabase, createTestDatabase, createTopics, testKafka, uniqueName, waitFor } from '@fin/testing';
import { startJobEventObserver } from '../src/consumer';
import { NEWS_RESULT, createTenant, insertJob, jobRow, testLogger } from './support';

describe('job event observer on Kafka', () => {
  let db: TestDatabase;
  let pool: Pool;
  let bus: EventBus;
  let subscription: Subscription | undefined;
  let deleteTopics: () => Promise<void>;
  // jobs.events' schema and event type under a name of this test's own.
  const topic = defineTopic({
    name: uniqueName('jobs-events-test'),
    eventType: jobsEventsTopic.eventType,
    version: jobsEventsTopic.version,
    schema: jobsEventsTopic.schema,
  });

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

  it('hands every published event to the observer in order, and leaves the job row alone', async () => {
    const tenantId = await createTenant(pool);
    const id = await insertJob(pool, { tenantId, status: 'running', progress: 60, attempts: 1, eventSeq: 1002 });
    const seen: JobStateEventPayload[] = [];
    subscription = await startJobEventObserver({
      bus,
      logger: testLogger(),
      topic,
      groupId: uniqueName('jobs-service'),
      onEvent: (event) => void seen.push(event),
    });

    const publisher = createPublisher(bus);
    const event = (seq: number, fields: object) => ({
      job_id: id,
      job_type: 'news' as const,
      seq,
      status: 'running' as const,
      progress: 0,
      ...fields,
    });
    await publisher.publish(topic, id, event(1001, { progress: 20, currently_working_on: 'Fetching news for AAPL' }));
    await publisher.publish(topic, id, event(1002, { progress: 60, currently_working_on: 'Ranking news by relevance' }));
    await publisher.publish(topic, id, event(1003, { status: 'completed', progress: 100, result: NEWS_RESULT, customer_tool_set: null }));

    await waitFor(() => seen.length === 3, { timeoutMs: 30_000, what: 'the observer to receive the three events' });
    expect(seen.map((e) => [e.seq, e.status])).toEqual([
      [1001, 'running'],
      [1002, 'running'],
      [1003, 'completed'],
    ]);
    // Observing is not applying: the row is as the runner left it, and nothing was cached or recorded.
    expect(await jobRow(pool, id)).toMatchObject({ status: 'running', progress: 60, event_seq: 1002, result: null });
    const { rows } = await pool.query<{ n: string }>(
      'SELECT (SELECT count(*) FROM result_cache) + (SELECT count(*) FROM processed_events) AS n',
    );
    expect(rows[0]?.n).toBe('0');
  });

  it('joins no consumer group when nothing hangs off it: no fetch and no decode of every event for nothing', async () => {
    const groups: string[] = [];
    const counting: Pick<EventBus, 'subscribe'> = {
      subscribe: (options) => {
        groups.push(options.groupId);
        return bus.subscribe(options);
      },
    };
    const idle = await startJobEventObserver({ bus: counting, logger: testLogger(), topic });
    await idle.stop();
    expect(groups).toEqual([]);
    const observing = await startJobEventObserver({ bus: counting, logger: testLogger(), topic, onEvent: () => undefined });
    await observing.stop();
    expect(groups).toEqual(['jobs-service']);
  });
});
