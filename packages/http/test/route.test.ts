// route(): the contract entry's method and path are registered, every part of the input is checked against the
// entry's schemas (400 validation_error naming each field), and the handler gets typed input and the caller the
// gateway vouched for. Requests are signed as the gateway signs them and verified by the real verifier.
import { API_ROUTES, ErrorBody, JobPathParams, prototypeKeyIssues, type NewsRequest, type RouteEntry } from '@fin/contracts';
import express from 'express';
import request from 'supertest';
import { z } from 'zod';
import {
  conflict,
  errorHandler,
  identityKey,
  jsonBody,
  requestContext,
  route,
  signIdentity,
  toExpressPath,
  verifyIdentity,
  type Caller,
} from '../src';
import { captureLogger } from './helpers';

const KEY = identityKey('route-test-secret', 'news');
const CALLER: Caller = { tenantId: 'tenant-a', keyId: 'key-a', scopes: ['news'] };

/** An app with the service's middleware in the order createServiceApp mounts it, the verifier before the routes. */
function appWith(mount: (app: express.Express) => void, options: { allowAnonymous?: boolean } = {}) {
  const { logger } = captureLogger();
  const app = express();
  app.use(requestContext({ logger }));
  app.use(jsonBody());
  app.use(verifyIdentity(KEY, { logger, ...options }));
  mount(app);
  app.use(errorHandler({ logger }));
  return app;
}

/** The gateway's identity headers for one request (a body is signed as supertest will send it: JSON). */
function signed(method: string, path: string, body?: unknown, caller: Caller | null = CALLER): Record<string, string> {
  return signIdentity({ requestId: 'req-1', caller }, KEY, { method, path, body: body === undefined ? undefined : JSON.stringify(body) });
}

function post(app: express.Express, path: string, body: unknown, caller: Caller | null = CALLER) {
  return request(app)
    .post(path)
    .set(signed('POST', path, body, caller))
    .send(body as object);
}

const errorOf = (res: { body: unknown }): ErrorBody => ErrorBody.parse(res.body);

function get(app: express.Express, path: string, caller: Caller | null = CALLER) {
  return request(app)
    .get(path)
    .set(signed('GET', path, undefined, caller));
}

