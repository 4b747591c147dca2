// The in-process upstream (npm start) hands the portal's pages the request as the HTTP hop would: with the client's
// address appended to X-Forwarded-For, so that the portal's throttles count the address the gateway saw.
import { createLifecycle, type ServiceUnit } from '@fin/http';
import express from 'express';
import request from 'supertest';
import { inProcessUpstream } from '../src/upstream';
import type { UpstreamName } from '../src/routes';

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
});
