import { randomUUID } from 'node:crypto';
import { testKafka, uniqueName, waitFor } from '@fin/testing';
import { z } from 'zod';
import {
  type EnvelopeOf,
  InvalidEventError,
  PoisonMessageError,
  createEnvelope,
  createMemoryBus,
  createPublisher,
  decodeEnvelope,
  defineCatalog,
  defineTopic,
  ensureTopics,
  eventCatalog,
  jobsEventsTopic,
  jobRequestTopics,
} from '../src';
import { testLogger } from './helpers';

const jobId = randomUUID();
const tenantId = randomUUID();

describe('the job catalog', () => {
  it('maps each topic name to its definition and dead-letter topic', () => {
    expect(Object.keys(eventCatalog)).toEqual([
      'jobs.news.requested',
      'jobs.stock-report.requested',
      'jobs.analysis.requested',
      'jobs.events',
    ]);
    expect(eventCatalog['jobs.news.requested']).toBe(jobRequestTopics.news);
    expect(jobRequestTopics.news).toMatchObject({ eventType: 'job.requested', version: 2, deadLetterTopic: 'jobs.news.requested.dlq' });
    expect(jobsEventsTopic).toMatchObject({ eventType: 'job.state', version: 1, deadLetterTopic: 'jobs.events.dlq' });
  });

  it('accepts job requests and rejects malformed ones', () => {
    const request = { job_id: jobId, job_type: 'stock-report', tenant_id: tenantId } as const;
    expect(createEnvelope(jobRequestTopics.news, request).payload).toEqual(request);
    expect(createEnvelope(jobRequestTopics.news, { ...request, attempt: 2 }).payload.attempt).toBe(2);
    expect(() => createEnvelope(jobRequestTopics.news, { ...request, job_type: 'chat' as 'news' })).toThrow(InvalidEventError);
    expect(() => createEnvelope(jobRequestTopics.news, { ...request, job_id: 'not-a-uuid' })).toThrow(/job_id/);
    expect(() => createEnvelope(jobRequestTopics.news, { ...request, attempt: 0 })).toThrow(/attempt/);
  });

  it('reads a version 1 job request, which carried the request body, without the body', () => {
    const v1 = {
      id: randomUUID(),
      type: 'job.requested',
      version: 1,
      occurredAt: new Date().toISOString(),
      payload: { job_id: jobId, job_type: 'news', tenant_id: tenantId, request: { data: { secret: 1 } } },
    };
    expect(decodeEnvelope(jobRequestTopics.news, JSON.stringify(v1)).payload).toEqual({
      job_id: jobId,
      job_type: 'news',
      tenant_id: tenantId,
    });
  });

  it('accepts job state events within their bounds, and a failure only with its reason', () => {
    const running = {
      job_id: jobId,
      job_type: 'news',
      seq: 2,
      status: 'running',
      progress: 40,
      currently_working_on: 'Reading sources',
    } as const;
    expect(createEnvelope(jobsEventsTopic, running).payload).toEqual(running);
    const completed = { ...running, seq: 3, status: 'completed', progress: 100, result: { summary: 'ok' } } as const;
    expect(createEnvelope(jobsEventsTopic, completed).payload.result).toEqual({ summary: 'ok' });
    expect(() => createEnvelope(jobsEventsTopic, { ...running, seq: 0 })).toThrow(/seq/);
    expect(() => createEnvelope(jobsEventsTopic, { ...running, progress: 101 })).toThrow(/progress/);
    expect(() => createEnvelope(jobsEventsTopic, { ...running, status: 'failed' })).toThrow(/error/);
    const failed = { ...running, status: 'failed', error: { type: 'service_unavailable', detail: 'Provider down' } } as const;
    expect(createEnvelope(jobsEventsTopic, failed).payload.error).toEqual(failed.error);
    // The reason's type is one of the API's error types: what the status endpoint will answer with.
    expect(() =>
      createEnvelope(jobsEventsTopic, { ...failed, error: { type: 'upstream_error' as 'service_unavailable', detail: 'Provider down' } }),
    ).toThrow(/error\.type/);
  });
});