describe('route', () => {
  it("registers the entry's method and path, hands the handler the parsed body (normalised, with defaults) and sends what it returns", async () => {
    const seen: NewsRequest[] = [];
    const app = appWith((a) =>
      route(a, API_ROUTES.createNews, ({ body }) => {
        seen.push(body);
        return { symbols: body.symbols, n: body.n };
      }),
    );
    const res = await post(app, '/api/products/news', { symbols: [' aapl', 'AAPL', 'msft'] }).expect(200);
    expect(res.body).toEqual({ symbols: ['AAPL', 'MSFT'], n: 5 });
    expect(seen).toEqual([{ symbols: ['AAPL', 'MSFT'], n: 5, language: 'en', sort: 'relevance' }]);
    // Only the entry's method: a GET of the same path is not this route.
    await get(app, '/api/products/news').expect(404);
  });

  it('turns the path template into express parameters', async () => {
    expect(toExpressPath('/api/jobs/{job_type}/{job_id}/status')).toBe('/api/jobs/:job_type/:job_id/status');
    const app = appWith((a) => route(a, API_ROUTES.getJobStatus, ({ params }) => params));
    await get(app, '/api/jobs/news/3FA85F64-5717-4562-B3FC-2C963F66AFA6/status').expect(200, {
      job_type: 'news',
      job_id: '3FA85F64-5717-4562-B3FC-2C963F66AFA6',
    });
  });

  it('keeps the status the handler set', async () => {
    const app = appWith((a) =>
      route(a, API_ROUTES.createNews, (_input, { res }) => {
        res.status(202);
        return { accepted: true };
      }),
    );
    await post(app, '/api/products/news', { symbols: ['AAPL'] }).expect(202, { accepted: true });
  });

  it('refuses an invalid body with 400 validation_error naming each field, without calling the handler', async () => {
    let called = false;
    const app = appWith((a) =>
      route(a, API_ROUTES.createNews, () => {
        called = true;
        return {};
      }),
    );
    const res = errorOf(await post(app, '/api/products/news', { symbols: [], n: 21, langauge: 'en' }).expect(400));
    expect(res.type).toBe('validation_error');
    expect(res.status_code).toBe(400);
    expect(res.detail).toContain('unknown field "langauge"');
    expect(res.detail).toContain('symbols: expected 1 to 10 distinct symbols, got 0');
    expect(res.detail).toContain('n: must be at most 20');
    expect(called).toBe(false);
  });

  it.each([
    [
      '"__proto__": null',
      '{"name":"t","input_schema":{"type":"object","properties":{"a":{"__proto__":null}}}}',
      'input_schema.properties.a.__proto__',
    ],
    ['"__proto__": {…}', '{"input_schema":{"type":"object","__proto__":{"x":1}}}', 'input_schema.__proto__'],
    ['"__proto__" in an array', '{"items":[1,{"b":[{"__proto__":[]}]}]}', 'items[1].b[0].__proto__'],
    ['"constructor": {"prototype": …}', '{"data":{"constructor":{"prototype":{"admin":true}}}}', 'data.constructor.prototype'],
  ])('refuses a prototype key (%s) at any depth with 400 naming its path, before any schema copies the body', async (_name, text, path) => {
    let called = false;
    const app = appWith((a) =>
      route(a, API_ROUTES.createCustomerTool, () => {
        called = true;
        return {};
      }),
    );
    const res = errorOf(
      await request(app)
        .post('/api/customer-tools/')
        .set(signIdentity({ requestId: 'req-1', caller: CALLER }, KEY, { method: 'POST', path: '/api/customer-tools/', body: text }))
        .set('Content-Type', 'application/json')
        .send(text)
        .expect(400),
    );
    expect(res).toEqual({ detail: expect.stringContaining(`${path}: the key`) as string, status_code: 400, type: 'validation_error' });
    expect(called).toBe(false);
  });

  it('accepts "constructor" and "prototype" as ordinary keys', async () => {
    const app = appWith((a) => route(a, API_ROUTES.createNews, ({ body }) => ({ n: body.n })));
    const text = '{"symbols":["AAPL"],"n":2}';
    expect(prototypeKeyIssues(JSON.parse('{"constructor":"x","prototype":{"a":1},"b":{"constructor":1}}'))).toEqual([]);
    await request(app)
      .post('/api/products/news')
      .set(signIdentity({ requestId: 'req-1', caller: CALLER }, KEY, { method: 'POST', path: '/api/products/news', body: text }))
      .set('Content-Type', 'application/json')
      .send(text)
      .expect(200, { n: 2 });
  });

  it('walks a body nested 100,000 deep (256 KiB of brackets) and names the path of a key at its bottom', () => {
    const depth = 100_000;
    expect(prototypeKeyIssues(JSON.parse(`{"a":${'['.repeat(depth)}${']'.repeat(depth)}}`))).toEqual([]);
    const [issue, ...more] = prototypeKeyIssues(JSON.parse(`${'['.repeat(depth)}{"__proto__":1}${']'.repeat(depth)}`));
    expect(more).toEqual([]);
    expect(issue?.path).toEqual([...Array.from({ length: depth }, () => 0), '__proto__']);
  });

  it('validates params and query together and reports every problem', async () => {
    const entry = {
      method: 'get',
      path: '/api/jobs/{job_type}/{job_id}/status',
      scope: 'job_type',
      request: { params: JobPathParams, query: z.object({ verbose: z.enum(['true', 'false']).optional() }) },
    } as const satisfies RouteEntry;
    const app = appWith((a) => route(a, entry, ({ params, query }) => ({ params, query })));
    const ok = await get(app, '/api/jobs/news/3fa85f64-5717-4562-b3fc-2c963f66afa6/status?verbose=true').expect(200);
    expect(ok.body).toEqual({ params: { job_type: 'news', job_id: '3fa85f64-5717-4562-b3fc-2c963f66afa6' }, query: { verbose: 'true' } });

    const bad = errorOf(await get(app, '/api/jobs/weather/42/status?verbose=maybe').expect(400));
    expect(bad.detail).toContain('job_type: must be one of news, stock-report, analysis, got "weather"');
    expect(bad.detail).toContain('job_id: must be a UUID');
    expect(bad.detail).toContain('verbose:');
  });

  describe('headers', () => {
    const headersApp = () => appWith((a) => route(a, API_ROUTES.createNews, ({ headers }) => ({ headers })));

    it("hands the handler the declared headers by the contract's names, whatever their case on the wire", async () => {
      const body = { symbols: ['AAPL'] };
      const res = await request(headersApp())
        .post('/api/products/news')
        .set(signed('POST', '/api/products/news', body))
        .set('idempotency-key', 'order-1')
        .set('CACHE-CONTROL', 'no-cache')
        .set('X-Other', 'not declared')
        .send(body)
        .expect(200);
      expect(res.body).toEqual({ headers: { 'Idempotency-Key': 'order-1', 'Cache-Control': 'no-cache' } });
    });

    it('leaves a header that was not sent undefined', async () => {
      const res = await post(headersApp(), '/api/products/news', { symbols: ['AAPL'] }).expect(200);
      expect(res.body).toEqual({ headers: {} });
    });

    it('refuses a malformed header with 400 naming the header as the contract writes it', async () => {
      const body = { symbols: ['AAPL'] };
      for (const bad of ['bad key with spaces', 'x'.repeat(256), '']) {
        const res = await request(headersApp())
          .post('/api/products/news')
          .set(signed('POST', '/api/products/news', body))
          .set('Idempotency-Key', bad)
          .send(body)
          .expect(400);
        expect(res.body).toEqual({
          detail: 'Idempotency-Key: must be 1 to 255 visible ASCII characters.',
          status_code: 400,
          type: 'validation_error',
        });
      }
    });

    it('reports a bad header together with a bad body', async () => {
      const body = { symbols: ['AAPL'], n: 0 };
      const res = errorOf(
        await request(headersApp())
          .post('/api/products/news')
          .set(signed('POST', '/api/products/news', body))
          .set('Idempotency-Key', 'a b')
          .send(body)
          .expect(400),
      );
      expect(res.detail).toBe('n: must be at least 1; Idempotency-Key: must be 1 to 255 visible ASCII characters.');
    });
  });

  describe('the caller', () => {
    it('is the identity the gateway signed', async () => {
      const app = appWith((a) => route(a, API_ROUTES.createNews, ({ caller }) => ({ caller })));
      await post(app, '/api/products/news', { symbols: ['AAPL'] }).expect(200, { caller: CALLER });
    });

    it('is required on a keyed route: an anonymous request is refused with 401 before the handler', async () => {
      let called = false;
      const app = appWith(
        (a) =>
          route(a, API_ROUTES.createNews, () => {
            called = true;
            return {};
          }),
        { allowAnonymous: true },
      );
      const res = errorOf(await post(app, '/api/products/news', { symbols: ['AAPL'] }, null).expect(401));
      expect(res.type).toBe('unauthorized');
      expect(called).toBe(false);
    });

    it('is null on a route that needs no key, for an anonymous request', async () => {
      const entry = { method: 'get', path: '/portal/whoami', scope: null } as const satisfies RouteEntry;
      const app = appWith((a) => route(a, entry, ({ caller }) => ({ caller })), { allowAnonymous: true });
      await get(app, '/portal/whoami', null).expect(200, { caller: null });
      await get(app, '/portal/whoami').expect(200, { caller: CALLER });
    });

    it('needs the verifier mounted before the route: without it the request fails as a wiring mistake (500)', async () => {
      const { logger } = captureLogger();
      const app = express();
      route(app, { method: 'get', path: '/unverified', scope: null }, () => ({}));
      app.use(errorHandler({ logger }));
      await request(app).get('/unverified').expect(500);
    });
  });

  it("types the handler's input from the entry", () => {
    // Compile-time checks (the test project is type-checked): each part has its schema's output type.
    const router = express.Router();
    route(router, API_ROUTES.createNews, ({ body, headers, caller, params, query }) => {
      const symbols: string[] = body.symbols;
      const key: string | undefined = headers['Idempotency-Key'];
      const tenant: string = caller.tenantId;
      const none: undefined = params ?? query;
      // @ts-expect-error: createNews declares no such field
      const _unknown: unknown = body.symbol;
      return { symbols, key, tenant, none };
    });
    route(router, { method: 'get', path: '/anonymous', scope: null }, ({ caller }) => {
      // @ts-expect-error: on a route without a key the caller may be null
      const _tenant: string = caller.tenantId;
      return caller?.tenantId;
    });
    expect(router.stack).toHaveLength(2);
  });

  it("runs the route's own middleware first, before its input is checked", async () => {
    const order: string[] = [];
    const app = appWith((a) =>
      route(
        a,
        API_ROUTES.createNews,
        () => {
          order.push('handler');
          return {};
        },
        {
          before: [
            (req, res, next) => {
              order.push('before');
              if (req.get('X-Refuse') === 'yes') res.status(403).json({ refused: true });
              else next();
            },
          ],
        },
      ),
    );
    await post(app, '/api/products/news', { symbols: ['AAPL'] }).expect(200);
    expect(order).toEqual(['before', 'handler']);
    // Refused by the middleware: the invalid body is never looked at.
    await request(app)
      .post('/api/products/news')
      .set(signed('POST', '/api/products/news', { symbols: [] }))
      .set('X-Refuse', 'yes')
      .send({ symbols: [] })
      .expect(403, { refused: true });
    expect(order).toEqual(['before', 'handler', 'before']);
  });

  it('passes what the handler throws to the error translator', async () => {
    const app = appWith((a) =>
      route(a, API_ROUTES.createCustomerTool, async () => {
        await Promise.resolve();
        throw conflict('A tool named get_positions already exists.');
      }),
    );
    const tool = {
      name: 'get_positions',
      description: 'Positions.',
      endpoint: 'https://api.example.com/p',
      input_schema: { type: 'object' },
    };
    const res = await post(app, '/api/customer-tools/', tool, { ...CALLER, scopes: ['tools'] }).expect(409);
    expect(res.body).toEqual({ detail: 'A tool named get_positions already exists.', status_code: 409, type: 'conflict' });
  });

  it('gives the handler the request id (the signed one, the only one) and the request logger', async () => {
    const app = appWith((a) =>
      route(a, API_ROUTES.listCustomerTools, (_input, { requestId, logger }) => ({ requestId, hasLogger: logger !== undefined })),
    );
    const res = await get(app, '/api/customer-tools/').expect(200, { requestId: 'req-1', hasLogger: true });
    expect(res.headers['x-request-id']).toBe('req-1');
  });

  it("sets the entry's Cache-Control on a success only, never on an error", async () => {
    const caller = { ...CALLER, scopes: ['filings'] };
    const filing = '0000320193-25-000079';
    const app = appWith((a) =>
      route(a, API_ROUTES.getFiling, ({ params }) => {
        if (params.accession !== filing) throw conflict('Not this one.');
        return { accession: params.accession };
      }),
    );
    const ok = await get(app, `/api/filings/${filing}?symbol=AAPL`, caller).expect(200);
    expect(ok.headers['cache-control']).toBe(API_ROUTES.getFiling.cacheControl);
    const refused = await get(app, '/api/filings/0000320193-25-000080?symbol=AAPL', caller).expect(409);
    expect(refused.headers['cache-control']).toBeUndefined();
    const invalid = await get(app, `/api/filings/${filing}`, caller).expect(400);
    expect(invalid.headers['cache-control']).toBeUndefined();
  });
});
