// What crosses the gateway: each route reaches its service with the method, path, query and body it came
// with, and an identity the service verifies; the API key and forged identity headers never do; the answer
// comes back with its status, headers and body — error bodies unchanged when they are the spec's.
import { createHash } from 'node:crypto';
import http from 'node:http';
import { AsyncJobResponse, ErrorBody } from '@fin/contracts';
import request from 'supertest';
import { createApp } from '../src/app';
import { createServicePools, destroyServicePools } from '../src/proxy/service-pools';
import { GATEWAY_ROUTES, UPSTREAM_NAMES, type GatewayRoute } from '../src/routes';
import { httpUpstream } from '../src/upstream';
import { ALL_SCOPES, KEYS, SECRET, UUID, listen, logger, sampleRequest, startHarness, type Harness } from './support/harness';

const proxied = GATEWAY_ROUTES.filter((route): route is GatewayRoute & { target: { kind: 'proxy' } } => route.target.kind === 'proxy');

const asyncJob = {
  job_id: UUID,
  status: 'pending',
  from_cache: false,
  status_url: `/api/jobs/news/${UUID}/status`,
  result_url: `/api/jobs/news/${UUID}/result`,
};

describe('forwarding', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      mount: {
        news: (app) =>
          app.post('/api/products/news', (_req, res) => {
            res.status(202).set('X-Cache', 'miss').json(asyncJob);
          }),
        jobs: (app) =>
          app.get('/api/jobs/:job_type/:job_id/status', (_req, res) => {
            res.status(404).json({ detail: `No news job ${UUID}.`, status_code: 404, type: 'not_found' });
          }),
        analysis: (app) =>
          app.post('/api/analysis', (_req, res) => {
            res.status(500).type('html').send('<pre>TypeError: x is undefined\n    at /srv/analysis/src/handler.ts:12</pre>');
          }),
        'stock-report': (app) =>
          app.post('/api/products/stock-report', (_req, res) => {
            res.status(418).json({ error: 'unprocessable', stack: 'at /srv/stock-report' });
          }),
        portal: (app) => {
          app.get('/portal/tools', (_req, res) => {
            res.cookie('portal_session', 'abc', { httpOnly: true }).type('html').send('<h1>Your tools</h1>');
          });
          app.get('/portal/tools/:id/edit', (_req, res) => {
            res.status(404).type('html').send('<h1>Not found</h1>');
          });
          app.get('/portal/broken', (_req, res) => {
            res.status(500).type('html').send('<pre>TypeError at /srv/portal</pre>');
          });
        },
      },
    });
  });
  afterAll(async () => {
    await h.close();
  });

  it.each(proxied.map((route) => [`${route.method.toUpperCase()} ${route.path}`, route] as const))(
    '%s reaches its service with its method, path and query, signed for the caller',
    async (_name, route) => {
      const { path, body } = sampleRequest(route);
      const service = h.services[route.target.upstream];
      const req = request(h.app)[route.method](path).set('X-API-Key', KEYS.all);
      const res = await (body === undefined ? req : req.send(body));
      const received = service.received.at(-1);
      expect(received).toMatchObject({ method: route.method.toUpperCase(), path });
      // The service's verifyIdentity accepted the signature (it refuses anything else), and got this caller:
      expect(received?.identity).toEqual({
        requestId: res.headers['x-request-id'],
        caller: { tenantId: '6f1c2b8e-0d3a-4e5f-9a7b-1c2d3e4f5a6b', keyId: 'key-all', scopes: [...ALL_SCOPES] },
      });
    },
  );

  it('never forwards the API key, browser credentials or identity headers the client made up', async () => {
    await request(h.app)
      .post('/api/chat')
      .set('X-API-Key', KEYS.all)
      .set('Cookie', 'session=secret')
      .set('Authorization', 'Bearer something')
      .set('X-Fin-Tenant-Id', '11111111-2222-4333-8444-555555555555')
      .set('X-Fin-Scopes', 'news,admin')
      .send({ message: 'hi' })
      .expect(200);
    const received = h.services.chat.received.at(-1);
    if (received === undefined) throw new Error('nothing reached the chat service');
    const { headers, identity } = received;
    expect(headers['x-api-key']).toBeUndefined();
    expect(headers.cookie).toBeUndefined();
    expect(headers.authorization).toBeUndefined();
    expect(headers['x-fin-tenant-id']).toBe('6f1c2b8e-0d3a-4e5f-9a7b-1c2d3e4f5a6b');
    expect(identity.caller?.scopes).toEqual([...ALL_SCOPES]);
    expect(headers['x-forwarded-for']).toBeDefined();
  });

  it('forwards the body byte for byte', async () => {
    const raw = '{"symbols": [" aapl "],\n   "n": 1.0, "data": {"ü": "€"}}';
    await request(h.app)
      .post('/api/customer-tools/')
      .set('X-API-Key', KEYS.all)
      .set('Content-Type', 'application/json')
      .send(raw)
      .expect(200);
    expect(h.services.portal.received.at(-1)?.body).toBe(raw);
  });

  it("forwards a body that arrives in pieces after the head byte for byte, in the request's own context", async () => {
    const gateway = await listen(h.app);
    try {
      const raw = `{"symbols": ["AAPL"], "data": "${'x'.repeat(3000)}"}`;
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(
          `${gateway.url}/api/customer-tools/`,
          {
            method: 'POST',
            agent: false,
            headers: {
              'x-api-key': KEYS.all,
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(raw),
              'x-request-id': 'pieces-1',
            },
          },
          (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (body += chunk));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.flushHeaders();
        req.write(raw.slice(0, 10));
        // The rest later: the gateway is then waiting for the body rather than finding it whole.
        setTimeout(() => req.end(raw.slice(10)), 50);
      });
      expect(answer.status).toBe(200);
      const received = h.services.portal.received.at(-1);
      expect(received?.body).toBe(raw);
      expect(received?.headers['x-request-id']).toBe('pieces-1');
      // The gateway's span of the request (its async context) reached the forwarding code.
      expect(received?.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
      expect(received?.identity.caller?.tenantId).toBeDefined();
    } finally {
      await gateway.close();
    }
  });

  it("passes the service's answer through: status, headers and body", async () => {
    const res = await request(h.app)
      .post('/api/products/news')
      .set('X-API-Key', KEYS.all)
      .send({ symbols: ['AAPL'] })
      .expect(202);
    expect(res.headers['x-cache']).toBe('miss');
    expect(AsyncJobResponse.parse(res.body)).toEqual(asyncJob);
  });

  it("passes an error in the spec's body through unchanged", async () => {
    const res = await request(h.app).get(`/api/jobs/news/${UUID}/status`).set('X-API-Key', KEYS.all).expect(404);
    expect(res.body).toEqual({ detail: `No news job ${UUID}.`, status_code: 404, type: 'not_found' });
    expect(res.headers['x-ratelimit-limit']).toBe('100');
  });

  it("replaces an error that is not in the spec's body, never echoing it", async () => {
    const crashed = await request(h.app).post('/api/analysis').set('X-API-Key', KEYS.all).send({ prompt: 'x' }).expect(500);
    expect(ErrorBody.parse(crashed.body)).toEqual({ detail: 'An internal error occurred.', status_code: 500, type: 'internal_error' });
    expect(crashed.text).not.toContain('/srv/');

    const odd = await request(h.app)
      .post('/api/products/stock-report')
      .set('X-API-Key', KEYS.all)
      .send({ symbols: ['AAPL'] })
      .expect(400);
    expect(odd.body).toEqual({
      detail: 'The stock-report service rejected the request as invalid.',
      status_code: 400,
      type: 'validation_error',
    });
    expect(odd.text).not.toContain('/srv/');
  });

  it("forwards the portal's pages without an API key, with the browser's cookies, as an anonymous request", async () => {
    const res = await request(h.app).get('/portal/tools').set('Cookie', 'portal_session=xyz').set('X-API-Key', KEYS.all).expect(200);
    expect(res.text).toBe('<h1>Your tools</h1>');
    expect(res.headers['set-cookie']).toEqual([expect.stringContaining('portal_session=abc')]);
    const received = h.services.portal.received.at(-1);
    expect(received?.identity.caller).toBeNull();
    expect(received?.headers.cookie).toBe('portal_session=xyz');
    expect(received?.headers['x-api-key']).toBeUndefined();
  });

  it("passes the portal's own 4xx HTML pages to the browser, but still replaces a 5xx page", async () => {
    const missing = await request(h.app).get('/portal/tools/0/edit').expect(404);
    expect(missing.text).toBe('<h1>Not found</h1>');
    const broken = await request(h.app).get('/portal/broken').expect(500);
    expect(ErrorBody.parse(broken.body).type).toBe('internal_error');
    expect(broken.text).not.toContain('/srv/');
  });

  it('refuses a pass-through path with dot segments before it reaches the portal', async () => {
    const before = h.services.portal.received.length;
    for (const path of ['/portal/../api/customer-tools/', '/portal/%2e%2e/api/customer-tools/', '/portal/a%2F..%2Fb']) {
      const res = await request(h.app).get(path).expect(400);
      expect(ErrorBody.parse(res.body).type).toBe('validation_error');
    }
    expect(h.services.portal.received.length).toBe(before);
  });

  // The next tests make the gateway's app by hand (createApp) rather than by its definition (gatewayService), on
  // purpose: each puts an upstream of its own (other service URLs, another signing secret) behind the harness's
  // in-memory authenticator and rate limits, where the definition makes both over the database.
  it("puts the path prefix of a service's base URL before the forwarded path", async () => {
    const upstreams = createServicePools(
      Object.fromEntries(UPSTREAM_NAMES.map((name) => [name, `${h.services[name].url}/v2/`])) as Record<
        (typeof UPSTREAM_NAMES)[number],
        string
      >,
      { connectTimeoutMs: 2_000 },
    );
    try {
      const app = createApp({
        logger,
        authenticator: h.auth,
        rateLimits: h.rateLimits,
        upstream: httpUpstream({ pools: upstreams, signingSecret: SECRET, logger }),
        readiness: async () => {},
      });
      const res = await request(app).get('/api/chat/stream?conversation_id=x').set('X-API-Key', KEYS.all).expect(200);
      expect(res.body).toMatchObject({ service: 'chat', path: '/v2/api/chat/stream?conversation_id=x' });
    } finally {
      await destroyServicePools(upstreams);
    }
  });

  it("reports a service that refuses the gateway's signature (secrets differ) as 502", async () => {
    const app = createApp({
      logger,
      authenticator: h.auth,
      rateLimits: h.rateLimits,
      upstream: httpUpstream({ pools: h.upstreams, signingSecret: 'a-different-secret-of-32-characters!!', logger }),
      readiness: async () => {},
    });
    const res = await request(app)
      .post('/api/products/news')
      .set('X-API-Key', KEYS.all)
      .send({ symbols: ['AAPL'] })
      .expect(502);
    expect(res.body).toEqual({ detail: 'The news service failed.', status_code: 502, type: 'bad_gateway' });
  });

  it('signs the SHA-256 of the exact bytes it forwards, which the service checks before acting', async () => {
    const bytes = '{ "symbols":["AAPL"],  "n": 2 }';
    await request(h.app).post('/api/products/news').set('X-API-Key', KEYS.all).type('json').send(bytes).expect(202);
    const received = h.services.news.received.at(-1)!;
    expect(received.body).toBe(bytes);
    expect(received.headers['x-fin-body-sha256']).toBe(createHash('sha256').update(bytes).digest('hex'));
    await request(h.app).get(`/api/jobs/news/${UUID}/status`).set('X-API-Key', KEYS.all);
    expect(h.services.jobs.received.at(-1)!.headers['x-fin-body-sha256']).toBe(createHash('sha256').digest('hex'));
  });

  it('signs every request it forwards anew: the same request twice, even with the same request id, carries two nonces', async () => {
    const send = () =>
      request(h.app)
        .post('/api/products/news')
        .set('X-API-Key', KEYS.all)
        .set('X-Request-Id', 'client-chosen-id')
        .send({ symbols: ['AAPL'] })
        .expect(202);
    await send();
    await send();
    const [first, second] = h.services.news.received.slice(-2);
    expect(first?.identity.requestId).toBe('client-chosen-id');
    expect(second?.identity.requestId).toBe('client-chosen-id');
    expect(first?.headers['x-fin-nonce']).not.toBe(second?.headers['x-fin-nonce']);
  });

  it("signs for each service with that service's own key: a service reached in another's place refuses (502)", async () => {
    const upstreams = createServicePools(
      {
        ...(Object.fromEntries(UPSTREAM_NAMES.map((name) => [name, h.services[name].url])) as Record<
          (typeof UPSTREAM_NAMES)[number],
          string
        >),
        news: h.services.chat.url,
      },
      { connectTimeoutMs: 2_000 },
    );
    try {
      const before = h.services.chat.received.length;
      const app = createApp({
        logger,
        authenticator: h.auth,
        rateLimits: h.rateLimits,
        upstream: httpUpstream({ pools: upstreams, signingSecret: SECRET, logger }),
        readiness: async () => {},
      });
      await request(app)
        .post('/api/products/news')
        .set('X-API-Key', KEYS.all)
        .send({ symbols: ['AAPL'] })
        .expect(502);
      expect(h.services.chat.received.length).toBe(before);
    } finally {
      await destroyServicePools(upstreams);
    }
  });
});
