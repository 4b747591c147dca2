import express from 'express';
import request from 'supertest';
import {
  GATEWAY_ONLY_DETAIL,
  IDENTITY_HEADERS,
  checkBodyDigest,
  errorHandler,
  identityKey,
  identityOf,
  jsonBody,
  requestContext,
  signIdentity,
  verifyIdentity,
  type InternalIdentity,
} from '../src';
import { captureLogger } from './helpers';

const SECRET = 'test-secret-that-is-at-least-32-characters-long';
const KEY = identityKey(SECRET, 'news');
const NOW = 1_767_225_600_000;
const identity: InternalIdentity = {
  requestId: 'req-1',
  caller: {
    tenantId: '6f1c2b8e-0d3a-4e5f-9a7b-1c2d3e4f5a6b',
    keyId: '0b9a8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d',
    scopes: ['news', 'stock-report'],
  },
};

function service(options: Parameters<typeof verifyIdentity>[1] = {}) {
  const { logger, lines } = captureLogger();
  const app = express();
  app.use(requestContext({ logger }));
  app.use(verifyIdentity(KEY, { now: () => NOW, logger, ...options }));
  app.all('/api/products/news', (_req, res) => void res.json(identityOf(res)));
  app.use(errorHandler({ logger }));
  return { app, lines };
}

const refused = { detail: GATEWAY_ONLY_DETAIL, status_code: 401, type: 'unauthorized' };

describe('signed internal identity', () => {
  it('verifies what signIdentity signed and hands the service the identity', async () => {
    const headers = signIdentity(identity, KEY, { method: 'POST', path: '/api/products/news' }, NOW);
    const res = await request(service().app).post('/api/products/news').set(headers).expect(200);
    expect(res.body).toEqual(identity);
  });

  it("names the caller's tenant on the request's log lines once the identity is verified", async () => {
    const { app, lines } = service();
    const headers = signIdentity(identity, KEY, { method: 'POST', path: '/api/products/news' }, NOW);
    await request(app).post('/api/products/news').set(headers).expect(200);
    expect(lines.find((line) => line.msg === 'request completed')).toMatchObject({ tenantId: identity.caller?.tenantId });
  });

  it('refuses a request without identity headers (a service reached directly)', async () => {
    const { app, lines } = service();
    const res = await request(app).post('/api/products/news').expect(401);
    expect(res.body).toEqual(refused);
    expect(lines.find((line) => line.reason !== undefined)).toMatchObject({ level: 'warn', reason: 'missing identity headers' });
  });

  it.each([
    ['another tenant', { 'x-fin-tenant-id': '11111111-2222-4333-8444-555555555555' }],
    ['more scopes', { 'x-fin-scopes': 'news,stock-report,analysis' }],
    ['another request id', { 'x-request-id': 'req-2' }],
    ['another nonce', { 'x-fin-nonce': 'b2c4f1de-5a3e-4f7b-9c1d-2e3f4a5b6c7d' }],
    ['another body', { 'x-fin-body-sha256': 'ab'.repeat(32) }],
    ['a later timestamp', { 'x-fin-timestamp': String(NOW + 1) }],
    ['a malformed signature', { 'x-fin-signature': 'not-hex' }],
    ['a short signature', { 'x-fin-signature': 'ab' }],
  ])('refuses headers altered to claim %s', async (_case, change) => {
    const headers = { ...signIdentity(identity, KEY, { method: 'POST', path: '/api/products/news' }, NOW), ...change };
    const res = await request(service().app).post('/api/products/news').set(headers).expect(401);
    expect(res.body).toEqual(refused);
  });

  it('carries a spent daily budget signed, which cannot be added, removed or altered on the way', async () => {
    const spentBudget = { limit: 1_000, used: 1_200, held: 17_000, resetAt: 1_767_312_000 };
    const spent: InternalIdentity = { ...identity, caller: { ...identity.caller!, spentBudget } };
    const signed = signIdentity(spent, KEY, { method: 'POST', path: '/api/products/news' }, NOW);
    expect(signed[IDENTITY_HEADERS.spentBudget]).toBe('1000:1200:17000:1767312000');
    expect((await request(service().app).post('/api/products/news').set(signed).expect(200)).body).toEqual(spent);
    const { [IDENTITY_HEADERS.spentBudget]: _removed, ...withoutIt } = signed;
    await request(service().app).post('/api/products/news').set(withoutIt).expect(401);
    await request(service().app)
      .post('/api/products/news')
      .set({ ...signed, [IDENTITY_HEADERS.spentBudget]: '1000:0:0:1767312000' })
      .expect(401);
    const plain = signIdentity(identity, KEY, { method: 'POST', path: '/api/products/news' }, NOW);
    await request(service().app)
      .post('/api/products/news')
      .set({ ...plain, [IDENTITY_HEADERS.spentBudget]: '1000:1200:0:1767312000' })
      .expect(401);
  });

  it('refuses a signature made with another secret', async () => {
    const headers = signIdentity(
      identity,
      identityKey('another-secret-that-is-also-32-characters', 'news'),
      { method: 'POST', path: '/api/products/news' },
      NOW,
    );
    await request(service().app).post('/api/products/news').set(headers).expect(401);
  });

  it('refuses headers replayed on another method or path', async () => {
    const signedFor = signIdentity(identity, KEY, { method: 'GET', path: '/api/products/news' }, NOW);
    await request(service().app).post('/api/products/news').set(signedFor).expect(401);
    const otherPath = signIdentity(identity, KEY, { method: 'POST', path: '/api/products/news?x=1' }, NOW);
    await request(service().app).post('/api/products/news').set(otherPath).expect(401);
  });

  it('accepts a signature within the allowed skew and refuses a stale or future one', async () => {
    const { app } = service({ maxSkewMs: 30_000 });
    const at = (time: number) => signIdentity(identity, KEY, { method: 'POST', path: '/api/products/news' }, time);
    await request(app)
      .post('/api/products/news')
      .set(at(NOW - 30_000))
      .expect(200);
    await request(app)
      .post('/api/products/news')
      .set(at(NOW + 30_000))
      .expect(200);
    await request(app)
      .post('/api/products/news')
      .set(at(NOW - 30_001))
      .expect(401);
    await request(app)
      .post('/api/products/news')
      .set(at(NOW + 30_001))
      .expect(401);
  });

  it('refuses a request forwarded without a caller unless the route allows anonymous requests', async () => {
    const anonymous: InternalIdentity = { requestId: 'req-3', caller: null };
    const headers = signIdentity(anonymous, KEY, { method: 'GET', path: '/api/products/news' }, NOW);
    await request(service().app).get('/api/products/news').set(headers).expect(401);

    const allowing = service({ allowAnonymous: true }).app;
    const res = await request(allowing).get('/api/products/news').set(headers).expect(200);
    expect(res.body).toEqual(anonymous);
  });

  it('will not sign a field that could break the header format', () => {
    expect(() =>
      signIdentity({ requestId: 'r', caller: { tenantId: 't', keyId: 'k', scopes: ['news,admin'] } }, KEY, { method: 'GET', path: '/' }),
    ).toThrow(TypeError);
    expect(() => signIdentity({ requestId: 'a b', caller: null }, KEY, { method: 'GET', path: '/' })).toThrow(TypeError);
  });

  it('refuses headers missing the nonce or the body digest', async () => {
    for (const name of [IDENTITY_HEADERS.nonce, IDENTITY_HEADERS.bodyDigest]) {
      const { [name]: _dropped, ...headers } = signIdentity(identity, KEY, { method: 'POST', path: '/api/products/news' }, NOW);
      await request(service().app).post('/api/products/news').set(headers).expect(401);
    }
  });
});

