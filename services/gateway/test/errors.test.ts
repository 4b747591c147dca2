// Every way a request can fail at the gateway ends in the spec's body {detail, status_code, type} with the
// right status, and nothing internal in it.
import http from 'node:http';
import { ErrorBody } from '@fin/contracts';
import { GATEWAY_ONLY_DETAIL, NOT_JSON_DETAIL, badRequest } from '@fin/http';
import request from 'supertest';
import { KEYS, UUID, deadUrl, listen, startHarness, type Harness } from './support/harness';

function expectErrorBody(body: unknown, status: number, type: string): ErrorBody {
  const parsed = ErrorBody.parse(body);
  expect(parsed).toMatchObject({ status_code: status, type });
  return parsed;
}

describe('request errors', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      limits: { maxBodyBytes: 1024 },
      // The news service parses its body, as every service does (jsonBody in @fin/http): a malformed one is its 400.
      mount: {
        news: (app) =>
          app.post('/api/products/news', (req, _res, next) => {
            try {
              JSON.parse(Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '');
              next();
            } catch {
              next(badRequest(NOT_JSON_DETAIL));
            }
          }),
      },
    });
  });
  afterAll(async () => {
    await h.close();
  });

  it('refuses a body over the limit with 400 naming the body, declared or streamed, before it reaches the service', async () => {
    const before = h.services.news.received.length;
    const declared = await request(h.app)
      .post('/api/products/news')
      .set('X-API-Key', KEYS.all)
      .send({ data: 'x'.repeat(2000) })
      .expect(400);
    expect(declared.body).toEqual({
      detail: 'body: must be at most 1 KiB; send a shorter prompt, message or data.',
      status_code: 400,
      type: 'validation_error',
    });

    // Chunked, so the size is only known while reading.
    const gateway = await listen(h.app);
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.request(
          `${gateway.url}/api/products/news`,
          {
            method: 'POST',
            agent: false,
            headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.write(`{"data":"${'x'.repeat(800)}`);
        req.end(`${'x'.repeat(800)}"}`);
      });
      expect(status).toBe(400);
    } finally {
      await gateway.close();
    }
    expect(h.services.news.received.length).toBe(before);
  });

  it("forwards malformed JSON as it came, once, and relays the service's 400 validation_error", async () => {
    const before = h.services.news.received.length;
    const res = await request(h.app)
      .post('/api/products/news')
      .set('X-API-Key', KEYS.all)
      .set('Content-Type', 'application/json')
      .send('{"symbols": [')
      .expect(400);
    expect(res.body).toEqual({ detail: 'The request body is not valid JSON.', status_code: 400, type: 'validation_error' });
    // The gateway does not parse bodies: the service got the exact bytes (signed) and answered.
    expect(h.services.news.received.slice(before).map((received) => received.body)).toEqual(['{"symbols": [']);
  });

  it('refuses a body that is not JSON with 415', async () => {
    const res = await request(h.app)
      .post('/api/analysis')
      .set('X-API-Key', KEYS.all)
      .set('Content-Type', 'text/plain')
      .send('prompt=hello')
      .expect(415);
    expect(res.body).toEqual({
      detail: 'The request body must be JSON, sent with Content-Type: application/json.',
      status_code: 415,
      type: 'unsupported_media_type',
    });
  });

  it('answers an unknown route or method with 404 in the spec body', async () => {
    expect((await request(h.app).get('/api/nothing').expect(404)).body).toEqual({
      detail: 'No route for GET /api/nothing.',
      status_code: 404,
      type: 'not_found',
    });
    expect(ErrorBody.parse((await request(h.app).delete('/api/products/news').set('X-API-Key', KEYS.all).expect(404)).body).type).toBe(
      'not_found',
    );
  });

  it('turns an unexpected failure into a generic 500 that does not echo it', async () => {
    h.auth.failWith = new Error('password authentication failed for user "gateway" at 10.0.0.7');
    try {
      const res = await request(h.app).post('/api/products/news').set('X-API-Key', KEYS.all).send({}).expect(500);
      expect(res.body).toEqual({ detail: 'An internal error occurred.', status_code: 500, type: 'internal_error' });
      expect(res.text).not.toContain('10.0.0.7');
    } finally {
      h.auth.failWith = undefined;
    }
  });
});

describe('service failures', () => {
  it('answers 503 naming the service when it is down', async () => {
    const h = await startHarness({ urls: { news: deadUrl(), jobs: deadUrl() } });
    try {
      const news = await request(h.app)
        .post('/api/products/news')
        .set('X-API-Key', KEYS.all)
        .send({ symbols: ['AAPL'] })
        .expect(503);
      expect(news.body).toEqual({ detail: 'The news service is unavailable.', status_code: 503, type: 'service_unavailable' });
      const jobs = await request(h.app).get(`/api/jobs/news/${UUID}/status`).set('X-API-Key', KEYS.all).expect(503);
      expect(ErrorBody.parse(jobs.body).detail).toBe('The job-status service is unavailable.');
    } finally {
      await h.close();
    }
  });

  it('answers 504 when the service does not answer in time, and closes the request to it', async () => {
    let upstreamClosed: (() => void) | undefined;
    const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
    const h = await startHarness({
      limits: { responseTimeoutMs: 100 },
      mount: {
        'stock-report': (app) => app.post('/api/products/stock-report', (_req, res) => void res.on('close', () => upstreamClosed?.())),
      },
    });
    try {
      const res = await request(h.app)
        .post('/api/products/stock-report')
        .set('X-API-Key', KEYS.all)
        .send({ symbols: ['AAPL'] })
        .expect(504);
      expectErrorBody(res.body, 504, 'gateway_timeout');
      expect(ErrorBody.parse(res.body).detail).toBe('The stock-report service did not answer within 0.1 s.');
      await closed;
    } finally {
      await h.close();
    }
  });

  it('answers 502 when the service drops the connection without answering', async () => {
    const h = await startHarness({ mount: { analysis: (app) => app.post('/api/analysis', (req) => void req.socket.destroy()) } });
    try {
      const res = await request(h.app).post('/api/analysis').set('X-API-Key', KEYS.all).send({ prompt: 'x' }).expect(502);
      expect(res.body).toEqual({ detail: 'The analysis service failed to answer.', status_code: 502, type: 'bad_gateway' });
    } finally {
      await h.close();
    }
  });

  it('a service reached directly, not through the gateway, refuses the request with 401', async () => {
    const h = await startHarness();
    try {
      for (const [service, path] of [
        ['news', '/api/products/news'],
        ['chat', '/api/chat'],
        ['portal', '/api/customer-tools/'],
      ] as const) {
        const res = await fetch(`${h.services[service].url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': KEYS.all, 'x-fin-tenant-id': '6f1c2b8e-0d3a-4e5f-9a7b-1c2d3e4f5a6b' },
          body: '{}',
        });
        expect(res.status).toBe(401);
        expect(await res.json()).toEqual({ detail: GATEWAY_ONLY_DETAIL, status_code: 401, type: 'unauthorized' });
      }
      expect(h.services.news.received).toEqual([]);
    } finally {
      await h.close();
    }
  });
});
