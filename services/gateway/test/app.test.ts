// Every API route gets the same checks (unkey's common-tests): 401 without a key and with an unknown key,
// 403 naming the scope for a key without it, the rate limiter counted for the right product (or a chat slot
// taken) and its 429 passed through with its headers, and the request reaching the right service.
import { ErrorBody } from '@fin/contracts';
import { inMemoryFetch } from '@fin/http';
import { waitFor } from '@fin/testing';
import request from 'supertest';
import type { Scope } from '../src/auth/types';
import { GATEWAY_ROUTES, JOB_TYPE_SCOPES, type GatewayRoute } from '../src/routes';
import { KEYS, UUID, sampleRequest, startHarness, type Harness } from './support/harness';

const proxied = GATEWAY_ROUTES.filter((route): route is GatewayRoute & { target: { kind: 'proxy' } } => route.target.kind === 'proxy');
const table = proxied.map((route) => [`${route.method.toUpperCase()} ${route.path}`, route] as const);

function send(h: Harness, route: GatewayRoute, apiKey: string | undefined, jobType = 'news') {
  const { path, body } = sampleRequest(route, jobType);
  let req = request(h.app)[route.method](path);
  if (apiKey !== undefined) req = req.set('X-API-Key', apiKey);
  return body === undefined ? req : req.send(body);
}

const scopeOf = (route: GatewayRoute, jobType = 'news'): Scope =>
  route.scope === 'job_type' ? JOB_TYPE_SCOPES[jobType as keyof typeof JOB_TYPE_SCOPES] : (route.scope as Scope);

