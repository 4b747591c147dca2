// The in-process upstream (npm start) calls a unit's handler with the caller it is given, as an argument, and hands
// the portal's pages the request as the HTTP hop would: with the client's address appended to X-Forwarded-For, so
// that the portal's throttles count the address the gateway saw.
import { createLifecycle, errorHandler, hasIdentity, type Caller, type HandlerTable, type ServiceUnit } from '@fin/http';
import express from 'express';
import request from 'supertest';
import { inProcessUpstream } from '../src/upstream';
import { GATEWAY_ROUTES, type UpstreamName } from '../src/routes';
import { logger } from './support/harness';

function unit(name: string, handlers: HandlerTable): ServiceUnit {
  return { name, handlers, readiness: async () => {}, lifecycle: createLifecycle(), start: async () => {}, closers: [] };
}

function portalEchoingForwardedFor(): ServiceUnit {
  const router = express.Router();
  router.all('/{*rest}', (req, res) => {
    res.json({ forwardedFor: req.headers['x-forwarded-for'] ?? null });
  });
  return {
    name: 'portal',
    handlers: {},
    pages: { prefix: '/portal', router },
    readiness: async () => {},
    lifecycle: createLifecycle(),
    start: async () => {},
    closers: [],
  };
}

describe('the in-process upstream', () => {
  const upstream = inProcessUpstream({ units: { portal: portalEchoingForwardedFor() } as unknown as Record<UpstreamName, ServiceUnit> });
  const app = express();
  app.use('/portal', ...upstream.pages('/portal', 'portal'));

  it("appends the client's address to X-Forwarded-For, after any the client sent, as the HTTP hop does", async () => {
    const spoofed = await request(app).get('/portal/login').set('X-Forwarded-For', '203.0.113.9').expect(200);
    expect(spoofed.body).toEqual({ forwardedFor: expect.stringMatching(/^203\.0\.113\.9, (::ffff:)?127\.0\.0\.1$/) as unknown });
    const plain = await request(app).get('/portal/login').expect(200);
    expect(plain.body).toEqual({ forwardedFor: expect.stringMatching(/^(::ffff:)?127\.0\.0\.1$/) as unknown });
  });

  it('calls the handler with the caller as an argument, spent budget included, and leaves nothing on the response', async () => {
    const seen: { caller: unknown; identityOnResponse: boolean }[] = [];
    const jobs = unit('jobs', {
      getJobStatus: ({ caller, params }, { res }) => {
        seen.push({ caller, identityOnResponse: hasIdentity(res) });
        return { job_id: params.job_id, status: 'pending', progress: 0, currently_working_on: null };
      },
    });
    const route = GATEWAY_ROUTES.find(({ id }) => id === 'getJobStatus')!;
    const jobsUpstream = inProcessUpstream({ units: { jobs } as unknown as Record<UpstreamName, ServiceUnit> });
    const spent = { limit: 1_000, used: 1_200, held: 0, resetAt: 1_767_225_600 };
    const callers: Caller[] = [
      { tenantId: 'tenant-a', keyId: 'key-a', scopes: ['news'] },
      { tenantId: 'tenant-b', keyId: 'key-b', scopes: ['news'], spentBudget: spent },
    ];
    const gateway = express();
    gateway.get(route.expressPath, (req, res, next) => {
      jobsUpstream.call(route, callers[Number(req.query.who)]!, req, res).catch(next);
    });
    gateway.use(errorHandler({ logger }));
    const jobId = '3fa85f64-5717-4562-b3fc-2c963f66afa6';
    for (const who of [0, 1]) await request(gateway).get(`/api/jobs/news/${jobId}/status?who=${who}`).expect(200);
    expect(seen).toEqual(callers.map((caller) => ({ caller, identityOnResponse: false })));
  });
});
