// Two replicas of the jobs service on the real broker, in one observer group: each replica's observer gets only
// some of jobs.events' partitions, yet a client's event stream on either replica follows its job live, because
// every replica also hears every event through an ephemeral group of its own. The streams' own re-reads of the
// row are slowed to a minute here, so only the broadcast can deliver the events in time.
import { type Pool, createPool } from '@fin/db';
import { type EventBus, createKafkaBus, jobsEventsTopic } from '@fin/events';
import { attemptRecorder, claimJob } from '@fin/job-store';
import {
  type EventStreamClient,
  type TestDatabase,
  createTestDatabase,
  createTopics,
  openEventStream,
  testKafka,
  uniqueName,
  waitFor,
} from '@fin/testing';
import { serveDefinition, served, type ServedService } from '@fin/http';
import { jobsService } from '../src/service';
import { NEWS_RESULT, createTenant, insertJob, jobsConfig, signedGet, testLogger } from './support';

describe('job event streams across replicas on Kafka', () => {
  let db: TestDatabase;
  let pool: Pool;
  let deleteTopics: () => Promise<void>;
  const prefix = `${uniqueName('job-streams')}.`;
  const kafka = testKafka();
  const logger = testLogger();
  const observerGroup = uniqueName('jobs-service');
  /** Replica name → the jobs its observer (the shared group) received events of. */
  const observed = { a: new Set<string>(), b: new Set<string>() };
  const replicas: { name: 'a' | 'b'; bus: EventBus; service: ServedService }[] = [];
  const open: EventStreamClient[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'jobs-streams-kafka-test' });
    deleteTopics = await createTopics(kafka, [prefix + jobsEventsTopic.name, prefix + jobsEventsTopic.deadLetterTopic], 3);
    for (const name of ['a', 'b'] as const) {
      const bus = createKafkaBus({ kafka, logger, topicPrefix: prefix, sessionTimeoutMs: 6_000, heartbeatIntervalMs: 500 });
      const service = served(
        await serveDefinition(jobsService, {
          config: jobsConfig(db.url, { JOB_REAPER_INTERVAL_MS: '60000', JOB_EVENTS_KEEP_ALIVE_MS: '60000' }),
          logger,
          shared: {
            bus,
            pool,
            groupId: observerGroup,
            outboxRelay: { pollIntervalMs: 20, standbyIntervalMs: 50 },
            onJobEvent: (event) => void observed[name].add(event.job_id),
          },
        }),
      );
      replicas.push({ name, bus, service });
    }
    // Both observers in the group with partitions of their own, and both broadcast groups joined.
    const admin = kafka.admin();
    await admin.connect();
    try {
      await waitFor(
        async () => {
          const { groups } = await admin.listGroups();
          const ids = groups.map((group) => group.groupId).filter((id) => id.startsWith(`${prefix}jobs-streams.`));
          const described = await admin.describeGroups([prefix + observerGroup, ...ids]);
          const shared = described.groups.find((group) => group.groupId === prefix + observerGroup);
          const broadcast = described.groups.filter((group) => group !== shared);
          return (
            ids.length === 2 &&
            shared?.state === 'Stable' &&
            shared.members.length === 2 &&
            broadcast.every((group) => group.state === 'Stable' && group.members.length === 1)
          );
        },
        { timeoutMs: 60_000, intervalMs: 250, what: 'the consumer groups to settle' },
      );
    } finally {
      await admin.disconnect();
    }
  }, 90_000);
  afterAll(async () => {
    for (const client of open) client.close();
    for (const { service, bus } of replicas) {
      service.lifecycle.beginShutdown();
      await new Promise((resolve) => service.server.close(resolve));
      for (const closer of service.closers) await closer.close();
      await bus.close();
    }
    await deleteTopics();
    await pool.end();
    await db.drop();
  });

  it("follows every job live on both replicas, whichever replica's observer owns its partition", async () => {
    const tenantId = await createTenant(pool);
    const jobs = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const id = await insertJob(pool, { tenantId });
        const streams = await Promise.all(
          replicas.map(async ({ service }) => {
            const path = `/api/jobs/news/${id}/events`;
            const client = await openEventStream(`${service.url}${path}`, { headers: signedGet(path, tenantId) });
            open.push(client);
            expect((await client.next())?.event).toBe('status');
            return client;
          }),
        );
        return { id, streams };
      }),
    );
    for (const { id } of jobs) {
      const job = (await claimJob(pool, { jobId: id, jobType: 'news', workerId: 'worker-1', leaseMs: 30_000 }))!;
      const runner = attemptRecorder({ pool, workerId: 'worker-1', retryDelayMs: 1_000 }, job);
      await runner.progress(30, 'Fetching news for AAPL');
      await runner.complete({ result: NEWS_RESULT, customerToolSet: null });
    }
    const started = Date.now();
    for (const { id, streams } of jobs) {
      for (const client of streams) {
        const rest = await client.rest();
        expect(rest.map((frame) => [frame.event, frame.id])).toEqual([
          ['status', '1001'],
          ['result', '1002'],
        ]);
        expect(rest[1]?.data).toEqual({ job_id: id, status: 'completed', result: NEWS_RESULT });
      }
    }
    // Live, not the minute-long re-read.
    expect(Date.now() - started).toBeLessThan(30_000);

    // Each job's events went to exactly one replica's observer (the group shares the partitions out): so for every
    // job, one of its two streams was served by the replica whose observer did not get its partition.
    await waitFor(() => jobs.every(({ id }) => observed.a.has(id) !== observed.b.has(id)), { what: 'each job observed by one replica' });
  }, 60_000);
});
