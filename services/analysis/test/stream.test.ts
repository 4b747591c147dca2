import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AnalysisDoneEvent, AnalysisSynthesisChunkEvent, ErrorBody, analysisText, type AnalysisResult } from '@fin/contracts';
import { jsonReply, textReply } from '@fin/fakes';
import { waitFor } from '@fin/testing';
import {
  analysisApi,
  createTestBed,
  finishJob,
  outboxOf,
  PATH,
  signed,
  sseFrames,
  type AnalysisApi,
  type SseFrame,
  type TestBed,
} from './support';

const MARKDOWN = [
  '## Rate sensitivity',
  '',
  'Higher rates weigh on long-duration growth stocks more than on cash-rich incumbents.',
  '',
  '- Apple: large net cash, modest sensitivity.',
  '- Microsoft: similar, with recurring revenue.',
].join('\n');

describe('POST /api/analysis, streamed', () => {
  let bed: TestBed;
  const servers: Server[] = [];
  const made: AnalysisApi[] = [];

  beforeAll(async () => {
    bed = await createTestBed();
  });
  afterEach(async () => {
    bed.fake.reset();
    await Promise.all(
      servers.splice(0).map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeAllConnections();
          }),
      ),
    );
    for (const api of made.splice(0)) await api.close();
  });
  afterAll(() => bed.close());

  /** The API role as the service's definition makes it, on a port of its own as the gateway reaches it; `env` sets its variables. */
  async function serve(env: Record<string, string> = {}): Promise<string> {
    const api = await analysisApi(bed, {
      ANALYSIS_INLINE_WAIT_MS: '0',
      ANALYSIS_TIME_LIMIT_MS: '20000',
      ANALYSIS_LEASE_MS: '5000',
      ANALYSIS_MAX_ATTEMPTS: '3',
      ANALYSIS_STREAM_HEARTBEAT_MS: '15000',
      ANALYSIS_STREAM_DONE_WAIT_MS: '0',
      ANALYSIS_JOB_POLL_MS: '200',
      ...env,
    });
    made.push(api);
    const server = await new Promise<Server>((resolve) => {
      const listening = api.app.listen(0, '127.0.0.1', () => resolve(listening));
    });
    servers.push(server);
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  function post(url: string, body: unknown, { headers = {}, signal }: { headers?: Record<string, string>; signal?: AbortSignal } = {}) {
    return fetch(`${url}${PATH}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...signed(bed.tenantA, body), ...headers },
      body: JSON.stringify(body),
      signal,
    });
  }

  async function readAll(res: Response): Promise<SseFrame[]> {
    const frames: SseFrame[] = [];
    for await (const frame of sseFrames(res.body!)) frames.push(frame);
    return frames;
  }

  const chunksOf = (frames: SseFrame[]) =>
    frames.filter((frame) => frame.event === 'synthesis_chunk').map((frame) => AnalysisSynthesisChunkEvent.parse(frame.data).chunk);
  const named = (frames: SseFrame[]) => frames.filter((frame) => frame.event !== undefined);
  const jobIdOf = (res: Response) => /^\/api\/jobs\/analysis\/([0-9a-f-]{36})\/status$/.exec(res.headers.get('location') ?? '')?.[1];

  it('streams the synthesis in several chunks, then done; the job runs here, reported like any job, its result the streamed text', async () => {
    bed.fake.reply(textReply(MARKDOWN));
    const url = await serve();
    const res = await post(url, {
      prompt: 'How rate-sensitive are AAPL and MSFT?',
      symbols: ['AAPL', 'MSFT'],
      output_format: { stream: true },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const jobId = jobIdOf(res);
    expect(jobId).toBeDefined();

    const frames = await readAll(res);
    const chunks = chunksOf(frames);
    expect(chunks.length).toBeGreaterThan(3);
    expect(chunks.join('')).toBe(MARKDOWN);
    const events = named(frames);
    expect(events.at(-1)).toEqual({ event: 'done', data: AnalysisDoneEvent.parse({ job_id: jobId, status: 'completed' }) });
    expect(events.slice(0, -1).every((frame) => frame.event === 'synthesis_chunk')).toBe(true);

    // A real job: its row with the result, and job.state events through the outbox that end with `completed` (no
    // worker is asked).
    const { rows } = await bed.pool.query(
      "SELECT type, tenant_id, max_attempts, request, result, status = 'completed' AND lease_owner IS NULL AS finished FROM jobs WHERE id = $1",
      [jobId],
    );
    expect(rows[0]).toMatchObject({
      type: 'analysis',
      tenant_id: bed.tenantA,
      max_attempts: 1,
      finished: true,
      request: { output_format: { type: 'markdown', stream: true } },
      result: { format: 'markdown', content: MARKDOWN },
    });
    const outbox = await outboxOf(bed.pool, jobId!);
    expect(outbox.every((event) => event.topic === 'jobs.events')).toBe(true);
    expect(outbox.map((event) => event.payload.status)).toEqual(expect.arrayContaining(['running', 'completed']));
    const completed = outbox.at(-1)!.payload;
    expect(completed).toMatchObject({ status: 'completed', progress: 100, result: { format: 'markdown', content: MARKDOWN } });
  });

  it('streams a json_schema answer as the JSON text of the validated result', async () => {
    bed.fake.reply(jsonReply({ summary: 'Moderate.', risk_score: 0.4, _citations: [] }));
    const url = await serve();
    const res = await post(url, {
      prompt: 'Score it.',
      output_format: { type: 'json_schema', schema: { summary: 'string', risk_score: 'number' }, stream: true },
    });
    const frames = await readAll(res);
    const text = chunksOf(frames).join('');
    expect(JSON.parse(text)).toEqual({ summary: 'Moderate.', risk_score: 0.4 });
    const result = (await outboxOf(bed.pool, jobIdOf(res)!)).at(-1)!.payload.result as AnalysisResult;
    expect(text).toBe(analysisText(result));
    expect(named(frames).at(-1)?.event).toBe('done');
  });

  it('ends with an error event carrying the error body when the model fails mid-stream, and the job fails', async () => {
    bed.fake.reply(textReply(MARKDOWN, { faults: { failMidStream: { afterEvents: 6, error: { type: 'overloaded_error' } } } }));
    const url = await serve();
    const res = await post(url, { prompt: 'Fail half way.', output_format: { stream: true } });
    const frames = await readAll(res);
    expect(chunksOf(frames).length).toBeGreaterThan(0);
    const last = named(frames).at(-1)!;
    expect(last.event).toBe('error');
    const error = ErrorBody.parse(last.data);
    expect(error).toMatchObject({ type: 'service_unavailable', status_code: 503 });
    expect(named(frames).some((frame) => frame.event === 'done')).toBe(false);
    const failed = (await outboxOf(bed.pool, jobIdOf(res)!)).at(-1)!.payload;
    expect(failed).toMatchObject({ status: 'failed', error: { type: 'service_unavailable', detail: error.detail } });
  });

  it('cancels the model call when the client disconnects, and fails the job saying why', async () => {
    bed.fake.reply(textReply(MARKDOWN, { faults: { hang: { afterEvents: 6 } } }));
    const url = await serve();
    const client = new AbortController();
    const res = await post(url, { prompt: 'I will hang up.', output_format: { stream: true } }, { signal: client.signal });
    const jobId = jobIdOf(res)!;
    const reading = (async () => {
      for await (const frame of sseFrames(res.body!)) if (frame.event === 'synthesis_chunk') client.abort();
    })().catch(() => undefined);
    await reading;
    // The upstream request to the model was cancelled, not left running.
    await waitFor(() => bed.fake.requests[0]?.cancelled === true, { what: 'the model call to be cancelled' });
    const failed = await waitFor(async () => (await outboxOf(bed.pool, jobId)).find((event) => event.payload.status === 'failed'), {
      what: 'the job to fail',
    });
    expect(failed.payload.error).toEqual({
      type: 'service_unavailable',
      detail: 'The analysis was cancelled because the client closed the stream before it finished. Send the request again to run it.',
    });
  });

  it('sends keep-alive comments while the model is slow to answer', async () => {
    bed.fake.reply(textReply('A short answer.', { faults: { latencyMs: 600 } }));
    const url = await serve({ ANALYSIS_STREAM_HEARTBEAT_MS: '100' });
    const frames = await readAll(await post(url, { prompt: 'Think hard.', output_format: { stream: true } }));
    const firstChunk = frames.findIndex((frame) => frame.event === 'synthesis_chunk');
    expect(firstChunk).toBeGreaterThan(0);
    expect(frames.slice(0, firstChunk).some((frame) => frame.comment === 'keep-alive')).toBe(true);
    expect(named(frames).at(-1)?.event).toBe('done');
  });

  it('sends done once the result is recorded, so the result URL serves it', async () => {
    bed.fake.reply(textReply('Recorded answer.'));
    const url = await serve({ ANALYSIS_STREAM_DONE_WAIT_MS: '30000' });
    const res = await post(url, { prompt: 'Wait for the record.', output_format: { stream: true } });
    const jobId = jobIdOf(res)!;
    const frames = await readAll(res);
    expect(chunksOf(frames).join('')).toBe('Recorded answer.');
    expect(named(frames).at(-1)).toEqual({ event: 'done', data: { job_id: jobId, status: 'completed' } });
    // The runner committed the result with its completion, before done was sent.
    const { rows } = await bed.pool.query<{ status: string; result: { content: string } | null }>(
      'SELECT status, result FROM jobs WHERE id = $1',
      [jobId],
    );
    expect(rows[0]).toMatchObject({ status: 'completed', result: { content: 'Recorded answer.' } });
  });

  it('replays an Idempotency-Key of a finished stream as its whole text and done, without running it again', async () => {
    bed.fake.reply(textReply(MARKDOWN));
    const url = await serve();
    const headers = { 'Idempotency-Key': `stream-${Date.now()}` };
    const body = { prompt: 'Only once.', output_format: { stream: true } };
    const first = await post(url, body, { headers });
    const jobId = jobIdOf(first)!;
    await readAll(first);
    await finishJob(bed.pool, jobId, { result: (await outboxOf(bed.pool, jobId)).at(-1)!.payload.result! });

    const again = await post(url, body, { headers });
    expect(jobIdOf(again)).toBe(jobId);
    const frames = await readAll(again);
    expect(chunksOf(frames).join('')).toBe(MARKDOWN);
    expect(named(frames).at(-1)).toEqual({ event: 'done', data: { job_id: jobId, status: 'completed' } });
    expect(bed.fake.requests).toHaveLength(1);
  });
});
