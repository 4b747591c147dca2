import { createPool, type Pool } from '@fin/db';
import { createLogger } from '@fin/log';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import request from 'supertest';
import { createApp } from '../src/app';

describe('gateway skeleton', () => {
  let db: TestDatabase;
  let pool: Pool;
  const logger = createLogger({ service: 'gateway-test', level: 'silent' });

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'gateway-test', max: 2 });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('is alive and ready when the database answers', async () => {
    const app = createApp({ pool, logger });
    await request(app).get('/healthz').expect(200, { status: 'ok' });
    await request(app).get('/readyz').expect(200, { status: 'ready' });
  });

  it('is not ready when the database is unreachable', async () => {
    const dead = createPool({ connectionString: 'postgresql://postgres@127.0.0.1:1/none', applicationName: 't', max: 1 });
    try {
      const res = await request(createApp({ pool: dead, logger })).get('/readyz').expect(503);
      expect(res.body).toEqual({ detail: 'The database is unreachable.', status_code: 503, type: 'service_unavailable' });
    } finally {
      await dead.end();
    }
  });

  it('answers unknown routes with the spec error body and a request id', async () => {
    const res = await request(createApp({ pool, logger })).get('/api/nothing').expect(404);
    expect(res.body).toEqual({ detail: 'No route for GET /api/nothing.', status_code: 404, type: 'not_found' });
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('rejects malformed JSON with a 400 validation_error', async () => {
    const res = await request(createApp({ pool, logger }))
      .post('/api/products/news')
      .set('Content-Type', 'application/json')
      .send('{"symbols": [')
      .expect(400);
    expect(res.body).toEqual({ detail: 'The request body is not valid JSON.', status_code: 400, type: 'validation_error' });
  });
});
