// The portal's handlers (the customer-tools and webhooks APIs: JSON, a caller required); its pages (the web portal
// under /portal: HTML forms, anonymous through the gateway, its own cookie sessions) are web/routes.ts.
import type { HandlerTable } from '@fin/http';
import { customerToolsHandlers } from './api';
import { webhooksHandlers } from './webhooks-api';
import type { PortalDeps } from './web/routes';

/** The customer-tools and webhooks APIs, by route id. */
export function createPortalHandlers(deps: PortalDeps): HandlerTable {
  return { ...customerToolsHandlers(deps), ...webhooksHandlers(deps) };
}