describe('topics and envelopes', () => {
  const topic = defineTopic({
    name: 'things.happened',
    eventType: 'thing.happened',
    version: 2,
    schema: z.object({ count: z.int(), tags: z.array(z.string()).default([]) }),
  });

  it('rejects invalid topic definitions and duplicate catalog entries', () => {
    const schema = z.object({});
    expect(() => defineTopic({ name: 'has space', eventType: 'x', version: 1, schema })).toThrow(/Invalid topic name/);
    expect(() => defineTopic({ name: 'ends.dlq', eventType: 'x', version: 1, schema })).toThrow(/reserved/);
    expect(() => defineTopic({ name: 't', eventType: 'x', version: 0, schema })).toThrow(/version/);
    expect(() => defineCatalog(topic, topic)).toThrow(/defined twice/);
  });

  it('parses payloads on both sides, applying the schema', () => {
    const envelope = createEnvelope(topic, { count: 1 });
    expect(envelope).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      type: 'thing.happened',
      version: 2,
      occurredAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      payload: { count: 1, tags: [] },
    });
    const decoded: EnvelopeOf<typeof topic> = decodeEnvelope(topic, JSON.stringify({ ...envelope, payload: { count: 3 } }));
    expect(decoded.payload).toEqual({ count: 3, tags: [] });
    // An older version is read with the current (additive) schema.
    expect(decodeEnvelope(topic, JSON.stringify({ ...envelope, version: 1 })).version).toBe(1);
  });

  it('treats what it cannot read as poison', () => {
    const envelope = createEnvelope(topic, { count: 1 });
    const poison = [
      null,
      'not json',
      JSON.stringify({ ...envelope, id: 'nope' }),
      JSON.stringify({ ...envelope, type: 'other' }),
      JSON.stringify({ ...envelope, version: 3 }),
      JSON.stringify({ ...envelope, payload: { count: 'one' } }),
    ];
    for (const value of poison) expect(() => decodeEnvelope(topic, value)).toThrow(PoisonMessageError);
  });

  it('types publishing and consuming by topic', async () => {
    const bus = createMemoryBus({ logger: testLogger() });
    const publisher = createPublisher(bus);
    const seen: string[] = [];
    const subscription = await bus.subscribe({
      topics: [jobRequestTopics.news, jobsEventsTopic],
      groupId: 'typed',
      // The envelope is a union discriminated by its type.
      handler: async (envelope) => {
        if (envelope.type === 'job.state') seen.push(`${envelope.payload.status}#${envelope.payload.seq}`);
        else seen.push(`${envelope.payload.job_type} requested`);
      },
    });
    try {
      const sent = await publisher.publish(jobRequestTopics.news, jobId, {
        job_id: jobId,
        job_type: 'news',
        tenant_id: tenantId,
      });
      const jobType: 'news' | 'stock-report' | 'analysis' = sent.payload.job_type;
      expect(jobType).toBe('news');
      await publisher.publish(jobsEventsTopic, jobId, { job_id: jobId, job_type: 'news', seq: 1, status: 'running', progress: 0 });
      // @ts-expect-error: a job state event is not a job request
      await expect(publisher.publish(jobRequestTopics.news, jobId, { job_id: jobId, seq: 1 })).rejects.toThrow(InvalidEventError);
      await waitFor(() => seen.length === 2, { what: 'both events' });
      expect(seen.sort()).toEqual(['news requested', 'running#1']);
    } finally {
      await subscription.stop();
      await bus.close();
    }
  });
});

describe('ensureTopics', () => {
  it('creates topics with their dead-letter topics, and leaves existing ones alone', async () => {
    const kafka = testKafka();
    const name = uniqueName('ensure');
    const created = await ensureTopics(kafka, [name], 3);
    const admin = kafka.admin();
    await admin.connect();
    try {
      expect(created).toEqual([name, `${name}.dlq`]);
      expect(await ensureTopics(kafka, [name], 3)).toEqual([]);
      const { topics } = await admin.fetchTopicMetadata({ topics: [name, `${name}.dlq`] });
      expect(topics.map((topic) => topic.partitions.length)).toEqual([3, 3]);
    } finally {
      await admin.deleteTopics({ topics: [name, `${name}.dlq`] });
      await admin.disconnect();
    }
  });
});
