// The gateway's route table: every public route (method, path, scope, documentation and schemas come from
// API_ROUTES in @fin/contracts, which also generates the OpenAPI document) paired with where the gateway sends
// it. ROUTE_TARGETS is keyed by the routes' ids, so a route added to the contract does not type-check here
// until it has a target, and a target for a route that does not exist does not type-check either.
import { API_ROUTE_LIST, type ApiRoute, type ApiRouteId, type JobType } from '@fin/contracts';
import { toExpressPath } from '@fin/http';
import type { Scope } from './auth/types';
import type { LimitedProduct } from './rate-limit/types';

/** The services behind the gateway. */
export const UPSTREAM_NAMES = ['news', 'stock-report', 'analysis', 'chat', 'jobs', 'portal', 'mcp'] as const;
export type UpstreamName = (typeof UPSTREAM_NAMES)[number];

type RouteTarget =
  /** Forwarded to `upstream`; counted per account and minute as `limit` (null: not counted per minute). */
  | { readonly kind: 'proxy'; readonly upstream: UpstreamName; readonly limit: LimitedProduct | null }
  /** Answered by the gateway itself. */
  | { readonly kind: 'local' };

const ROUTE_TARGETS = {
  createNews: { kind: 'proxy', upstream: 'news', limit: 'news' },
  createStockReport: { kind: 'proxy', upstream: 'stock-report', limit: 'stock-report' },
  createAnalysis: { kind: 'proxy', upstream: 'analysis', limit: 'analysis' },
  // Chat is limited by concurrency (a slot per request in flight) and in turns per minute.
  chat: { kind: 'proxy', upstream: 'chat', limit: 'chat-turns' },
  chatStream: { kind: 'proxy', upstream: 'chat', limit: 'chat-turns' },
  getJobStatus: { kind: 'proxy', upstream: 'jobs', limit: 'jobs' },
  getJobResult: { kind: 'proxy', upstream: 'jobs', limit: 'jobs' },
  getJobEvents: { kind: 'proxy', upstream: 'jobs', limit: 'jobs' },
  // Filings are market data, which the stock-report service owns; their own per-minute count.
  listFilings: { kind: 'proxy', upstream: 'stock-report', limit: 'filings' },
  getFiling: { kind: 'proxy', upstream: 'stock-report', limit: 'filings' },
  getFilingSection: { kind: 'proxy', upstream: 'stock-report', limit: 'filings' },
  listCustomerTools: { kind: 'proxy', upstream: 'portal', limit: 'tools' },
  createCustomerTool: { kind: 'proxy', upstream: 'portal', limit: 'tools' },
  getCustomerTool: { kind: 'proxy', upstream: 'portal', limit: 'tools' },
  listCustomerToolCalls: { kind: 'proxy', upstream: 'portal', limit: 'tools' },
  updateCustomerTool: { kind: 'proxy', upstream: 'portal', limit: 'tools' },
  deleteCustomerTool: { kind: 'proxy', upstream: 'portal', limit: 'tools' },
  listWebhooks: { kind: 'proxy', upstream: 'portal', limit: 'webhooks' },
  createWebhook: { kind: 'proxy', upstream: 'portal', limit: 'webhooks' },
  getWebhook: { kind: 'proxy', upstream: 'portal', limit: 'webhooks' },
  updateWebhook: { kind: 'proxy', upstream: 'portal', limit: 'webhooks' },
  deleteWebhook: { kind: 'proxy', upstream: 'portal', limit: 'webhooks' },
  rotateWebhookSecret: { kind: 'proxy', upstream: 'portal', limit: 'webhooks' },
  testWebhook: { kind: 'proxy', upstream: 'portal', limit: 'webhooks' },
  listCallbackDeliveries: { kind: 'proxy', upstream: 'portal', limit: 'webhooks' },
  redeliverCallbackDelivery: { kind: 'proxy', upstream: 'portal', limit: 'webhooks' },
  listWebhookDeliveries: { kind: 'proxy', upstream: 'portal', limit: 'webhooks' },
  redeliverWebhookDelivery: { kind: 'proxy', upstream: 'portal', limit: 'webhooks' },
  rotateCallbackSecret: { kind: 'proxy', upstream: 'portal', limit: 'webhooks' },
  // Not counted itself: each tool call is a request of its own through the gateway, counted as a direct one is.
  mcp: { kind: 'proxy', upstream: 'mcp', limit: null },
  mcpStream: { kind: 'proxy', upstream: 'mcp', limit: null },
  getOpenApiDocument: { kind: 'local' },
  getApiDocs: { kind: 'local' },
} as const satisfies Record<ApiRouteId, RouteTarget>;

/** The scope a job's status and result need: that of the job's product. */
export const JOB_TYPE_SCOPES = { news: 'news', 'stock-report': 'stock-report', analysis: 'analysis' } as const satisfies Record<
  JobType,
  Scope
>;

export interface GatewayRoute extends ApiRoute {
  readonly id: ApiRouteId;
  readonly target: RouteTarget;
  /** The path in express syntax: /api/jobs/:job_type/:job_id/status. */
  readonly expressPath: string;
}

export const GATEWAY_ROUTES: readonly GatewayRoute[] = API_ROUTE_LIST.map((route) => ({
  ...route,
  target: ROUTE_TARGETS[route.id],
  expressPath: toExpressPath(route.path),
}));

/**
 * Prefixes forwarded as they are, without an API key: the portal's web pages (a browser application, not part
 * of the API, so not in the OpenAPI document). The portal sees these requests as anonymous.
 */
export const PASS_THROUGH_PREFIXES: readonly { readonly prefix: string; readonly upstream: UpstreamName }[] = [
  { prefix: '/portal', upstream: 'portal' },
];