describe('every API route', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h.close();
  });
  afterEach(() => {
    h.rateLimits.exhausted.clear();
  });

  it('covers the whole table', () => {
    expect(proxied.map((route) => route.id).sort()).toEqual(
      [
        'chat',
        'chatStream',
        'createAnalysis',
        'createCustomerTool',
        'createNews',
        'createStockReport',
        'createWebhook',
        'deleteCustomerTool',
        'deleteWebhook',
        'getCustomerTool',
        'getFiling',
        'getFilingSection',
        'getJobEvents',
        'getJobResult',
        'getJobStatus',
        'listCustomerToolCalls',
        'listCallbackDeliveries',
        'listCustomerTools',
        'listFilings',
        'listWebhookDeliveries',
        'listWebhooks',
        'getWebhook',
        'mcp',
        'mcpStream',
        'redeliverCallbackDelivery',
        'redeliverWebhookDelivery',
        'rotateCallbackSecret',
        'rotateWebhookSecret',
        'testWebhook',
        'updateCustomerTool',
        'updateWebhook',
      ].sort(),
    );
  });

  it.each(table)('%s: 401 without an API key, and nothing reaches the service', async (_name, route) => {
    const service = h.services[route.target.upstream];
    const before = service.received.length;
    const res = await send(h, route, undefined).expect(401);
    expect(ErrorBody.parse(res.body)).toEqual({
      detail: 'Missing API key: send it in the X-API-Key header.',
      status_code: 401,
      type: 'unauthorized',
    });
    expect(service.received.length).toBe(before);
  });

  it.each(table)('%s: 401 for a key the authenticator does not know', async (_name, route) => {
    const res = await send(h, route, 'fin_not_a_key').expect(401);
    expect(res.body).toEqual({ detail: 'Missing or invalid API key.', status_code: 401, type: 'unauthorized' });
  });

  it.each(table.filter(([, route]) => route.scope !== 'any'))(
    '%s: 403 naming the scope for a key without it, before any rate-limit hit',
    async (_name, route) => {
      const scope = scopeOf(route);
      const hits = h.rateLimits.hits.length;
      const res = await send(h, route, KEYS.without(scope)).expect(403);
      expect(ErrorBody.parse(res.body).type).toBe('forbidden');
      expect(ErrorBody.parse(res.body).detail).toBe(`This API key does not have the ${scope} scope.`);
      expect(h.rateLimits.hits.length).toBe(hits);
    },
  );

  it.each(table)('%s: counted by the limiter (or holds a chat slot) and reaches its service', async (_name, route) => {
    const hits = h.rateLimits.hits.length;
    const slots = h.rateLimits.slotEvents.length;
    const res = await send(h, route, KEYS.all).expect(200);
    expect(res.body).toMatchObject({ service: route.target.upstream, method: route.method.toUpperCase(), path: sampleRequest(route).path });
    if (route.target.limit !== null) {
      expect(h.rateLimits.hits.slice(hits)).toEqual([{ product: route.target.limit, keyId: 'key-all' }]);
      expect(res.headers['x-ratelimit-limit']).toBe('100');
      expect(res.headers['x-ratelimit-remaining']).toBe('99');
      expect(res.headers['x-ratelimit-reset']).toBe('1767225660');
    } else {
      expect(h.rateLimits.hits.length).toBe(hits);
    }
    if (route.limit === 'concurrent_streams') {
      // Chat: counted in turns per minute and holding a slot. The slot is given back when the response closes,
      // which the server sees just after the client.
      expect(route.target.limit).toBe('chat-turns');
      await waitFor(() => h.rateLimits.slotEvents.length === slots + 2, { what: 'the chat slot to be released' });
      expect(h.rateLimits.slotEvents.slice(slots)).toEqual(['acquire', 'release']);
    }
  });

  // What npm start's MCP tools call: the same app, answered in memory (no socket, no HTTP parse).
  it.each(table)("%s: answered in memory (the gateway's fetch) as over a socket: 200, 401, 403, 429", async (_name, route) => {
    const answerInMemory = inMemoryFetch(h.app, { origin: 'http://127.0.0.1:8080' });
    const { path, body } = sampleRequest(route);
    const compare = async (apiKey: string | undefined) => {
      const requestId = `same-${route.id}`;
      const overSocket = await send(h, route, apiKey).set('X-Request-Id', requestId);
      const inMemory = await answerInMemory(`http://127.0.0.1:8080${path}`, {
        method: route.method.toUpperCase(),
        headers: {
          'X-Request-Id': requestId,
          ...(apiKey === undefined ? {} : { 'X-API-Key': apiKey }),
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect(inMemory.status).toBe(overSocket.status);
      expect(await inMemory.json()).toEqual(overSocket.body);
      for (const name of ['content-type', 'x-request-id', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after'])
        expect([name, inMemory.headers.get(name)]).toEqual([name, overSocket.headers[name] ?? null]);
      return inMemory.status;
    };
    expect(await compare(KEYS.all)).toBe(200);
    expect(await compare(undefined)).toBe(401);
    expect(await compare('fin_not_a_key')).toBe(401);
    if (route.scope !== 'any') expect(await compare(KEYS.without(scopeOf(route)))).toBe(403);
    if (route.target.limit !== null) {
      h.rateLimits.exhausted.add(route.target.limit);
      expect(await compare(KEYS.all)).toBe(429);
    }
  });

  it.each(table.filter(([, route]) => route.target.limit !== null))(
    "%s: the limiter's 429 reaches the client with its headers",
    async (_name, route) => {
      if (route.target.limit === null) throw new Error('unreachable');
      h.rateLimits.exhausted.add(route.target.limit);
      const service = h.services[route.target.upstream];
      const before = service.received.length;
      const res = await send(h, route, KEYS.all).expect(429);
      expect(ErrorBody.parse(res.body)).toEqual({
        detail: `Rate limit exceeded: 100 ${route.target.limit} requests per minute.`,
        status_code: 429,
        type: 'rate_limit_exceeded',
      });
      expect(res.headers['retry-after']).toBe('42');
      expect(res.headers['x-ratelimit-remaining']).toBe('0');
      expect(res.headers['x-ratelimit-reset']).toBe('1767225660');
      expect(service.received.length).toBe(before);
    },
  );
});

describe('the MCP endpoint', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('takes a key of any scope, and forwards X-API-Key to the MCP service alone (its tools call the API with it)', async () => {
    const res = await request(h.app)
      .post('/mcp')
      .set('X-API-Key', KEYS.without('news'))
      .send({ jsonrpc: '2.0', id: 1, method: 'ping' })
      .expect(200);
    expect(res.body).toMatchObject({ service: 'mcp', method: 'POST', path: '/mcp' });
    expect(h.services.mcp.received.at(-1)?.headers['x-api-key']).toBe(KEYS.without('news'));

    await request(h.app)
      .post('/api/products/news')
      .set('X-API-Key', KEYS.all)
      .send({ symbols: ['AAPL'] })
      .expect(200);
    expect(h.services.news.received.at(-1)?.headers['x-api-key']).toBeUndefined();
  });
});

describe('job routes', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it.each([
    ['news', 'news'],
    ['stock-report', 'stock-report'],
    ['analysis', 'analysis'],
  ] as const)('a %s job needs the %s scope', async (jobType, scope) => {
    const path = `/api/jobs/${jobType}/${UUID}/status`;
    await request(h.app).get(path).set('X-API-Key', KEYS.without(scope)).expect(403);
    const other = JOB_TYPE_SCOPES.news === scope ? 'analysis' : 'news';
    const res = await request(h.app).get(path).set('X-API-Key', KEYS.without(other)).expect(200);
    expect(res.body).toMatchObject({ service: 'jobs', path });
  });

  it('refuses a job type that does not exist with 400 naming the parameter', async () => {
    const res = await request(h.app).get(`/api/jobs/weather/${UUID}/result`).set('X-API-Key', KEYS.all).expect(400);
    expect(res.body).toEqual({
      detail: 'job_type: must be one of news, stock-report, analysis, got "weather"',
      status_code: 400,
      type: 'validation_error',
    });
  });
});

describe('gateway probes and ids', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('is alive and ready without an API key', async () => {
    await request(h.app).get('/healthz').expect(200, { status: 'ok' });
    await request(h.app).get('/readyz').expect(200, { status: 'ready' });
  });

  it('echoes a well-formed X-Request-Id and sends the same id to the service', async () => {
    const res = await request(h.app)
      .post('/api/products/news')
      .set('X-API-Key', KEYS.all)
      .set('X-Request-Id', 'trace-42')
      .send({ symbols: ['AAPL'] })
      .expect(200);
    expect(res.headers['x-request-id']).toBe('trace-42');
    const received = h.services.news.received.at(-1);
    expect(received?.headers['x-request-id']).toBe('trace-42');
    expect(received?.identity.requestId).toBe('trace-42');
  });

  it("continues the caller's W3C trace to the service in a span of its own", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    await request(h.app)
      .post('/api/products/news')
      .set('X-API-Key', KEYS.all)
      .set('traceparent', `00-${traceId}-00f067aa0ba902b7-01`)
      .send({ symbols: ['AAPL'] })
      .expect(200);
    const forwarded = String(h.services.news.received.at(-1)?.headers.traceparent);
    expect(forwarded).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(forwarded).not.toContain('00f067aa0ba902b7');
  });

  it('replaces a malformed X-Request-Id with a generated one, on errors too', async () => {
    const res = await request(h.app).post('/api/products/news').set('X-Request-Id', 'not valid!').send({}).expect(401);
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
