// GET /api/jobs/{job_type}/{job_id}/events on the service as main.ts runs it (here on the in-process bus, with the
// outbox relay publishing what the runner commits): the live path from a runner's write to a client's event.
import { JobErrorEvent, JobProgressEvent, JobResultEvent, JobStatusEvent } from '@fin/contracts';
import { type Pool, createPool } from '@fin/db';
import { type MemoryEventBus, createMemoryBus, createPublisher, jobsEventsTopic } from '@fin/events';
import { attemptRecorder, claimJob } from '@fin/job-store';
import { type EventStreamClient, type SseFrame, type TestDatabase, createTestDatabase, openEventStream, waitFor } from '@fin/testing';
import { serveDefinition, served, type ServedService } from '@fin/http';
import { jobsService } from '../src/service';
import { NEWS_RESULT, createTenant, insertJob, jobsConfig, signedGet, testLogger } from './support';

const NOT_FOUND = { detail: 'Job not found.', status_code: 404, type: 'not_found' };

describe('job event stream', () => {
  let db: TestDatabase;
  let pool: Pool;
  let bus: MemoryEventBus;
  let service: ServedService;
  const logger = testLogger();
  const open: EventStreamClient[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'jobs-events-test' });
    bus = createMemoryBus({ logger });
    service = served(
      await serveDefinition(jobsService, {
        config: jobsConfig(db.url, {
          JOB_REAPER_INTERVAL_MS: '60000',
          JOB_EVENTS_KEEP_ALIVE_MS: '300',
          JOB_EVENTS_MAX_STREAMS_PER_ACCOUNT: '3',
        }),
        logger,
        shared: { bus, pool, outboxRelay: { pollIntervalMs: 20, standbyIntervalMs: 50 } },
      }),
    );
  });
  afterEach(() => {
    for (const client of open.splice(0)) client.close();
  });
  afterAll(async () => {
    service.lifecycle.beginShutdown();
    await new Promise((resolve) => service.server.close(resolve));
    for (const closer of service.closers) await closer.close();
    await bus.close();
    await pool.end();
    await db.drop();
  });

  const stream = async (id: string, tenantId: string, { type = 'news', lastEventId }: { type?: string; lastEventId?: string } = {}) => {
    const path = `/api/jobs/${type}/${id}/events`;
    const client = await openEventStream(`${service.url}${path}`, {
      headers: { ...signedGet(path, tenantId), ...(lastEventId === undefined ? {} : { 'Last-Event-ID': lastEventId }) },
    });
    open.push(client);
    return client;
  };

  /** A job claimed by a worker, and the worker's recorder of its state. */
  const runningJob = async (tenantId: string) => {
    const id = await insertJob(pool, { tenantId });
    const job = (await claimJob(pool, { jobId: id, jobType: 'news', workerId: 'worker-1', leaseMs: 30_000 }))!;
    return { id, runner: attemptRecorder({ pool, workerId: 'worker-1', retryDelayMs: 1_000 }, job) };
  };

  const ids = (frames: readonly SseFrame[]) => frames.map((frame) => Number(frame.id));

  it('follows a job from pending to its result, each event with a larger id, then ends', async () => {
    const tenantId = await createTenant(pool);
    const { id, runner } = await runningJob(tenantId);
    const client = await stream(id, tenantId);
    expect(client.status).toBe(200);
    expect(client.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(client.headers['cache-control']).toBe('no-store');
    expect(client.retryMs).toBe(1_000);
    // The current state first: claimed, nothing written yet.
    const first = (await client.next())!;
    expect(first).toEqual({
      id: '0',
      event: 'status',
      data: { job_id: id, status: 'pending', progress: 0, currently_working_on: 'Waiting for a worker' },
    });

    await runner.progress(10, 'Fetching news for AAPL');
    const running = (await client.next())!;
    expect(running.event).toBe('status');
    expect(JobStatusEvent.parse(running.data)).toEqual({
      job_id: id,
      status: 'running',
      progress: 10,
      currently_working_on: 'Fetching news for AAPL',
    });
    await new Promise((resolve) => setTimeout(resolve, 300)); // progress is written at most every 250 ms
    await runner.progress(60, 'Ranking news by relevance');
    const progress = (await client.next())!;
    expect(progress.event).toBe('progress');
    expect(JobProgressEvent.parse(progress.data)).toEqual({ job_id: id, progress: 60, currently_working_on: 'Ranking news by relevance' });

    await runner.complete({ result: NEWS_RESULT, customerToolSet: null });
    const rest = await client.rest();
    expect(rest.map((frame) => frame.event)).toEqual(['result']);
    // What the result URL answers.
    expect(JobResultEvent.safeParse(rest[0]!.data).success).toBe(true);
    const resultPath = `/api/jobs/news/${id}/result`;
    const answered = await fetch(`${service.url}${resultPath}`, { headers: signedGet(resultPath, tenantId) });
    expect(rest[0]!.data).toEqual(await answered.json());
    expect(rest[0]!.data).toMatchObject({ job_id: id, status: 'completed', result: { news: [{ title: NEWS_RESULT.news[0]!.title }] } });
    const all = [first, running, progress, ...rest];
    expect(ids(all)).toEqual([...ids(all)].sort((a, b) => a - b));
    expect(new Set(ids(all)).size).toBe(all.length);
  });

  it('ignores duplicate and late events: nothing twice, nothing backwards', async () => {
    const tenantId = await createTenant(pool);
    const { id, runner } = await runningJob(tenantId);
    await runner.progress(50, 'Halfway');
    const client = await stream(id, tenantId);
    const current = (await client.next())!;
    expect(current).toMatchObject({ event: 'status', data: { status: 'running', progress: 50, currently_working_on: 'Halfway' } });
    const seq = Number(current.id);
    const publisher = createPublisher(bus);
    const event = (fields: { seq: number; status: 'pending' | 'running'; progress: number; currently_working_on: string }) => ({
      job_id: id,
      job_type: 'news' as const,
      ...fields,
    });
    // Redelivered, and a late one from before: the stream shows neither.
    await publisher.publish(jobsEventsTopic, id, event({ seq, status: 'running', progress: 50, currently_working_on: 'Halfway' }));
    await publisher.publish(jobsEventsTopic, id, event({ seq: seq - 1, status: 'pending', progress: 0, currently_working_on: 'Old' }));
    // A newer event whose progress is lower than what the client has (never decreases on screen).
    await publisher.publish(
      jobsEventsTopic,
      id,
      event({ seq: seq + 1, status: 'running', progress: 20, currently_working_on: 'Checking' }),
    );
    const next = (await client.next())!;
    expect(next).toEqual({ id: String(seq + 1), event: 'progress', data: { job_id: id, progress: 50, currently_working_on: 'Checking' } });
  });

  it('resumes after Last-Event-ID with only newer events, and answers 204 once the client has the final one', async () => {
    const tenantId = await createTenant(pool);
    const { id, runner } = await runningJob(tenantId);
    await runner.progress(30, 'Looking up market data');
    const first = await stream(id, tenantId);
    const seen = (await first.next())!;
    first.close();

    // Reconnecting with the id it has: nothing is repeated; the next change comes.
    const resumed = await stream(id, tenantId, { lastEventId: seen.id! });
    await runner.fail({ type: 'gateway_timeout', detail: 'The model did not answer in time.' });
    const rest = await resumed.rest();
    expect(rest.map((frame) => frame.event)).toEqual(['error']);
    expect(JobErrorEvent.parse(rest[0]!.data)).toEqual({
      job_id: id,
      detail: 'The model did not answer in time.',
      status_code: 504,
      type: 'gateway_timeout',
    });
    expect(Number(rest[0]!.id)).toBeGreaterThan(Number(seen.id));

    // An EventSource reconnects after the end with the final id: 204 stops it.
    const done = await stream(id, tenantId, { lastEventId: rest[0]!.id! });
    expect(done.status).toBe(204);
    // With an older id, the final event again.
    const again = await stream(id, tenantId, { lastEventId: seen.id! });
    expect((await again.rest()).map((frame) => [frame.event, frame.id])).toEqual([['error', rest[0]!.id]]);
  });

  it('ends the stream when the job finishes, even for a client whose Last-Event-ID is from further on', async () => {
    const tenantId = await createTenant(pool);
    const { id, runner } = await runningJob(tenantId);
    const client = await stream(id, tenantId, { lastEventId: '999999' });
    expect(client.status).toBe(200);
    await runner.complete({ result: NEWS_RESULT, customerToolSet: null });
    expect(await client.rest()).toEqual([]);
  });

  it('sends a finished job its final event at once, then ends', async () => {
    const tenantId = await createTenant(pool);
    // Stored before citations existed.
    const { citations: _citations, ...item } = NEWS_RESULT.news[0]!;
    const id = await insertJob(pool, { tenantId, status: 'completed', progress: 100, result: { news: [item] }, eventSeq: 1002 });
    const client = await stream(id, tenantId);
    const frames = await client.rest();
    expect(frames.map((frame) => [frame.id, frame.event])).toEqual([['1002', 'result']]);
    // A result stored before citations existed reads as the result endpoint answers it: with citations: [].
    expect(JobResultEvent.parse(frames[0]!.data)).toEqual(frames[0]!.data);
    expect(frames[0]!.data).toMatchObject({ job_id: id, status: 'completed', result: { news: [{ citations: [] }] } });
  });

  it('answers 404 alike for an unknown job, another tenant’s job and another job type, and 400 for bad input', async () => {
    const tenantId = await createTenant(pool);
    const otherTenant = await createTenant(pool);
    const id = await insertJob(pool, { tenantId });
    for (const [jobId, tenant, type] of [
      [id, otherTenant, 'news'],
      [id, tenantId, 'analysis'],
      ['6f1c1f0e-8d4e-4b7a-9a51-3c2d8f0b1a2c', tenantId, 'news'],
    ] as const) {
      const client = await stream(jobId, tenant, { type });
      expect([client.status, client.headers['content-type'], await client.body()]).toEqual([
        404,
        expect.stringContaining('application/json'),
        NOT_FOUND,
      ]);
    }
    const badId = await stream('not-a-uuid', tenantId);
    expect(badId.status).toBe(400);
    expect(await badId.body()).toMatchObject({ type: 'validation_error', detail: expect.stringContaining('job_id') });
    const badLast = await stream(id, tenantId, { lastEventId: 'abc' });
    expect(badLast.status).toBe(400);
    expect(await badLast.body()).toMatchObject({ type: 'validation_error', detail: expect.stringContaining('Last-Event-ID') });
    expect(service.lifecycle.shuttingDown).toBe(false);
  });

  it('keeps a quiet stream alive, and picks up a change that came without an event', async () => {
    const tenantId = await createTenant(pool);
    const { id } = await runningJob(tenantId);
    const client = await stream(id, tenantId);
    await client.next();
    // What the reaper does to a lost attempt: no event, only the row.
    await pool.query(
      `UPDATE jobs SET currently_working_on = 'Retrying after an interrupted attempt (attempt 2 of 3)', event_seq = 1999 WHERE id = $1`,
      [id],
    );
    const next = (await client.next())!;
    expect(next).toMatchObject({
      id: '1999',
      event: 'progress',
      data: { currently_working_on: 'Retrying after an interrupted attempt (attempt 2 of 3)' },
    });
    expect(client.comments).toContain('keep-alive');
  });

  it('bounds the open streams per account; a client that leaves frees its place', async () => {
    const tenantId = await createTenant(pool);
    const { id } = await runningJob(tenantId);
    const clients = [await stream(id, tenantId), await stream(id, tenantId), await stream(id, tenantId)];
    for (const client of clients) expect(client.status).toBe(200);
    const refused = await stream(id, tenantId);
    expect(refused.status).toBe(429);
    expect(await refused.body()).toMatchObject({ type: 'rate_limit_exceeded', status_code: 429 });
    // Another account is not affected.
    const other = await createTenant(pool);
    const { id: otherId } = await runningJob(other);
    expect((await stream(otherId, other)).status).toBe(200);

    clients[0]!.close();
    await waitFor(
      async () => {
        const retry = await stream(id, tenantId);
        return retry.status === 200;
      },
      { what: 'the place of the stream that left to be freed' },
    );
  });

  it('ends every open stream when the shutdown begins, so that the HTTP drain is not held up', async () => {
    const tenantId = await createTenant(pool);
    const { id } = await runningJob(tenantId);
    const client = await stream(id, tenantId);
    await client.next();
    service.lifecycle.beginShutdown();
    expect(await client.rest()).toEqual([]);
    const refused = await stream(id, tenantId);
    expect(refused.status).toBe(503);
  });
});
