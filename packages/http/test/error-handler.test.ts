import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { ErrorBody } from '@fin/contracts';
import express from 'express';
import request from 'supertest';
import { AppError, errorHandler, jsonBody, notFoundHandler, requestContext, tooManyRequests } from '../src';
import { captureLogger, listen } from './helpers';

function appWith(logger: ReturnType<typeof captureLogger>['logger'], mount: (app: express.Express) => void) {
  const app = express();
  app.use(requestContext({ logger }));
  app.use(jsonBody({ limit: 1024 }));
  mount(app);
  app.use(notFoundHandler());
  app.use(errorHandler({ logger }));
  return app;
}

describe('errorHandler', () => {
  it('sends an AppError as its body with its headers, and logs a 4xx at warn', async () => {
    const { logger, lines } = captureLogger();
    const app = appWith(logger, (a) =>
      a.get('/limited', () => {
        throw tooManyRequests('Rate limit exceeded for news: 100 requests per minute.', 12, { 'X-RateLimit-Limit': '100' });
      }),
    );
    const res = await request(app).get('/limited').expect(429);
    expect(res.body).toEqual({
      detail: 'Rate limit exceeded for news: 100 requests per minute.',
      status_code: 429,
      type: 'rate_limit_exceeded',
    });
    expect(ErrorBody.parse(res.body)).toEqual(res.body);
    expect(res.headers['retry-after']).toBe('12');
    expect(res.headers['x-ratelimit-limit']).toBe('100');
    const logged = lines.find((line) => line.msg === 'request rejected');
    expect(logged).toMatchObject({ level: 'warn', status: 429, type: 'rate_limit_exceeded', requestId: res.headers['x-request-id'] });
  });

  it('turns an unknown error into a generic 500 that never echoes it, and logs it in full at error', async () => {
    const { logger, lines } = captureLogger();
    const app = appWith(logger, (a) =>
      a.get('/boom', async () => {
        await Promise.resolve();
        throw new Error('connect ECONNREFUSED 10.0.0.5:5432 password=hunter2');
      }),
    );
    const res = await request(app).get('/boom').expect(500);
    expect(res.body).toEqual({ detail: 'An internal error occurred.', status_code: 500, type: 'internal_error' });
    expect(JSON.stringify(res.body)).not.toContain('10.0.0.5');
    const logged = lines.find((line) => line.msg === 'request failed');
    expect(logged).toMatchObject({ level: 'error', status: 500, requestId: res.headers['x-request-id'] });
    expect(JSON.stringify(logged)).toContain('10.0.0.5:5432');
    expect((logged?.err as { stack?: string }).stack).toContain('error-handler.test.ts');
  });

  it('answers malformed JSON with 400 validation_error', async () => {
    const { logger } = captureLogger();
    const app = appWith(logger, (a) => a.post('/echo', (req, res) => void res.json(req.body)));
    const res = await request(app).post('/echo').set('Content-Type', 'application/json').send('{"symbols": [').expect(400);
    expect(res.body).toEqual({ detail: 'The request body is not valid JSON.', status_code: 400, type: 'validation_error' });
  });

  it('answers an oversized body with 400 validation_error naming the body and the limit', async () => {
    const { logger } = captureLogger();
    const app = appWith(logger, (a) => a.post('/echo', (req, res) => void res.json(req.body)));
    const res = await request(app)
      .post('/echo')
      .send({ data: 'x'.repeat(2000) })
      .expect(400);
    expect(res.body).toEqual({
      detail: 'body: must be at most 1 KiB; send a shorter prompt, message or data.',
      status_code: 400,
      type: 'validation_error',
    });
  });

  it('answers a non-JSON body with 415 unsupported_media_type, and an unknown encoding too', async () => {
    const { logger } = captureLogger();
    const app = appWith(logger, (a) => a.post('/echo', (req, res) => void res.json(req.body)));
    const text = await request(app).post('/echo').set('Content-Type', 'text/plain').send('symbols=AAPL').expect(415);
    expect(text.body).toEqual({
      detail: 'The request body must be JSON, sent with Content-Type: application/json.',
      status_code: 415,
      type: 'unsupported_media_type',
    });
    const encoded = await request(app)
      .post('/echo')
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'x-unknown')
      .send('{}')
      .expect(415);
    expect(ErrorBody.parse(encoded.body).type).toBe('unsupported_media_type');
  });

  it('answers a body that does not decompress as its Content-Encoding says with 400, not 500', async () => {
    const { logger } = captureLogger();
    const app = appWith(logger, (a) => a.post('/echo', (req, res) => void res.json(req.body)));
    const body = Buffer.from('{"symbols":["AAPL"]}');
    for (const encoding of ['gzip', 'deflate', 'br', 'zstd']) {
      const res = await request(app).post('/echo').set('Content-Type', 'application/json').set('Content-Encoding', encoding).send(body);
      expect({ encoding, status: res.status, body: res.body as unknown }).toEqual({
        encoding,
        status: 400,
        body: { detail: 'The request body could not be decoded as its Content-Encoding says.', status_code: 400, type: 'validation_error' },
      });
    }
    const truncated = gzipSync(body).subarray(0, 12);
    const cut = await request(app).post('/echo').set('Content-Type', 'application/json').set('Content-Encoding', 'gzip').send(truncated);
    expect(cut.status).toBe(400);
    expect(ErrorBody.parse(cut.body).type).toBe('validation_error');
  });

  it('answers a path parameter that is not valid percent-encoding with 400, not 500', async () => {
    const { logger } = captureLogger();
    const app = appWith(logger, (a) => a.get('/tools/:id', (req, res) => void res.json({ id: req.params.id })));
    for (const segment of ['%ff', '%zz', '%', '%E0%A4%A']) {
      const res = await request(app).get(`/tools/${segment}`);
      expect({ segment, status: res.status, body: res.body as unknown }).toEqual({
        segment,
        status: 400,
        body: {
          detail: 'The request path is not valid: a path segment is not valid percent-encoding.',
          status_code: 400,
          type: 'validation_error',
        },
      });
    }
    await request(app).get('/tools/%41').expect(200, { id: 'A' });
  });

  it('accepts a request without a body and without a content type', async () => {
    const { logger } = captureLogger();
    const app = appWith(logger, (a) =>
      a.post('/echo', (req, res) => {
        const body: unknown = req.body;
        res.json({ body: body ?? null });
      }),
    );
    await request(app).post('/echo').expect(200, { body: null });
  });

  it('answers unknown routes with 404 in the spec body', async () => {
    const { logger } = captureLogger();
    const res = await request(appWith(logger, () => {}))
      .delete('/api/nothing')
      .expect(404);
    expect(res.body).toEqual({ detail: 'No route for DELETE /api/nothing.', status_code: 404, type: 'not_found' });
  });

  it('closes the connection when an error happens after the response started', async () => {
    const { logger, lines } = captureLogger();
    const app = appWith(logger, (a) =>
      a.get('/half', (_req, res, next) => {
        res.status(200).type('text/plain').write('partial');
        setImmediate(() => next(new AppError('bad_gateway', 'upstream failed mid-body')));
      }),
    );
    const server = await listen(app);
    try {
      const outcome = await new Promise<string>((resolve) => {
        http
          .get(`${server.url}/half`, { agent: false }, (res) => {
            res.on('data', () => {});
            res.on('end', () => resolve('complete'));
            res.on('error', () => resolve('aborted'));
            res.on('aborted', () => resolve('aborted'));
          })
          .on('error', () => resolve('aborted'));
      });
      expect(outcome).toBe('aborted');
      expect(lines.find((line) => line.msg === 'request failed')).toMatchObject({ level: 'error', status: 502 });
    } finally {
      await server.close();
    }
  });
});
