import express from 'express';
import request from 'supertest';
import { GATEWAY_ONLY_DETAIL, callerOf, errorHandler, identityOf, requestContext, signIdentity, verifyIdentity, type InternalIdentity } from '../src';
import { captureLogger } from './helpers';

const SECRET = 'test-secret-that-is-at-least-32-characters-long';
const NOW = 1_767_225_600_000;
const identity: InternalIdentity = {
  requestId: 'req-1',
  caller: { tenantId: '6f1c2b8e-0d3a-4e5f-9a7b-1c2d3e4f5a6b', keyId: '0b9a8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d', scopes: ['news', 'stock-report'] },
};

function service(options: Parameters<typeof verifyIdentity>[1] = {}) {
  const { logger, lines } = captureLogger();
  const app = express();
  app.use(requestContext({ logger }));
  app.use(verifyIdentity(SECRET, { now: () => NOW, logger, ...options }));
  app.all('/api/products/news', (_req, res) => void res.json(identityOf(res)));
  app.get('/needs-caller', (_req, res) => void res.json(callerOf(res)));
  app.use(errorHandler({ logger }));
  return { app, lines };
}

const refused = { detail: GATEWAY_ONLY_DETAIL, status_code: 401, type: 'unauthorized' };

describe('signed internal identity', () => {
  it('verifies what signIdentity signed and hands the service the identity', async () => {
    const headers = signIdentity(identity, SECRET, { method: 'POST', path: '/api/products/news' }, NOW);
    const res = await request(service().app).post('/api/products/news').set(headers).expect(200);
    expect(res.body).toEqual(identity);
  });

  it('names the caller\'s tenant on the request\'s log lines once the identity is verified', async () => {
    const { app, lines } = service();
    const headers = signIdentity(identity, SECRET, { method: 'POST', path: '/api/products/news' }, NOW);
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
    ['another request id', { 'x-fin-request-id': 'req-2' }],
    ['a later timestamp', { 'x-fin-timestamp': String(NOW + 1) }],
    ['a malformed signature', { 'x-fin-signature': 'not-hex' }],
    ['a short signature', { 'x-fin-signature': 'ab' }],
  ])('refuses headers altered to claim %s', async (_case, change) => {
    const headers = { ...signIdentity(identity, SECRET, { method: 'POST', path: '/api/products/news' }, NOW), ...change };
    const res = await request(service().app).post('/api/products/news').set(headers).expect(401);
    expect(res.body).toEqual(refused);
  });

  it('refuses a signature made with another secret', async () => {
    const headers = signIdentity(identity, 'another-secret-that-is-also-32-characters', { method: 'POST', path: '/api/products/news' }, NOW);
    await request(service().app).post('/api/products/news').set(headers).expect(401);
  });

  it('refuses headers replayed on another method or path', async () => {
    const signedFor = signIdentity(identity, SECRET, { method: 'GET', path: '/api/products/news' }, NOW);
    await request(service().app).post('/api/products/news').set(signedFor).expect(401);
    const otherPath = signIdentity(identity, SECRET, { method: 'POST', path: '/api/products/news?x=1' }, NOW);
    await request(service().app).post('/api/products/news').set(otherPath).expect(401);
  });

  it('accepts a signature within the allowed skew and refuses a stale or future one', async () => {
    const { app } = service({ maxSkewMs: 30_000 });
    const at = (time: number) => signIdentity(identity, SECRET, { method: 'POST', path: '/api/products/news' }, time);
    await request(app).post('/api/products/news').set(at(NOW - 30_000)).expect(200);
    await request(app).post('/api/products/news').set(at(NOW + 30_000)).expect(200);
    await request(app).post('/api/products/news').set(at(NOW - 30_001)).expect(401);
    await request(app).post('/api/products/news').set(at(NOW + 30_001)).expect(401);
  });

  it('refuses a request forwarded without a caller unless the route allows anonymous requests', async () => {
    const anonymous: InternalIdentity = { requestId: 'req-3', caller: null };
    const headers = signIdentity(anonymous, SECRET, { method: 'GET', path: '/api/products/news' }, NOW);
    await request(service().app).get('/api/products/news').set(headers).expect(401);

    const allowing = service({ allowAnonymous: true }).app;
    const res = await request(allowing).get('/api/products/news').set(headers).expect(200);
    expect(res.body).toEqual(anonymous);
    const needsCaller = signIdentity(anonymous, SECRET, { method: 'GET', path: '/needs-caller' }, NOW);
    expect((await request(allowing).get('/needs-caller').set(needsCaller).expect(401)).body).toEqual(refused);
  });

  it('will not sign a field that could break the header format', () => {
    expect(() => signIdentity({ requestId: 'r', caller: { tenantId: 't', keyId: 'k', scopes: ['news,admin'] } }, SECRET, { method: 'GET', path: '/' })).toThrow(TypeError);
    expect(() => signIdentity({ requestId: 'a b', caller: null }, SECRET, { method: 'GET', path: '/' })).toThrow(TypeError);
  });
});
