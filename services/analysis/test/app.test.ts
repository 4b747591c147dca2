import { randomUUID } from 'node:crypto';
import { AnalysisResponse, ErrorBody } from '@fin/contracts';
import { waitFor } from '@fin/testing';
import request from 'supertest';
import { createHandlerApp } from '@fin/http';
import { createAnalysisHandlers } from '../src/app';
import { createJobWatcher } from '@fin/job-store';
import { createOpenRequests, lifecycleStopping } from '../src/open-requests';
import { analysisApi, createTestBed, finishJob, logger, outboxOf, PATH, SECRET, signed, type AnalysisApi, type TestBed } from './support';

const RESULT = { format: 'markdown', content: '## Answer\n\nRates matter.', citations: [] };

/** The settings of these tests' API role; a test may change some. */
const SETTINGS = {
  ANALYSIS_INLINE_WAIT_MS: '0',
  ANALYSIS_TIME_LIMIT_MS: '10000',
  ANALYSIS_LEASE_MS: '5000',
  ANALYSIS_MAX_ATTEMPTS: '3',
  ANALYSIS_STREAM_HEARTBEAT_MS: '15000',
  ANALYSIS_STREAM_DONE_WAIT_MS: '0',
  // A poll far slower than any test: a request that finishes waiting was woken by the job_finished notification.
  ANALYSIS_JOB_POLL_MS: '60000',
};