describe('the signed body', () => {
  const body = { topic: 'rates', limit: 5 };
  const signed = (sent: unknown) =>
    signIdentity(identity, KEY, { method: 'POST', path: '/api/products/news', body: JSON.stringify(sent) }, NOW);

  /** The parser before verifyIdentity, as createServiceApp mounts it, or after it, as the portal's API does. */
  function withParser(order: 'parser first' | 'verifier first') {
    const { logger, lines } = captureLogger();
    const app = express();
    app.use(requestContext({ logger }));
    const verify = verifyIdentity(KEY, { now: () => NOW, logger });
    if (order === 'parser first') app.use(jsonBody(), verify);
    else app.use(verify, jsonBody());
    app.post('/api/products/news', (req, res) => {
      const sent: unknown = req.body;
      res.json({ body: sent, identity: identityOf(res) });
    });
    app.use(errorHandler({ logger }));
    return { app, lines };
  }

  it.each(['parser first', 'verifier first'] as const)('is accepted exactly as signed (%s)', async (order) => {
    const res = await request(withParser(order).app).post('/api/products/news').set(signed(body)).send(body).expect(200);
    expect(res.body).toEqual({ body, identity });
  });

  it.each(['parser first', 'verifier first'] as const)(
    'refuses a body altered after signing, before the handler runs (%s)',
    async (order) => {
      const { app, lines } = withParser(order);
      const res = await request(app)
        .post('/api/products/news')
        .set(signed(body))
        .send({ ...body, topic: "someone else's" })
        .expect(401);
      expect(res.body).toEqual(refused);
      expect(lines.find((line) => line.reason !== undefined)).toMatchObject({
        level: 'warn',
        reason: 'body does not match its signed digest',
      });
    },
  );

  it.each(['parser first', 'verifier first'] as const)('refuses a body added to a request signed without one (%s)', async (order) => {
    const headers = signIdentity(identity, KEY, { method: 'POST', path: '/api/products/news' }, NOW);
    await request(withParser(order).app).post('/api/products/news').set(headers).send(body).expect(401);
  });

  it('refuses a body dropped from a request signed with one', async () => {
    await request(withParser('verifier first').app).post('/api/products/news').set(signed(body)).expect(401);
  });

  it('checks the bytes any parser reads, not only JSON (checkBodyDigest as its verify option)', async () => {
    const { logger } = captureLogger();
    const app = express();
    app.use(
      verifyIdentity(KEY, { now: () => NOW, allowAnonymous: true }),
      express.urlencoded({ extended: false, verify: checkBodyDigest }),
    );
    app.post('/portal/login', (req, res) => {
      const form: unknown = req.body;
      res.json(form);
    });
    app.use(errorHandler({ logger }));
    const form = 'api_key=fin_abc&csrf=t';
    const headers = signIdentity({ requestId: 'r', caller: null }, KEY, { method: 'POST', path: '/portal/login', body: form }, NOW);
    await request(app).post('/portal/login').set(headers).type('form').send(form).expect(200, { api_key: 'fin_abc', csrf: 't' });
    const again = signIdentity({ requestId: 'r', caller: null }, KEY, { method: 'POST', path: '/portal/login', body: form }, NOW);
    await request(app).post('/portal/login').set(again).type('form').send('api_key=fin_other&csrf=t').expect(401);
  });
});

