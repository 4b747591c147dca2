import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { ErrorBody } from '@fin/contracts';
import { clearNotLive, reportNotLive } from '@fin/metrics';
import request from 'supertest';
import { createLifecycle, createServiceApp } from '../src';
import { captureLogger } from './helpers';

function serviceWith(readiness: () => Promise<void>, extra: Partial<Parameters<typeof createServiceApp>[0]> = {}) {
  const { logger, lines } = captureLogger();
  const lifecycle = createLifecycle();
  const app = createServiceApp({
    name: 'news',
    logger,
    readiness,
    lifecycle,
    jsonBodyLimit: 64,
    routes: (a) =>
      a.post('/echo', (req, res) => {
        const body: unknown = req.body;
        res.json({ body });
      }),
    ...extra,
  });
  return { app, lifecycle, lines };
}

describe('createServiceApp', () => {
  it('is alive and ready while its dependencies answer', async () => {
    const { app } = serviceWith(async () => {});
    await request(app).get('/healthz').expect(200, { status: 'ok' });
    await request(app).get('/readyz').expect(200, { status: 'ready' });
  });

  it('is alive but not ready while the readiness check throws, and logs why', async () => {
    const { app, lines } = serviceWith(async () => {
      throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    });
    await request(app).get('/healthz').expect(200, { status: 'ok' });
    const res = await request(app).get('/readyz').expect(503);
    expect(res.body).toEqual({ detail: 'The news service is not ready.', status_code: 503, type: 'service_unavailable' });
    expect(JSON.stringify(lines.find((line) => line.msg === 'readiness check failed'))).toContain('ECONNREFUSED');
  });

  it('is not alive (503, saying why) while a part of the process has stopped for good, and alive again after', async () => {
    const { app } = serviceWith(async () => {});
    const consumer = {};
    reportNotLive(consumer, 'the Kafka consumer of group g crashed and stopped');
    try {
      const res = await request(app).get('/healthz').expect(503);
      expect(res.body).toEqual({
        detail: 'Not live: the Kafka consumer of group g crashed and stopped',
        status_code: 503,
        type: 'service_unavailable',
      });
    } finally {
      clearNotLive(consumer);
    }
    await request(app).get('/healthz').expect(200, { status: 'ok' });
  });

  it('is not ready when the readiness check does not finish within its timeout', async () => {
    const { app } = serviceWith(() => new Promise<void>(() => {}), { readinessTimeoutMs: 20 });
    const res = await request(app).get('/readyz').expect(503);
    expect(ErrorBody.parse(res.body).type).toBe('service_unavailable');
  });

  it('is not ready once shutdown has begun, though its dependencies answer', async () => {
    const { app, lifecycle } = serviceWith(async () => {});
    await request(app).get('/readyz').expect(200);
    lifecycle.beginShutdown();
    const res = await request(app).get('/readyz').expect(503);
    expect(res.body).toEqual({ detail: 'The news service is shutting down.', status_code: 503, type: 'service_unavailable' });
    await request(app).get('/healthz').expect(200);
  });

  it("runs a lifecycle's shutdown hook once, when shutdown begins", () => {
    const calls: boolean[] = [];
    const lifecycle = createLifecycle(() => calls.push(lifecycle.shuttingDown));
    expect(calls).toEqual([]);
    lifecycle.beginShutdown();
    lifecycle.beginShutdown();
    expect(calls).toEqual([true]);
  });

  it.each(['/healthz', '/readyz'])(
    'refuses a body on %s at once (400 naming body) and does not wait for it: a trickled body holds no connection',
    async (path) => {
      const { app } = serviceWith(async () => {});
      const server = createServer(app);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = server.address() as AddressInfo;
        const socket = connect(port, '127.0.0.1');
        const started = Date.now();
        let trickle: NodeJS.Timeout | undefined;
        const received = await new Promise<string>((resolve) => {
          let text = '';
          socket.on('connect', () => {
            socket.write(`GET ${path} HTTP/1.1\r\nHost: probe\r\nContent-Length: 100000\r\n\r\n`);
            trickle = setInterval(() => socket.writable && socket.write('x'), 100);
          });
          socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
          socket.on('error', () => undefined);
          socket.on('close', () => resolve(text));
        });
        clearInterval(trickle);
        const [head = '', body = ''] = received.split('\r\n\r\n');
        expect(head).toMatch(/^HTTP\/1\.1 400 /);
        expect(head.toLowerCase()).toContain('connection: close');
        expect(ErrorBody.parse(JSON.parse(body))).toEqual({
          detail: 'body: a probe takes no request body',
          status_code: 400,
          type: 'validation_error',
        });
        // Closed by the answer (or, for a client that keeps sending, by the 2 s linger), never after the body.
        expect(Date.now() - started).toBeLessThan(5_000);
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    },
  );

  it('mounts the routes between the JSON body parser and the 404 and error translator', async () => {
    const { app } = serviceWith(async () => {});
    await request(app)
      .post('/echo')
      .send({ a: 1 })
      .expect(200, { body: { a: 1 } });
    expect(
      ErrorBody.parse(
        (
          await request(app)
            .post('/echo')
            .send({ a: 'x'.repeat(100) })
            .expect(400)
        ).body,
      ).type,
    ).toBe('validation_error');
    expect(ErrorBody.parse((await request(app).post('/echo').set('Content-Type', 'text/plain').send('a').expect(415)).body).type).toBe(
      'unsupported_media_type',
    );
    expect((await request(app).get('/nothing').expect(404)).body).toEqual({
      detail: 'No route for GET /nothing.',
      status_code: 404,
      type: 'not_found',
    });
    const res = await request(app).get('/healthz');
    expect(res.headers['x-request-id']).toBeDefined();
    expect(res.headers['x-powered-by']).toBeUndefined();
  });
});
