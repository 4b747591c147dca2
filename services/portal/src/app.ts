// The portal's handlers (the customer-tools and webhooks APIs: JSON, a caller required) and its pages (the web
// portal under /portal: HTML forms, anonymous through the gateway, its own cookie sessions). createApp never listens.
import { createHandlerApp, createLifecycle, type HandlerTable, type Lifecycle } from '@fin/http';
import type express from 'express';
import { customerToolsHandlers } from './api';
import { webhooksHandlers } from './webhooks-api';
import { portalRoutes, type PortalDeps } from './web/routes';

export interface PortalAppDeps extends PortalDeps {
  lifecycle?: Lifecycle;
}

/** The customer-tools and webhooks APIs, by route id. */
export function createPortalHandlers(deps: PortalDeps): HandlerTable {
  return { ...customerToolsHandlers(deps), ...webhooksHandlers(deps) };
}

/** The portal as an HTTP app of its own: its pages, and its handlers behind the gateway's signed identity. */
export function createApp(deps: PortalAppDeps): express.Express {
  const { pool, logger, lifecycle = createLifecycle(), signingSecret } = deps;
  return createHandlerApp(
    {
      name: 'portal',
      handlers: createPortalHandlers(deps),
      pages: { prefix: '/portal', router: portalRoutes(deps) },
      readiness: async () => {
        await pool.query('SELECT 1');
      },
      lifecycle,
      start: async () => {},
      closers: [],
    },
    { logger, signingSecret },
  );
}
