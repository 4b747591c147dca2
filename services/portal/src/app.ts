// The portal's HTTP app: the customer-tools and webhooks APIs (JSON, signed caller required) and the web portal under
// /portal (HTML forms, anonymous through the gateway, its own cookie sessions). createApp never listens.
import { createServiceApp, identityKey, jsonBody, verifyIdentity, type Lifecycle } from '@fin/http';
import type express from 'express';
import { mountCustomerToolsApi } from './api';
import { mountWebhooksApi } from './webhooks-api';
import { portalRoutes, type PortalDeps } from './web/routes';

export interface PortalAppDeps extends PortalDeps {
  lifecycle?: Lifecycle;
}

export function createApp(deps: PortalAppDeps): express.Express {
  const { pool, logger, lifecycle, signingSecret } = deps;
  return createServiceApp({
    name: 'portal',
    logger,
    readiness: async () => {
      await pool.query('SELECT 1');
    },
    ...(lifecycle === undefined ? {} : { lifecycle }),
    // The API takes JSON and the web portal takes forms: each mounts its own body parser.
    jsonBodyLimit: false,
    routes: (app) => {
      app.use('/portal', portalRoutes(deps));
      app.use('/api', verifyIdentity(identityKey(signingSecret, 'portal'), { logger }), ...jsonBody());
      mountCustomerToolsApi(app, deps);
      mountWebhooksApi(app, deps);
    },
  });
}
