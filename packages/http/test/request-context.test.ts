import http from 'node:http';
import express from 'express';
import request from 'supertest';
import { annotateRequest, currentLogger, currentRequest, jsonBody, loggerOf, requestContext, requestIdOf } from '../src';
import { createLogger, traceHeaders } from '@fin/log';
import { waitFor } from '@fin/testing';
import { captureLogger, listen } from './helpers';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function appWith(logger: ReturnType<typeof captureLogger>['logger']) {
  const app = express();
  app.use(requestContext({ logger }));
  app.use(jsonBody());
  app.all('/work', async (req, res) => {
    loggerOf(res, logger).info('from the handler');
    await new Promise((resolve) => setImmediate(resolve));
    // Deep in service code, without the response at hand.
    currentLogger(logger).info('after an await');
    const body: unknown = req.body;
    res.json({ requestId: requestIdOf(res), fromStorage: currentRequest()?.requestId ?? null, body: body ?? null });
  });
  return app;
}

describe('requestContext', () => {
  it('accepts a well-formed X-Request-Id, sets it on the response and on every log line of the request', async () => {
    const { logger, lines } = captureLogger();
    const res = await request(appWith(logger)).get('/work').set('X-Request-Id', 'client-id_1.2:3').expect(200);
    expect(res.headers['x-request-id']).toBe('client-id_1.2:3');
    expect(res.body).toMatchObject({ requestId: 'client-id_1.2:3', fromStorage: 'client-id_1.2:3' });
    const messages = lines.map((line) => [line.msg, line.requestId]);
    expect(messages).toEqual([
      ['from the handler', 'client-id_1.2:3'],
      ['after an await', 'client-id_1.2:3'],
      ['request completed', 'client-id_1.2:3'],
    ]);
    expect(lines[2]).toMatchObject({ level: 'info', method: 'GET', path: '/work', status: 200 });
  });

  it.each([
    ['too long', 'a'.repeat(129)],
    ['with a space', 'two words'],
    ['joined by a proxy', 'a, b'],
    ['with a slash', 'a/b'],
  ])('replaces an id that is %s with a generated UUID', async (_case, id) => {
    const { logger, lines } = captureLogger();
    const res = await request(appWith(logger)).get('/work').set('X-Request-Id', id).expect(200);
    expect(res.headers['x-request-id']).toMatch(UUID);
    expect(res.headers['x-request-id']).not.toBe(id);
    expect(lines.every((line) => line.requestId === res.headers['x-request-id'])).toBe(true);
  });

  it("runs the request in a span of the caller's W3C trace, so every log line carries its trace id", async () => {
    const { logger, lines } = captureLogger();
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    await request(appWith(logger)).get('/work').set('traceparent', `00-${traceId}-00f067aa0ba902b7-01`).expect(200);
    expect(lines).toHaveLength(3);
    expect(lines.every((line) => line.trace_id === traceId)).toBe(true);
    // This service's own span, not the caller's.
    expect(new Set(lines.map((line) => line.span_id))).toEqual(new Set([expect.stringMatching(/^[0-9a-f]{16}$/)]));
    expect(lines[0]?.span_id).not.toBe('00f067aa0ba902b7');
  });

  it('starts a new trace for a request without a valid traceparent', async () => {
    const { logger, lines } = captureLogger();
    await request(appWith(logger)).get('/work').set('traceparent', 'garbage').expect(200);
    expect(lines[0]?.trace_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it("adds the caller's tenant, once known, to every later line of the request and to its completion line", async () => {
    const { logger, lines } = captureLogger();
    const app = express();
    app.use(requestContext({ logger }));
    app.get('/who', (_req, res) => {
      loggerOf(res, logger).info('before authentication');
      annotateRequest(res, { tenantId: 'tenant-1' });
      currentLogger(logger).info('after authentication');
      res.json({});
    });
    await request(app).get('/who').expect(200);
    expect(lines.map((line) => [line.msg, line.tenantId])).toEqual([
      ['before authentication', undefined],
      ['after authentication', 'tenant-1'],
      ['request completed', 'tenant-1'],
    ]);
    expect(lines.every((line) => typeof line.requestId === 'string')).toBe(true);
  });

  it('gives every request its own id when the caller sends none', async () => {
    const { logger } = captureLogger();
    const app = appWith(logger);
    const [a, b] = await Promise.all([request(app).get('/work'), request(app).get('/work')]);
    expect(a.headers['x-request-id']).toMatch(UUID);
    expect(b.headers['x-request-id']).toMatch(UUID);
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
  });

  it('keeps the request context across a JSON body that arrives in several chunks', async () => {
    const { logger, lines } = captureLogger();
    const server = await listen(appWith(logger));
    try {
      const body = await new Promise<string>((resolve, reject) => {
        const req = http.request(
          `${server.url}/work`,
          { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'chunked-1' }, agent: false },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (text += chunk));
            res.on('end', () => resolve(text));
          },
        );
        req.on('error', reject);
        req.write('{"symbols":');
        setImmediate(() => req.end('["AAPL"]}'));
      });
      expect(JSON.parse(body)).toEqual({ requestId: 'chunked-1', fromStorage: 'chunked-1', body: { symbols: ['AAPL'] } });
      expect(lines.filter((line) => line.msg === 'after an await').map((line) => line.requestId)).toEqual(['chunked-1']);
    } finally {
      await server.close();
    }
  });

  it('logs probe paths at debug so they do not flood the logs', async () => {
    const { logger, lines } = captureLogger();
    const app = express();
    app.use(requestContext({ logger, quietPaths: ['/healthz'] }));
    app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
    await request(app).get('/healthz').expect(200);
    expect(lines).toEqual([expect.objectContaining({ msg: 'request completed', level: 'debug', path: '/healthz' })]);
  });

  it("gives outgoing requests the same span as the request's log lines, in the caller's trace", async () => {
    const { logger, lines } = captureLogger();
    const app = express();
    app.use(requestContext({ logger }));
    app.get('/send', async (_req, res) => {
      await new Promise((resolve) => setImmediate(resolve));
      res.json(traceHeaders());
    });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await request(app).get('/send').set('traceparent', `00-${traceId}-00f067aa0ba902b7-00`).expect(200);
    const completed = lines.find((line) => line.msg === 'request completed');
    expect(res.body).toEqual({ traceparent: `00-${traceId}-${String(completed?.span_id)}-00` });
    expect(completed?.trace_id).toBe(traceId);
  });
});

