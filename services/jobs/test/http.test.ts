import { randomUUID } from 'node:crypto';
import { ErrorBody, JobResultResponse, JobResultResponseByType, JobStatusResponse } from '@fin/contracts';
import { type Pool, createPool } from '@fin/db';
import { GATEWAY_ONLY_DETAIL, identityKey, signIdentity } from '@fin/http';
import { type CountingPool, type TestDatabase, countingPool, createTestDatabase } from '@fin/testing';
import request from 'supertest';
import { NEWS_RESULT, SECRET, createTenant, insertJob, jobsApi, signedGet, type JobsApi } from './support';

const NOT_FOUND = { detail: 'Job not found.', status_code: 404, type: 'not_found' };

describe('job status and result endpoints', () => {
  let db: TestDatabase;
  let pool: Pool;
  let api: JobsApi;
  let tenantId: string;
  let otherTenantId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'jobs-http-test' });
    tenantId = await createTenant(pool);
    otherTenantId = await createTenant(pool);
    api = await jobsApi(db.url, pool);
  });
  afterAll(async () => {
    await api.close();
    await pool.end();
    await db.drop();
  });

  const get = (path: string, tenant = tenantId) => request(api.app).get(path).set(signedGet(path, tenant));
  const statusPath = (type: string, id: string) => `/api/jobs/${type}/${id}/status`;
  const resultPath = (type: string, id: string) => `/api/jobs/${type}/${id}/result`;

  describe('status', () => {
    it('reports a pending job with a readable step even before a worker said anything', async () => {
      const id = await insertJob(pool, { tenantId });
      const res = await get(statusPath('news', id)).expect(200);
      expect(JobStatusResponse.parse(res.body)).toEqual({
        job_id: id,
        status: 'pending',
        progress: 0,
        currently_working_on: 'Waiting for a worker',
        queue_position: expect.any(Number),
      });
      expect(res.headers['cache-control']).toBe('no-store');
    });

    it('says how many jobs are ahead of a pending job, in the fair order between accounts, and only while pending', async () => {
      await pool.query(
        `UPDATE jobs SET status = 'failed', error = '{"type": "internal_error", "detail": "x"}', result = NULL
          WHERE type = 'stock-report' AND status IN ('pending', 'running')`,
      );
      const mine: string[] = [];
      for (let i = 0; i < 3; i++) mine.push(await insertJob(pool, { tenantId, type: 'stock-report' }));
      const theirs = await insertJob(pool, { tenantId: otherTenantId, type: 'stock-report' });
      const position = async (id: string, tenant = tenantId) =>
        JobStatusResponse.parse((await get(statusPath('stock-report', id), tenant).expect(200)).body);
      // Nothing running: the accounts take turns, the older job first. mine[0], theirs, mine[1], mine[2].
      expect(await position(mine[0]!)).toMatchObject({ status: 'pending', queue_position: 0 });
      expect(await position(theirs, otherTenantId)).toMatchObject({ queue_position: 1 });
      expect(await position(mine[1]!)).toMatchObject({ queue_position: 2 });
      expect(await position(mine[2]!)).toMatchObject({ queue_position: 3 });
      // Once mine[0] runs, my account has more work running: their job is next, then mine.
      await pool.query(
        "UPDATE jobs SET status = 'running', lease_owner = 'w', lease_expires_at = now() + interval '1 minute' WHERE id = $1",
        [mine[0]],
      );
      expect(await position(theirs, otherTenantId)).toMatchObject({ queue_position: 0 });
      expect(await position(mine[1]!)).toMatchObject({ queue_position: 1 });
      const running = await position(mine[0]!);
      expect(running).toMatchObject({ status: 'running' });
      expect(running).not.toHaveProperty('queue_position');
    });

    it('reports a running job with its progress and step', async () => {
      const id = await insertJob(pool, {
        tenantId,
        type: 'stock-report',
        status: 'running',
        progress: 45,
        currentlyWorkingOn: 'Looking up market data',
      });
      const res = await get(statusPath('stock-report', id)).expect(200);
      expect(JobStatusResponse.parse(res.body)).toEqual({
        job_id: id,
        status: 'running',
        progress: 45,
        currently_working_on: 'Looking up market data',
      });
    });

    it('reports a completed job without its result, naming where the result is', async () => {
      const id = await insertJob(pool, { tenantId, status: 'completed', progress: 100, result: NEWS_RESULT });
      const res = await get(statusPath('news', id)).expect(200);
      expect(JobStatusResponse.parse(res.body)).toEqual({
        job_id: id,
        status: 'completed',
        progress: 100,
        currently_working_on: 'Completed',
        result_url: `/api/jobs/news/${id}/result`,
      });
      // The URL it names answers the result.
      await get(`/api/jobs/news/${id}/result`).expect(200);
    });

    it('reports a failed job with its reason', async () => {
      const error = { type: 'internal_error', detail: 'The job did not finish: its worker stopped responding on all 3 attempts.' };
      const id = await insertJob(pool, { tenantId, type: 'analysis', status: 'failed', progress: 30, error });
      const res = await get(statusPath('analysis', id)).expect(200);
      expect(JobStatusResponse.parse(res.body)).toEqual({
        job_id: id,
        status: 'failed',
        progress: 30,
        currently_working_on: 'Failed',
        error,
      });
    });

    it('answers an upper-case job id with the canonical id', async () => {
      const id = await insertJob(pool, { tenantId });
      const res = await get(statusPath('news', id.toUpperCase())).expect(200);
      expect(JobStatusResponse.parse(res.body).job_id).toBe(id);
    });
  });

  describe('result', () => {
    it('returns the result of a completed job', async () => {
      const id = await insertJob(pool, { tenantId, status: 'completed', progress: 100, result: NEWS_RESULT });
      const res = await get(resultPath('news', id)).expect(200);
      expect(JobResultResponse.parse(res.body)).toEqual({ job_id: id, status: 'completed', result: NEWS_RESULT });
      expect(JobResultResponseByType.news.parse(res.body).result.news).toHaveLength(1);
    });

    it('answers a result stored before citations existed with empty citations', async () => {
      const legacy = { news: NEWS_RESULT.news.map(({ citations: _citations, ...item }) => item) };
      const id = await insertJob(pool, { tenantId, status: 'completed', progress: 100, result: legacy });
      const res = await get(resultPath('news', id)).expect(200);
      expect(res.body).toEqual({ job_id: id, status: 'completed', result: { news: [{ ...legacy.news[0], citations: [] }] } });
    });

    it('tells the client to keep polling a running job: 409 with Retry-After', async () => {
      const id = await insertJob(pool, { tenantId, status: 'running', progress: 45, currentlyWorkingOn: 'Looking up market data' });
      const res = await get(resultPath('news', id)).expect(409);
      const body = ErrorBody.parse(res.body);
      expect(body).toEqual({
        type: 'conflict',
        status_code: 409,
        detail: `The job is still running (45%): Looking up market data. Poll the status URL (/api/jobs/news/${id}/status) until it reports completed, then read the result.`,
      });
      expect(res.headers['retry-after']).toBe('2');
    });

    it('tells the client to keep polling a pending job', async () => {
      const id = await insertJob(pool, { tenantId });
      const res = await get(resultPath('news', id)).expect(409);
      expect(ErrorBody.parse(res.body).detail).toBe(
        `The job has not started yet (0%): Waiting for a worker. Poll the status URL (/api/jobs/news/${id}/status) until it reports completed, then read the result.`,
      );
      expect(res.headers['retry-after']).toBe('2');
    });

    it('says why a failed job will never have a result, without Retry-After', async () => {
      const id = await insertJob(pool, {
        tenantId,
        status: 'failed',
        progress: 30,
        error: { type: 'gateway_timeout', detail: 'The news model did not answer within 30 s.' },
      });
      const res = await get(resultPath('news', id)).expect(409);
      expect(ErrorBody.parse(res.body)).toEqual({
        type: 'conflict',
        status_code: 409,
        detail:
          'The job failed and will not complete. Reason: The news model did not answer within 30 s. Submit the request again to retry.',
      });
      expect(res.headers['retry-after']).toBeUndefined();
    });
  });

  describe('not found', () => {
    it.each(['status', 'result'])('answers the same 404 for an unknown id, another job type and another tenant (%s)', async (leaf) => {
      const id = await insertJob(pool, { tenantId, status: 'completed', progress: 100, result: NEWS_RESULT });
      const path = (type: string, jobId: string) => `/api/jobs/${type}/${jobId}/${leaf}`;

      // The owner sees it under its own type.
      await get(path('news', id)).expect(200);

      const unknown = await get(path('news', randomUUID())).expect(404);
      const wrongType = await get(path('stock-report', id)).expect(404);
      const otherTenant = await get(path('news', id), otherTenantId).expect(404);
      for (const res of [unknown, wrongType, otherTenant]) expect(ErrorBody.parse(res.body)).toEqual(NOT_FOUND);
      expect(new Set([unknown.text, wrongType.text, otherTenant.text]).size).toBe(1);
    });
  });

  describe('validation', () => {
    it('refuses a job type outside news, stock-report and analysis', async () => {
      const res = await get(statusPath('chat', randomUUID())).expect(400);
      const body = ErrorBody.parse(res.body);
      expect(body.type).toBe('validation_error');
      expect(body.detail).toBe('job_type: must be one of news, stock-report, analysis, got "chat"');
    });

    it('refuses a malformed job id', async () => {
      const res = await get(resultPath('news', 'not-a-uuid')).expect(400);
      const body = ErrorBody.parse(res.body);
      expect(body.type).toBe('validation_error');
      expect(body.detail).toMatch(/^job_id: must be a UUID/);
    });
  });

  describe('security', () => {
    it('refuses requests the gateway did not sign', async () => {
      const id = await insertJob(pool, { tenantId });
      const path = statusPath('news', id);
      const unsigned = await request(api.app).get(path).expect(401);
      const wrongSecret = await request(api.app)
        .get(path)
        .set(signedGet(path, tenantId, 'another-secret-0123456789abcdef01234'))
        .expect(401);
      // A signature for another path cannot be replayed here.
      const otherPath = await request(api.app)
        .get(path)
        .set(signedGet(statusPath('news', randomUUID()), tenantId))
        .expect(401);
      // Refused before validation: an unsigned caller learns nothing about the path either.
      const invalidPath = await request(api.app).get(statusPath('chat', 'x')).expect(401);
      for (const res of [unsigned, wrongSecret, otherPath, invalidPath]) {
        expect(ErrorBody.parse(res.body)).toEqual({ detail: GATEWAY_ONLY_DETAIL, status_code: 401, type: 'unauthorized' });
      }
    });

    it('refuses a signed request without a caller', async () => {
      const path = statusPath('news', randomUUID());
      const anonymous = signIdentity({ requestId: 'req-anonymous', caller: null }, identityKey(SECRET, 'jobs'), { method: 'GET', path });
      const res = await request(api.app).get(path).set(anonymous).expect(401);
      expect(ErrorBody.parse(res.body).type).toBe('unauthorized');
    });
  });

  it('is ready while the database answers', async () => {
    await request(api.app).get('/readyz').expect(200, { status: 'ready' });
    await request(api.app).get('/healthz').expect(200);
  });

  describe('a finished job’s status, from memory', () => {
    /** The endpoints over a pool that counts the statements sent through it. */
    let counting: CountingPool<Pool>;
    let counted: JobsApi;

    beforeAll(async () => {
      counting = countingPool(pool);
      counted = await jobsApi(db.url, counting.pool);
    });
    afterAll(() => counted.close());

    /** A status poll of `tenant` and the statements it sent. */
    async function poll(id: string, tenant = tenantId, type = 'news') {
      const before = counting.queries;
      const path = statusPath(type, id);
      const res = await request(counted.app).get(path).set(signedGet(path, tenant));
      return { res, reads: counting.queries - before };
    }

    it('answers a completed or failed job’s status without a read after the first, the same answer', async () => {
      const completed = await insertJob(pool, { tenantId, status: 'completed', progress: 100, result: NEWS_RESULT });
      const failed = await insertJob(pool, { tenantId, status: 'failed', error: { type: 'internal_error', detail: 'Broke.' } });
      for (const id of [completed, failed]) {
        const first = await poll(id);
        expect(first.reads).toBe(1);
        const again = await poll(id);
        expect(again.reads).toBe(0);
        expect(again.res.status).toBe(200);
        expect(again.res.body).toEqual(first.res.body);
        expect(again.res.headers['cache-control']).toBe('no-store');
      }
    });

    it('reads an unfinished job’s status every time, so its progress shows', async () => {
      const id = await insertJob(pool, { tenantId, status: 'running', progress: 40, leaseOwner: 'w', leaseSeconds: 60 });
      expect((await poll(id)).res.body).toMatchObject({ status: 'running', progress: 40 });
      await pool.query("UPDATE jobs SET progress = 60, currently_working_on = 'Writing' WHERE id = $1", [id]);
      const next = await poll(id);
      expect(next.reads).toBeGreaterThan(0);
      expect(next.res.body).toMatchObject({ status: 'running', progress: 60, currently_working_on: 'Writing' });
    });

    it('never answers another tenant, or another job type, from the memory of a finished job', async () => {
      const id = await insertJob(pool, { tenantId, status: 'completed', progress: 100, result: NEWS_RESULT });
      expect((await poll(id)).res.status).toBe(200);
      const other = await poll(id, otherTenantId);
      expect(other.reads).toBe(1);
      expect(other.res.status).toBe(404);
      expect(other.res.body).toEqual(NOT_FOUND);
      const otherType = await poll(id, tenantId, 'stock-report');
      expect(otherType.reads).toBe(1);
      expect(otherType.res.status).toBe(404);
    });
  });
});
