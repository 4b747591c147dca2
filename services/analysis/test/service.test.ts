import { createServer, type AddressInfo } from 'node:net';
import { ErrorBody } from '@fin/contracts';
import { createMemoryBus, type MemoryEventBus } from '@fin/events';
import { textReply } from '@fin/fakes';
import { createShutdown, serveDefinition } from '@fin/http';
import { waitFor } from '@fin/testing';
import type { RunningService } from '@fin/http';
import { analysisService } from '../src/service';
import { analysisConfig, createTestBed, logger, outboxOf, PATH, signed, sseFrames, type SseFrame, type TestBed } from './support';

const ANSWER = `## Answer\n\n${'A paragraph of analysis that takes a while to write. '.repeat(6).trim()}`;

describe('analysis service shutdown with open streams', () => {
  let bed: TestBed;
  let bus: MemoryEventBus;

  beforeAll(async () => {
    bed = await createTestBed();
  });
  beforeEach(() => {
    bus = createMemoryBus({ logger });
  });
  afterEach(async () => {
    bed.fake.reset();
    await bus.close();
  });
  afterAll(() => bed.close());

  async function start(env: Record<string, string>): Promise<{ service: RunningService; url: string; shutdown: () => Promise<number[]> }> {
    const config = analysisConfig(bed, { ANALYSIS_STREAM_DONE_WAIT_MS: '0', ...env });
    const service = await serveDefinition(analysisService, { config, logger, shared: { pool: bed.pool, bus, engine: bed.engine } });
    const exits: number[] = [];
    const shutdown = createShutdown({
      logger,
      lifecycle: service.lifecycle,
      servers: [service.server!],
      drainTimeoutMs: 20_000,
      closers: service.closers,
      exit: (code) => exits.push(code),
    });
    return {
      service,
      url: `http://127.0.0.1:${(service.server!.address() as AddressInfo).port}`,
      shutdown: async () => {
        await shutdown('SIGTERM');
        return exits;
      },
    };
  }

  /** Opens a stream and resolves once its first chunk arrived; `rest` then reads it to the end. */
  async function openStream(url: string): Promise<{ jobId: string; rest: Promise<SseFrame[]> }> {
    const res = await fetch(`${url}${PATH}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...signed(bed.tenantA, { prompt: 'A long one.', output_format: { stream: true } }) },
      body: JSON.stringify({ prompt: 'A long one.', output_format: { stream: true } }),
    });
    const jobId = /([0-9a-f-]{36})\/status$/.exec(res.headers.get('location') ?? '')![1]!;
    const frames = sseFrames(res.body!);
    for (;;) {
      const next = await frames.next();
      if (next.done === true || next.value.event === 'synthesis_chunk') break;
    }
    const rest = (async () => {
      const seen: SseFrame[] = [];
      for await (const frame of frames) seen.push(frame);
      return seen;
    })();
    return { jobId, rest };
  }

  it('ends an open stream with a final service_unavailable error event, fails its job and stops the model call', async () => {
    bed.fake.reply(textReply(ANSWER, { faults: { hang: { afterEvents: 6 } } }));
    const { url, shutdown } = await start({ ANALYSIS_STREAM_SHUTDOWN_GRACE_MS: '0' });
    const { jobId, rest } = await openStream(url);

    const exits = await shutdown();
    const frames = (await rest).filter((frame) => frame.event !== undefined);
    expect(frames.at(-1)?.event).toBe('error');
    expect(ErrorBody.parse(frames.at(-1)?.data)).toEqual({
      type: 'service_unavailable',
      status_code: 503,
      detail: 'The analysis service is restarting and stopped this analysis before it finished. Send the request again.',
    });
    expect(exits).toEqual([0]);
    // The job is not left running: it is failed, with its event in the outbox, and its lease is released.
    expect((await outboxOf(bed.pool, jobId)).at(-1)?.payload).toMatchObject({ status: 'failed', error: { type: 'service_unavailable' } });
    const { rows } = await bed.pool.query('SELECT status, lease_owner, lease_expires_at FROM jobs WHERE id = $1', [jobId]);
    expect(rows[0]).toEqual({ status: 'failed', lease_owner: null, lease_expires_at: null });
    await waitFor(() => bed.fake.requests[0]?.cancelled === true, { what: 'the model call to be cancelled' });
  });

  it('lets a stream that finishes within the grace period end normally', async () => {
    bed.fake.reply(textReply(ANSWER, { faults: { delayBetweenEventsMs: 15 } }));
    const { url, shutdown } = await start({ ANALYSIS_STREAM_SHUTDOWN_GRACE_MS: '30000' });
    const { jobId, rest } = await openStream(url);

    const exits = await shutdown();
    const frames = (await rest).filter((frame) => frame.event !== undefined);
    expect(frames.at(-1)).toEqual({ event: 'done', data: { job_id: jobId, status: 'completed' } });
    expect(exits).toEqual([0]);
    expect((await outboxOf(bed.pool, jobId)).at(-1)?.payload.status).toBe('completed');
  });

  it('refuses a new stream once shutdown has begun', async () => {
    const { service, url, shutdown } = await start({});
    service.lifecycle.beginShutdown();
    const res = await fetch(`${url}${PATH}`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Connection: 'close',
        ...signed(bed.tenantA, { prompt: 'Too late.', output_format: { stream: true } }),
      },
      body: JSON.stringify({ prompt: 'Too late.', output_format: { stream: true } }),
    });
    expect(res.status).toBe(503);
    expect(ErrorBody.parse(await res.json()).type).toBe('service_unavailable');
    expect(await shutdown()).toEqual([0]);
  });
  it('fails start-up with the cause when its port is in use, instead of crashing later', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = (taken.address() as AddressInfo).port;
      await expect(start({ PORT: String(port), ANALYSIS_ROLE: 'all' })).rejects.toMatchObject({ code: 'EADDRINUSE' });
      // What it had started is stopped: the shared pool holds no connection for a relay or a worker.
      expect(bed.pool.totalCount - bed.pool.idleCount).toBe(0);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