describe('replayed requests', () => {
  it('refuses a signed request sent a second time, whatever its timestamp says', async () => {
    const { app, lines } = service();
    const headers = signIdentity(identity, KEY, { method: 'POST', path: '/api/products/news' }, NOW);
    await request(app).post('/api/products/news').set(headers).expect(200);
    expect((await request(app).post('/api/products/news').set(headers).expect(401)).body).toEqual(refused);
    expect(lines.find((line) => line.reason !== undefined)).toMatchObject({ reason: 'nonce already used (a replayed request)' });
  });

  it('accepts the same identity and request id signed again (a new nonce each time)', async () => {
    const { app } = service();
    for (let attempt = 0; attempt < 3; attempt++) {
      await request(app)
        .post('/api/products/news')
        .set(signIdentity(identity, KEY, { method: 'POST', path: '/api/products/news' }, NOW))
        .expect(200);
    }
  });

  it('does not let a forged request use up the nonce of a real one', async () => {
    const { app } = service();
    const headers = signIdentity(identity, KEY, { method: 'POST', path: '/api/products/news' }, NOW);
    await request(app)
      .post('/api/products/news')
      .set({ ...headers, 'x-fin-tenant-id': '11111111-2222-4333-8444-555555555555' })
      .expect(401);
    await request(app).post('/api/products/news').set(headers).expect(200);
  });

  it('remembers a nonce until no signature with it can be fresh, then forgets it', async () => {
    let now = NOW;
    const { logger } = captureLogger();
    const app = express();
    app.use(verifyIdentity(KEY, { now: () => now, maxSkewMs: 1_000, logger }));
    app.post('/api/products/news', (_req, res) => void res.json({}));
    app.use(errorHandler({ logger }));
    // Signed a second ahead of this clock: still fresh until NOW + 2 s.
    const headers = signIdentity(identity, KEY, { method: 'POST', path: '/api/products/news' }, NOW + 1_000);
    await request(app).post('/api/products/news').set(headers).expect(200);
    now = NOW + 1_999;
    await request(app).post('/api/products/news').set(headers).expect(401);
    now = NOW + 2_500;
    // Stale by now: refused for that reason, whether or not the nonce is still remembered.
    await request(app).post('/api/products/news').set(headers).expect(401);
  });

  it('keeps at most maxRememberedNonces, forgetting the oldest first', async () => {
    const { app } = service({ maxRememberedNonces: 2 });
    const first = signIdentity(identity, KEY, { method: 'POST', path: '/api/products/news' }, NOW);
    const second = signIdentity(identity, KEY, { method: 'POST', path: '/api/products/news' }, NOW);
    const third = signIdentity(identity, KEY, { method: 'POST', path: '/api/products/news' }, NOW);
    for (const headers of [first, second, third]) await request(app).post('/api/products/news').set(headers).expect(200);
    await request(app).post('/api/products/news').set(third).expect(401);
    await request(app).post('/api/products/news').set(second).expect(401);
    await request(app).post('/api/products/news').set(first).expect(200);
  });
});

describe('keys per service', () => {
  it("refuses a signature made with another service's key derived from the same secret", async () => {
    const { app, lines } = service();
    const headers = signIdentity(identity, identityKey(SECRET, 'chat'), { method: 'POST', path: '/api/products/news' }, NOW);
    await request(app).post('/api/products/news').set(headers).expect(401);
    expect(lines.find((line) => line.reason !== undefined)).toMatchObject({ reason: 'signature mismatch' });
  });

  it('derives the same key from the same secret and name (gateway and service agree), and shows nothing of it when logged', async () => {
    const { app } = service();
    const headers = signIdentity(identity, identityKey(SECRET, 'news'), { method: 'POST', path: '/api/products/news' }, NOW);
    await request(app).post('/api/products/news').set(headers).expect(200);
    expect(JSON.stringify(identityKey(SECRET, 'news'))).not.toContain(SECRET);
    expect(JSON.stringify(identityKey(SECRET, 'news'))).toBe('{"service":"news","key":{}}');
  });

  it('needs a secret and a service name', () => {
    expect(() => identityKey('', 'news')).toThrow(TypeError);
    expect(() => identityKey(SECRET, '')).toThrow(TypeError);
  });
});
