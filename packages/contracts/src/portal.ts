// The web portal's pages (/portal): a browser application beside the API, not part of it (the gateway passes it
// through without a key, and it is not in the OpenAPI document). Its routes are declared like the API's, with
// route() of @fin/http, from the entries below. Paths are relative to /portal, where the portal's router is mounted.
//
// The forms arrive as application/x-www-form-urlencoded: each field a string, or a list when its name is repeated.
// The schemas never refuse a form (a form that is not an object reads as empty): a page checks each field itself
// and shows the problems on the page, as a browser expects, rather than answering a 400 body.
import { z } from 'zod';
import type { RouteEntry } from './routes';

/** One field as sent: absent, a value, or every value of a repeated name. */
const FormValue = z.union([z.string(), z.array(z.string())]).optional();

/**
 * The portal's forms: every field optional, and a body that is not an object read as an empty form. Any form of a
 * signed-in page carries the session's CSRF token.
 */
export const PortalForm = z
  .object({ csrf: FormValue })
  .catch({})
  .meta({ id: 'PortalForm', description: 'A form of a signed-in portal page, as far as every such form goes: its CSRF token.' });

const PortalSignInForm = z.object({ csrf: FormValue, api_key: FormValue }).catch({});

/** The customer-tool form (new and edit); the page reads it into a CustomerToolCreateRequest. */
const PortalToolForm = z
  .object({
    csrf: FormValue,
    name: FormValue,
    description: FormValue,
    endpoint: FormValue,
    method: FormValue,
    input_schema: FormValue,
    headers: FormValue,
    clear_headers: FormValue,
    enabled: FormValue,
    timeout_ms: FormValue,
    products: FormValue,
  })
  .catch({});

const PortalToolEnabledForm = z.object({ csrf: FormValue, enabled: FormValue }).catch({});
const PortalToolTestForm = z.object({ csrf: FormValue, input: FormValue }).catch({});
const PortalKeyForm = z.object({ csrf: FormValue, name: FormValue, scopes: FormValue }).catch({});
/** The webhook endpoint form; the page reads it into a WebhookCreateRequest. */
const PortalWebhookForm = z.object({ csrf: FormValue, url: FormValue, events: FormValue, description: FormValue }).catch({});

/** A tool's or key's id in a page path; a page shows "not found" for one that is not a UUID. */
const PortalIdParams = z.object({ id: z.string() });
const PortalDeliveryParams = z.object({ id: z.string(), delivery_id: z.string() });

export const PORTAL_PAGES = {
  home: { method: 'get', path: '/', scope: null },
  signInPage: { method: 'get', path: '/login', scope: null },
  signIn: { method: 'post', path: '/login', scope: null, request: { body: PortalSignInForm } },
  signOut: { method: 'post', path: '/logout', scope: null, request: { body: PortalForm } },
  tools: { method: 'get', path: '/tools', scope: null },
  newTool: { method: 'get', path: '/tools/new', scope: null },
  createTool: { method: 'post', path: '/tools', scope: null, request: { body: PortalToolForm } },
  editTool: { method: 'get', path: '/tools/{id}/edit', scope: null, request: { params: PortalIdParams } },
  updateTool: { method: 'post', path: '/tools/{id}', scope: null, request: { params: PortalIdParams, body: PortalToolForm } },
  setToolEnabled: {
    method: 'post',
    path: '/tools/{id}/enabled',
    scope: null,
    request: { params: PortalIdParams, body: PortalToolEnabledForm },
  },
  deleteTool: { method: 'post', path: '/tools/{id}/delete', scope: null, request: { params: PortalIdParams, body: PortalForm } },
  testToolPage: { method: 'get', path: '/tools/{id}/test', scope: null, request: { params: PortalIdParams } },
  testTool: { method: 'post', path: '/tools/{id}/test', scope: null, request: { params: PortalIdParams, body: PortalToolTestForm } },
  toolCalls: { method: 'get', path: '/tools/{id}/calls', scope: null, request: { params: PortalIdParams } },
  keys: { method: 'get', path: '/keys', scope: null },
  usage: { method: 'get', path: '/usage', scope: null },
  createKey: { method: 'post', path: '/keys', scope: null, request: { body: PortalKeyForm } },
  revokeKey: { method: 'post', path: '/keys/{id}/revoke', scope: null, request: { params: PortalIdParams, body: PortalForm } },
  webhooks: { method: 'get', path: '/webhooks', scope: null },
  createWebhook: { method: 'post', path: '/webhooks', scope: null, request: { body: PortalWebhookForm } },
  webhookDeliveries: { method: 'get', path: '/webhooks/{id}', scope: null, request: { params: PortalIdParams } },
  deleteWebhook: { method: 'post', path: '/webhooks/{id}/delete', scope: null, request: { params: PortalIdParams, body: PortalForm } },
  testWebhook: { method: 'post', path: '/webhooks/{id}/test', scope: null, request: { params: PortalIdParams, body: PortalForm } },
  redeliverWebhook: {
    method: 'post',
    path: '/webhooks/{id}/deliveries/{delivery_id}/redeliver',
    scope: null,
    request: { params: PortalDeliveryParams, body: PortalForm },
  },
} as const satisfies Readonly<Record<string, RouteEntry>>;