describe('access-log sampling', () => {
  function sampled(accessLog: { sampleRate?: number; slowMs?: number }) {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({
      service: 'test',
      accessLog,
      destination: { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
    });
    const app = express();
    app.use(requestContext({ logger }));
    app.get('/ok', (_req, res) => void res.json({}));
    app.get('/missing', (_req, res) => void res.status(404).json({}));
    app.get('/broken', (_req, res) => void res.status(503).json({}));
    app.get('/stream', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': open\n\n');
    });
    const completed = () =>
      lines.filter((line) => line.msg === 'request completed').map((line) => [line.path, line.status, line.aborted ?? false]);
    return { app, completed };
  }

  it('logs every request at the default rate', async () => {
    const { app, completed } = sampled({});
    for (let i = 0; i < 3; i++) await request(app).get('/ok').expect(200);
    expect(completed()).toHaveLength(3);
  });

  it('at rate 0 logs only the requests that failed', async () => {
    const { app, completed } = sampled({ sampleRate: 0 });
    await request(app).get('/ok').expect(200);
    await request(app).get('/missing').expect(404);
    await request(app).get('/broken').expect(503);
    await request(app).get('/ok').expect(200);
    expect(completed()).toEqual([
      ['/missing', 404, false],
      ['/broken', 503, false],
    ]);
  });

  it('at rate 0 still logs a request whose client went away before the end', async () => {
    const { app, completed } = sampled({ sampleRate: 0 });
    const server = await listen(app);
    try {
      const controller = new AbortController();
      const res = await fetch(`${server.url}/stream`, { signal: controller.signal });
      await res.body!.getReader().read();
      controller.abort();
      await waitFor(() => completed().length === 1);
      expect(completed()).toEqual([['/stream', 200, true]]);
    } finally {
      await server.close();
    }
  });

  it('at rate 0 still logs a request slower than the threshold', async () => {
    const { app, completed } = sampled({ sampleRate: 0, slowMs: 0 });
    await request(app).get('/ok').expect(200);
    expect(completed()).toEqual([['/ok', 200, false]]);
  });

  it('refuses a rate outside 0..1', () => {
    expect(() => createLogger({ service: 'test', accessLog: { sampleRate: 1.5 } })).toThrow(RangeError);
    expect(() => createLogger({ service: 'test', accessLog: { slowMs: -1 } })).toThrow(RangeError);
  });
});
