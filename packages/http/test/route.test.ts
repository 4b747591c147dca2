import { JobPathParams, NewsRequest, type NewsRequest as NewsRequestType } from '@fin/contracts';
import express from 'express';
import request from 'supertest';
import { z } from 'zod';
import { conflict, errorHandler, jsonBody, requestContext, route } from '../src';
import { captureLogger } from './helpers';

function appWith(mount: (app: express.Express) => void) {
  const { logger } = captureLogger();
  const app = express();
  app.use(requestContext({ logger }));
  app.use(jsonBody());
  mount(app);
  app.use(errorHandler({ logger }));
  return app;
}

describe('route', () => {
  it('hands the handler the parsed body (normalised, with defaults) and sends what it returns', async () => {
    const seen: NewsRequestType[] = [];
    const app = appWith((a) =>
      a.post(
        '/api/products/news',
        route({ body: NewsRequest }, ({ body }) => {
          seen.push(body);
          return { symbols: body.symbols, n: body.n };
        }),
      ),
    );
    const res = await request(app).post('/api/products/news').send({ symbols: [' aapl', 'AAPL', 'msft'] }).expect(200);
    expect(res.body).toEqual({ symbols: ['AAPL', 'MSFT'], n: 5 });
    expect(seen).toEqual([{ symbols: ['AAPL', 'MSFT'], n: 5, language: 'en' }]);
  });

  it('keeps the status the handler set', async () => {
    const app = appWith((a) =>
      a.post(
        '/jobs',
        route({ body: NewsRequest }, (_input, { res }) => {
          res.status(202);
          return { accepted: true };
        }),
      ),
    );
    await request(app).post('/jobs').send({ symbols: ['AAPL'] }).expect(202, { accepted: true });
  });

  it('refuses an invalid body with 400 validation_error naming each field, without calling the handler', async () => {
    let called = false;
    const app = appWith((a) =>
      a.post(
        '/api/products/news',
        route({ body: NewsRequest }, () => {
          called = true;
          return {};
        }),
      ),
    );
    const res = await request(app).post('/api/products/news').send({ symbols: [], n: 21, langauge: 'en' }).expect(400);
    expect(res.body.type).toBe('validation_error');
    expect(res.body.status_code).toBe(400);
    expect(res.body.detail).toContain('unknown field "langauge"');
    expect(res.body.detail).toContain('symbols: expected 1 to 10 distinct symbols, got 0');
    expect(res.body.detail).toContain('n: must be at most 20');
    expect(called).toBe(false);
  });

  it('validates params and query together and reports every problem', async () => {
    const app = appWith((a) =>
      a.get(
        '/api/jobs/:job_type/:job_id/status',
        route({ params: JobPathParams, query: z.object({ verbose: z.enum(['true', 'false']).optional() }) }, ({ params, query }) => ({ params, query })),
      ),
    );
    const ok = await request(app).get('/api/jobs/news/3fa85f64-5717-4562-b3fc-2c963f66afa6/status?verbose=true').expect(200);
    expect(ok.body).toEqual({ params: { job_type: 'news', job_id: '3fa85f64-5717-4562-b3fc-2c963f66afa6' }, query: { verbose: 'true' } });

    const bad = await request(app).get('/api/jobs/weather/42/status?verbose=maybe').expect(400);
    expect(bad.body.detail).toContain('job_type: must be one of news, stock-report, analysis, got "weather"');
    expect(bad.body.detail).toContain('job_id: must be a UUID');
    expect(bad.body.detail).toContain('verbose:');
  });

  it('passes what the handler throws to the error translator', async () => {
    const app = appWith((a) =>
      a.post(
        '/tools',
        route({}, async () => {
          await Promise.resolve();
          throw conflict('A tool named get_positions already exists.');
        }),
      ),
    );
    const res = await request(app).post('/tools').expect(409);
    expect(res.body).toEqual({ detail: 'A tool named get_positions already exists.', status_code: 409, type: 'conflict' });
  });

  it('gives the handler the request id and the request logger', async () => {
    const app = appWith((a) => a.get('/ctx', route({}, (_input, { requestId, logger }) => ({ requestId, hasLogger: logger !== undefined }))));
    await request(app).get('/ctx').set('X-Request-Id', 'abc-1').expect(200, { requestId: 'abc-1', hasLogger: true });
  });
});
