// The servers the gateway-overhead scenario measures besides the gateway itself, each run as a process of its
// own (`BENCH_ROLE` picks which):
//
// - news:  a stand-in for the news service's API role on a cache hit. It is built like the real services are
//          (createServiceApp: request ids, per-request logger, JSON body parsing, the error translator;
//          verifyIdentity; route() validating the request against the createNews contract entry) and answers the
//          fixed completed response. The real service would also look the request up in the Postgres cache;
//          leaving that out makes the service as cheap as it can be, so the gateway's share is the largest it
//          can be (a worst case for the ratio).
// - bare:  an empty express 5 application with one handler sending the same body: the ceiling of express on
//          this Node and machine.
import { API_ROUTES } from '@fin/contracts';
import { createServiceApp, identityKey, route, verifyIdentity } from '@fin/http';
import { createLogger } from '@fin/log';
import express from 'express';
import { NEWS_PATH, NEWS_RESPONSE } from './fixture';

function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
}

function newsStandIn(): express.Express {
  const logger = createLogger({ service: 'news-stand-in', level: required('LOG_LEVEL') });
  const secret = required('INTERNAL_SIGNING_SECRET');
  // The direct measurement signs every request anew, as the gateway does.
  const maxSkewMs = Number(required('BENCH_MAX_SKEW_MS'));
  return createServiceApp({
    name: 'news',
    logger,
    readiness: () => Promise.resolve(),
    routes: (app) => {
      app.use(NEWS_PATH, verifyIdentity(identityKey(secret, 'news'), { maxSkewMs, logger }));
      route(app, API_ROUTES.createNews, () => NEWS_RESPONSE);
    },
  });
}

function bareExpress(): express.Express {
  const app = express();
  app.post(NEWS_PATH, (_req, res) => {
    res.json(NEWS_RESPONSE);
  });
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  return app;
}

function main(): void {
  const role = required('BENCH_ROLE');
  const port = Number(required('PORT'));
  const app = role === 'news' ? newsStandIn() : role === 'bare' ? bareExpress() : undefined;
  if (app === undefined) throw new Error(`BENCH_ROLE must be news or bare, got ${role}`);
  const server = app.listen(port, '127.0.0.1');
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main();