describe('POST /api/analysis, not streamed (API role)', () => {
  let bed: TestBed;
  const made: AnalysisApi[] = [];

  beforeAll(async () => {
    bed = await createTestBed();
  });
  afterEach(async () => {
    for (const api of made.splice(0)) await api.close();
  });
  afterAll(() => bed.close());

  /** The API role as the service's definition makes it, with SETTINGS and `env`. */
  async function appWith(env: Record<string, string> = {}) {
    const api = await analysisApi(bed, { ...SETTINGS, ...env });
    made.push(api);
    return api;
  }

  function post(app: AnalysisApi['app'], body: unknown, tenantId = bed.tenantA, headers: Record<string, string> = {}) {
    return request(app)
      .post(PATH)
      .set(signed(tenantId, body))
      .set(headers)
      .send(body as object);
  }

  /** The id of the job the next POST of `prompt` creates, once it is in the database. */
  async function jobOf(prompt: string): Promise<string> {
    return waitFor(
      async () => {
        const { rows } = await bed.pool.query<{ id: string }>("SELECT id FROM jobs WHERE request->>'prompt' = $1", [prompt]);
        return rows[0]?.id;
      },
      { what: `the job of "${prompt}"` },
    );
  }

  it('leaves a callback_url on the job (not in its request), and refuses one until the account has a callback secret', async () => {
    const { app } = await appWith();
    const refused = await post(app, { prompt: 'Callback please?', callback_url: 'https://hooks.example.com/cb' }).expect(400);
    expect(ErrorBody.parse(refused.body).detail).toContain('callback_url: this account has no callback secret yet');
    await post(app, { prompt: 'Callback please?', callback_url: 'https://169.254.169.254/cb' }).expect(400);
    await bed.pool.query("INSERT INTO webhook_callback_secrets (tenant_id, secret_ciphertext) VALUES ($1, '\\x00')", [bed.tenantA]);
    const body = AnalysisResponse.parse(
      (await post(app, { prompt: 'Callback please?', callback_url: 'https://hooks.example.com/cb' }).expect(202)).body,
    );
    const { rows } = await bed.pool.query<{ url: string; request: Record<string, unknown> }>(
      'SELECT c.url, j.request FROM webhook_callbacks c JOIN jobs j ON j.id = c.job_id WHERE c.job_id = $1',
      [body.job_id],
    );
    expect(rows).toEqual([
      { url: 'https://hooks.example.com/cb', request: expect.not.objectContaining({ callback_url: expect.anything() }) },
    ]);
  });

  it('queues the job and answers 202 with the job URLs when it is not done in time', async () => {
    const { app } = await appWith();
    const res = await post(app, { prompt: '  Rate exposure of AAPL?  ', symbols: ['aapl'] }).expect(202);
    const body = AnalysisResponse.parse(res.body);
    expect(body).toMatchObject({
      status: 'pending',
      status_url: `/api/jobs/analysis/${body.job_id}/status`,
      result_url: `/api/jobs/analysis/${body.job_id}/result`,
    });
    expect(res.headers.location).toBe(body.status_url);
    const { rows } = await bed.pool.query('SELECT type, status, request, max_attempts FROM jobs WHERE id = $1', [body.job_id]);
    expect(rows[0]).toEqual({
      type: 'analysis',
      status: 'pending',
      max_attempts: 3,
      request: { prompt: 'Rate exposure of AAPL?', symbols: ['AAPL'], output_format: { type: 'markdown', stream: false } },
    });
    // The workers are asked for it; results of this product are never cached.
    const events = await outboxOf(bed.pool, body.job_id);
    expect(events.map((event) => event.topic)).toEqual(['jobs.analysis.requested']);
    expect(
      (await bed.pool.query<{ cache_key: string | null }>('SELECT cache_key FROM jobs WHERE id = $1', [body.job_id])).rows[0]?.cache_key,
    ).toBeNull();
  });

  it('answers 200 with the result inline when the job completes while the request waits', async () => {
    const { app } = await appWith({ ANALYSIS_INLINE_WAIT_MS: '30000' });
    const answer = post(app, { prompt: 'Quick one', output_format: { type: 'markdown' } });
    const done = answer.then((res) => res);
    const jobId = await jobOf('Quick one');
    await finishJob(bed.pool, jobId, { result: RESULT });
    const res = await done;
    expect(res.status).toBe(200);
    expect(AnalysisResponse.parse(res.body)).toEqual({
      job_id: jobId,
      status: 'completed',
      result: RESULT,
      status_url: `/api/jobs/analysis/${jobId}/status`,
      result_url: `/api/jobs/analysis/${jobId}/result`,
    });
  });

  it("answers with the job's own error when it fails while the request waits", async () => {
    const { app } = await appWith({ ANALYSIS_INLINE_WAIT_MS: '30000' });
    const done = post(app, { prompt: 'Declined one' }).then((res) => res);
    const jobId = await jobOf('Declined one');
    await finishJob(bed.pool, jobId, { error: { type: 'validation_error', detail: 'The AI model declined this request.' } });
    const res = await done;
    expect(res.status).toBe(400);
    expect(ErrorBody.parse(res.body)).toEqual({
      detail: 'The AI model declined this request.',
      status_code: 400,
      type: 'validation_error',
    });
    expect(res.headers.location).toBe(`/api/jobs/analysis/${jobId}/status`);
  });

  it('stops waiting and answers 202 when the service begins to shut down', async () => {
    // Made from the handlers rather than the definition: the test begins the shutdown once the request is held open
    // (openRequests), which the unit keeps to itself; begun before, the request would not wait at all.
    const openRequests = createOpenRequests({ streamGraceMs: 0 });
    const lifecycle = lifecycleStopping(openRequests);
    const watcher = createJobWatcher({ pool: bed.pool, logger, pollIntervalMs: 600_000 });
    const handlers = createAnalysisHandlers({
      pool: bed.pool,
      logger,
      engine: bed.engine,
      watcher,
      openRequests,
      lifecycle,
      settings: { inlineWaitMs: 60_000, timeLimitMs: 10_000, leaseMs: 5_000, maxAttempts: 3, heartbeatMs: 15_000, doneWaitMs: 0 },
    });
    const app = createHandlerApp(
      { name: 'analysis', handlers, readiness: async () => {}, lifecycle, start: async () => {}, closers: [] },
      { logger, signingSecret: SECRET },
    );
    try {
      const done = post(app, { prompt: 'Interrupted wait' }).then((res) => res);
      await jobOf('Interrupted wait');
      await waitFor(() => openRequests.size === 1, { what: 'the request to wait' });
      lifecycle.beginShutdown();
      const res = await done;
      expect(res.status).toBe(202);
      expect(AnalysisResponse.parse(res.body).status).toBe('pending');
    } finally {
      await watcher.close();
    }
  });

  it('honours Idempotency-Key: the same job for the same body (with its result once done), 422 for another body', async () => {
    const { app } = await appWith();
    const key = `analysis-${randomUUID()}`;
    const first = await post(app, { prompt: 'Idempotent' }, bed.tenantA, { 'Idempotency-Key': key }).expect(202);
    const again = await post(app, { prompt: 'Idempotent' }, bed.tenantA, { 'Idempotency-Key': key }).expect(202);
    const firstJobId = AnalysisResponse.parse(first.body).job_id;
    expect(AnalysisResponse.parse(again.body).job_id).toBe(firstJobId);
    await finishJob(bed.pool, firstJobId, { result: RESULT });
    const replayed = await post(app, { prompt: 'Idempotent' }, bed.tenantA, { 'Idempotency-Key': key }).expect(200);
    expect(AnalysisResponse.parse(replayed.body)).toMatchObject({ job_id: firstJobId, status: 'completed', result: RESULT });
    const other = await post(app, { prompt: 'Something else' }, bed.tenantA, { 'Idempotency-Key': key }).expect(422);
    expect(ErrorBody.parse(other.body).type).toBe('unprocessable_entity');
    // Another tenant's identical key is its own.
    const theirs = await post(app, { prompt: 'Idempotent' }, bed.tenantB, { 'Idempotency-Key': key }).expect(202);
    expect(AnalysisResponse.parse(theirs.body).job_id).not.toBe(firstJobId);
    await post(app, { prompt: 'Idempotent' }, bed.tenantA, { 'Idempotency-Key': 'not a valid key' }).expect(400);
  });

  it.each([
    ['no prompt', {}, 'prompt: is required'],
    ['an empty prompt', { prompt: '' }, 'prompt: must not be empty'],
    ['a whitespace prompt', { prompt: ' \n\t ' }, 'prompt: must not be empty'],
    ['a prompt over 8,000 characters', { prompt: 'x'.repeat(8001) }, 'prompt: must be at most 8000 characters'],
    ['a prompt that is not a string', { prompt: 42 }, 'prompt: must be a string'],
    [
      'an unknown output format',
      { prompt: 'p', output_format: { type: 'xml' } },
      'output_format.type: must be one of json_schema, json, markdown, got "xml"',
    ],
    [
      'json_schema without a schema',
      { prompt: 'p', output_format: { type: 'json_schema' } },
      'output_format.schema: is required when type is json_schema',
    ],
    [
      'an unknown type name in the schema',
      { prompt: 'p', output_format: { type: 'json_schema', schema: { risk: 'float' } } },
      'output_format.schema.risk: must be one of string, number, integer, boolean, array, object, got "float"',
    ],
    [
      'an empty schema',
      { prompt: 'p', output_format: { type: 'json_schema', schema: {} } },
      'output_format.schema: must define 1 to 50 fields, got 0',
    ],
    [
      'a schema with type json',
      { prompt: 'p', output_format: { type: 'json', schema: { a: 'string' } } },
      'output_format.schema: is only allowed when type is json_schema',
    ],
    [
      'a stream flag that is not a boolean',
      { prompt: 'p', output_format: { stream: 'yes' } },
      'output_format.stream: must be true or false',
    ],
    [
      'a negative percentage',
      {
        prompt: 'p',
        portfolio_composition: [
          { symbol: 'AAPL', percentage: -5 },
          { symbol: 'MSFT', percentage: 105 },
        ],
      },
      'portfolio_composition[0].percentage: must not be negative',
    ],
    [
      'a percentage over 100',
      { prompt: 'p', portfolio_composition: [{ symbol: 'AAPL', percentage: 101 }] },
      'portfolio_composition[0].percentage: must not be over 100',
    ],
    [
      'percentages far from 100 in total',
      {
        prompt: 'p',
        portfolio_composition: [
          { symbol: 'AAPL', percentage: 50 },
          { symbol: 'MSFT', percentage: 20 },
        ],
      },
      'portfolio_composition: percentages must add up to 100 (±1), got 70',
    ],
    ['data over 64 KiB', { prompt: 'p', data: { blob: 'x'.repeat(70 * 1024) } }, 'data: must be at most 65536 bytes'],
    [
      '11 symbols',
      { prompt: 'p', symbols: Array.from({ length: 11 }, (_, i) => `S${i}`) },
      'symbols: expected at most 10 distinct symbols, got 11',
    ],
    ['an unknown field', { prompt: 'p', format: 'markdown' }, 'unknown field "format"'],
  ])('rejects %s with a 400 validation_error naming the field', async (_label, body, detail) => {
    const { app } = await appWith();
    const res = await post(app, body).expect(400);
    const error = ErrorBody.parse(res.body);
    expect(error.type).toBe('validation_error');
    expect(error.detail).toContain(detail);
  });

  it('rejects the same mistakes in a streamed request before anything is streamed', async () => {
    const { app } = await appWith();
    const res = await post(app, { prompt: ' ', output_format: { stream: true } }).expect(400);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(ErrorBody.parse(res.body).detail).toContain('prompt');
  });

  it('refuses a body over the size limit with 400 naming the body, and a request that did not come through the gateway with 401', async () => {
    const { app } = await appWith();
    const big = await post(app, { prompt: 'p', data: { blob: 'x'.repeat(300 * 1024) } }).expect(400);
    expect(ErrorBody.parse(big.body)).toMatchObject({
      type: 'validation_error',
      detail: expect.stringMatching(/^body: must be at most 256 KiB/),
    });
    const direct = await request(app).post(PATH).send({ prompt: 'p' }).expect(401);
    expect(ErrorBody.parse(direct.body).type).toBe('unauthorized');
  });
});
