// The public routes of the API as data: method, path, the scope and limit each needs, the schemas of its input and
// of its answers. Three readers share it: the gateway builds its routing from it (adding only where each route is
// forwarded), the services declare their handlers with it (route() of @fin/http validates the input with these
// schemas), and openapi.ts generates the document from it — so the document, the gateway and the services cannot
// drift apart.
import { z } from 'zod';
import { AnalysisRequest, AnalysisResponse } from './analysis';
import { ChatRequest, ChatResponse, ChatStreamHeaders, ChatStreamQuery } from './chat';
import { AsyncJobResponse } from './common';
import {
  CustomerTool,
  CustomerToolCallListResponse,
  CustomerToolCallsQuery,
  CustomerToolCreateRequest,
  CustomerToolListResponse,
  CustomerToolPathParams,
  CustomerToolUpdateRequest,
  RESERVED_TOOL_NAMES,
} from './customer-tools';
import type { ErrorType } from './errors';
import { AnalysisStreamEvents, ChatStreamEvents, JobEventsHeaders, JobStreamEvents } from './events';
import {
  FilingListResponse,
  FilingPathParams,
  FilingQuery,
  FilingResponse,
  FilingSectionPathParams,
  FilingSectionResponse,
  FilingsQuery,
} from './filings';
import { JobPathParams, JobResultResponseByType, JobStatusResponse } from './jobs';
import { McpMessage, McpRequestHeaders, McpStreamEvents } from './mcp';
import { NewsRequest, NewsResponse } from './news';
import { StockReportRequest, StockReportResponse } from './stock-report';
import {
  WebhookCreateRequest,
  WebhookCreated,
  WebhookDeliveriesQuery,
  WebhookDelivery,
  WebhookDeliveryListResponse,
  CallbackDeliveriesQuery,
  CallbackDeliveryPathParams,
  WebhookDeliveryPathParams,
  Webhook,
  WebhookListResponse,
  WebhookPathParams,
  WebhookSecretRotated,
  WebhookUpdateRequest,
} from './webhooks';

/** What an API key can be allowed to use. A key without the scope a route needs gets 403. */
export const API_SCOPES = ['news', 'stock-report', 'analysis', 'chat', 'tools', 'webhooks', 'filings'] as const;
export type ApiScope = (typeof API_SCOPES)[number];

/**
 * Limits stated by the spec, per account (tenant: all of its API keys together). Also the defaults of the
 * gateway's limiter; a tenant can have higher limits arranged with the account manager.
 */
export const RATE_LIMITS_PER_MINUTE = { news: 100, 'stock-report': 20, analysis: 20 } as const;
/**
 * Requests to the filings routes per account and minute: ours (the spec predates them). Each may cost a request to
 * SEC EDGAR, whose 10 a second are the whole deployment's; a person or an assistant reading filings needs one a second.
 */
export const FILINGS_REQUESTS_PER_MINUTE = 60;
/** Concurrent chat requests per account (the spec's "10 concurrent streams"). */
export const CHAT_STREAMS_PER_ACCOUNT = 10;
/** Chat requests (POST /api/chat, GET /api/chat/stream) per account and minute: ours, beside the spec's 10 streams. */
export const CHAT_TURNS_PER_MINUTE = 60;
/** Completed exchanges (a user message and its reply) of a conversation the model sees: the spec's "about 10". */
export const CHAT_CONTEXT_PAIRS = 10;

export type HttpMethod = 'get' | 'post' | 'put' | 'delete';

/** A Server-Sent Events response: event name → schema of its JSON data. */
export type SseEvents = Readonly<Record<string, z.ZodType>>;

export interface ApiResponse {
  description: string;
  /** application/json body. */
  json?: z.ZodType;
  /** text/event-stream body: the events it may carry. */
  events?: SseEvents;
  /** text/html body. */
  html?: true;
}

export type SuccessStatus = '200' | '201' | '202' | '204';

/** What serving a route needs: its method and path, the key scope it requires, and the schemas of its input. */
export interface RouteEntry {
  readonly method: HttpMethod;
  /** OpenAPI path template, e.g. /api/jobs/{job_type}/{job_id}/status. */
  readonly path: string;
  /**
   * The scope the API key needs: a scope; `job_type` for the scope of the product named by the {job_type}
   * path parameter; `any` for a route any valid key may use (what it offers then depends on the key's scopes:
   * the MCP endpoint); null for a route that needs no API key.
   */
  readonly scope: ApiScope | 'job_type' | 'any' | null;
  /**
   * The answer holds a secret shown this once (a signing secret): sent with `Cache-Control: no-store`, so that no
   * browser, proxy or SDK cache keeps a copy of it.
   */
  readonly secretInAnswer?: true;
  /**
   * The `Cache-Control` of a successful answer (an error's is never set): for answers every client may keep a while,
   * such as the filings'. Documented as the answer's header.
   */
  readonly cacheControl?: string;
  readonly request?: {
    readonly params?: z.ZodObject;
    readonly query?: z.ZodObject;
    readonly headers?: z.ZodObject;
    readonly body?: z.ZodType;
  };
}

export interface ApiRoute extends RouteEntry {
  /** The OpenAPI operationId, and the route's key in API_ROUTES; the gateway's route table is keyed by it. */
  readonly id: string;
  readonly tag: string;
  readonly summary: string;
  readonly description: string;
  /**
   * per_minute: counted per account and minute, with X-RateLimit-* headers and 429 beyond the limit;
   * concurrent_streams: at most CHAT_STREAMS_PER_ACCOUNT requests in flight per account, 429 beyond, and counted per
   * account and minute too (CHAT_TURNS_PER_MINUTE, with X-RateLimit-* headers);
   * null: not limited.
   */
  readonly limit: 'per_minute' | 'concurrent_streams' | null;
  readonly responses: Readonly<Partial<Record<SuccessStatus, ApiResponse>>>;
  /** Error statuses specific to this route, beyond those every route of its kind has (see errorStatuses). */
  readonly extraErrors?: readonly ErrorType[];
  /**
   * false: routed, but left out of the OpenAPI document, because it offers no operation: GET /mcp exists only to
   * answer 405, which an operation without a success response would document (Redocly's operation-2xx-response).
   */
  readonly documented?: false;
}

type RouteSpec = Omit<ApiRoute, 'id'>;

/** The routes with their keys as their ids: a route's id and its key cannot disagree. */
function keyedById<const T extends Readonly<Record<string, RouteSpec>>>(
  routes: T,
): { readonly [Id in keyof T & string]: T[Id] & { readonly id: Id } } {
  return Object.fromEntries(Object.entries(routes).map(([id, route]) => [id, { id, ...route }])) as {
    readonly [Id in keyof T & string]: T[Id] & { readonly id: Id };
  };
}

const [analysisPending, analysisCompleted] = AnalysisResponse.options;

/** Result endpoint: `result` is shaped by the job type of the path. */
const JobResultAnyType = z
  .union([JobResultResponseByType.news, JobResultResponseByType['stock-report'], JobResultResponseByType.analysis])
  .meta({ description: 'Result of a completed job; the shape of `result` depends on {job_type}.' });

/** Any JSON object: the OpenAPI document itself. */
const OpenApiDocumentBody = z.record(z.string(), z.unknown()).meta({ description: 'This OpenAPI 3.1 document.' });

/** How the document describes an event stream; also the end of each streaming route's description. */
export const SSE_NOTE =
  'Each event is `event: <name>` and one `data:` line of JSON, then a blank line. A stream that fails after it started ends with an `error` event whose data is the error body.';

/**
 * `Idempotency-Key`: the one parser of the header (services get it validated by route()). The message keeps the
 * wording services have always answered with.
 */
const IdempotencyKey = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/, { error: 'must be 1 to 255 visible ASCII characters.' })
  .optional()
  // No `examples`: "try it" clients (the /docs page) fill in and send an optional header's example, and a key sent
  // by default made the second try with an edited body a 422. The example is in the description instead.
  .meta({
    description:
      'Makes the POST safe to retry: the same key and body return the same job (never a second one); the same key with a different body is 422. Any 1 to 255 visible ASCII characters, e.g. `order-2026-11-21-0001`; a new one for each new request.',
  });

/** Optional request headers of the cached products (news, stock-report). */
const CachedProductHeaders = z.object({
  'Idempotency-Key': IdempotencyKey,
  'Cache-Control': z.string().optional().meta({
    description: '`no-cache` (or `no-store`) skips the 7-day cache and starts a fresh run, whose result then replaces the cached one.',
  }),
});

const CACHE_NOTE =
  ' Responses carry `Cache-Status` (`fin-api; hit; ttl=…` or `fin-api; fwd=miss|bypass`) and, on a hit, `Age`; a 202 also carries `Location` (the status URL).';

/**
 * Every public route, keyed by its id (`route(app, API_ROUTES.createNews, handler)` in a service). The order of the
 * keys is the order of the document and of the docs page (API_ROUTE_LIST). Adding a route here makes the gateway's
 * type-check demand a route target for it.
 */
export const API_ROUTES = keyedById({
  createNews: {
    method: 'post',
    path: '/api/products/news',
    tag: 'Products',
    summary: 'News intelligence',
    description: `Relevant market news for 1 to 10 symbols, with relevance scores and source links. A cached result (up to 7 days old) is returned at once with 200; otherwise the job runs in the background (typically 1-3 s) and the 202 answer holds its status and result URLs. Identical requests of one key's tenant made while a job for them runs share that job. Limit: ${RATE_LIMITS_PER_MINUTE.news} requests per minute per account (all of its API keys together).${CACHE_NOTE}`,
    scope: 'news',
    limit: 'per_minute',
    request: { body: NewsRequest, headers: CachedProductHeaders },
    responses: {
      '200': { description: 'Served from the cache.', json: NewsResponse },
      '202': { description: 'Accepted: poll status_url about every 2 s, then read result_url.', json: AsyncJobResponse },
    },
    extraErrors: ['unprocessable_entity'],
  },
  createStockReport: {
    method: 'post',
    path: '/api/products/stock-report',
    tag: 'Products',
    summary: 'Stock analysis',
    description: `Equity analysis of one symbol (about 10-20 s) or a comparison of two (about 30-45 s). A cached result is returned at once with 200; otherwise 202 with the job URLs. Limit: ${RATE_LIMITS_PER_MINUTE['stock-report']} requests per minute per account (all of its API keys together).${CACHE_NOTE}`,
    scope: 'stock-report',
    limit: 'per_minute',
    request: { body: StockReportRequest, headers: CachedProductHeaders },
    responses: {
      '200': { description: 'Served from the cache.', json: StockReportResponse },
      '202': { description: 'Accepted: poll status_url about every 2 s, then read result_url.', json: AsyncJobResponse },
    },
    extraErrors: ['unprocessable_entity'],
  },
  createAnalysis: {
    method: 'post',
    path: '/api/analysis',
    tag: 'Products',
    summary: 'Custom analysis',
    description: `A free-form prompt answered in the chosen output format (typically 30-90 s). Results are not cached. Not streamed: the request waits a while for the job (30 s by default): 200 with the result when it completed in time, 202 with the job URLs (and \`Location\`: the status URL) otherwise, and when the job failed meanwhile, its error (type and reason) with \`Location\`. With output_format.stream true the answer is an SSE stream: \`Location\` (the job's status URL) in its headers, synthesis_chunk events whose chunks concatenate to the result's text (markdown: \`content\` exactly; json and json_schema: \`content\` as JSON indented by two spaces, sent once validated), \`: keep-alive\` comments while the model works, then done; the job and its result stay available at the job URLs. Limit: ${RATE_LIMITS_PER_MINUTE.analysis} requests per minute per account (all of its API keys together). ${SSE_NOTE}`,
    scope: 'analysis',
    limit: 'per_minute',
    request: { body: AnalysisRequest, headers: CachedProductHeaders.pick({ 'Idempotency-Key': true }) },
    responses: {
      '200': {
        description: 'Completed (result inline), or the SSE stream when output_format.stream is true.',
        json: analysisCompleted,
        events: AnalysisStreamEvents,
      },
      '202': {
        description: 'Accepted, not finished yet: poll status_url about every 2 s, then read result_url. `Location` is the status URL.',
        json: analysisPending,
      },
    },
    extraErrors: ['unprocessable_entity'],
  },
  chat: {
    method: 'post',
    path: '/api/chat',
    tag: 'Chat',
    summary: 'Chat',
    description: `One user turn of a research conversation. With stream true (the default) the reply is an SSE stream: node_start (research, answer), tool_start and tool_end (market_data, the tenant's customer tools), token, then done with the conversation id; every event carries an \`id:\` for re-attaching with GET /api/chat/stream and Last-Event-ID, and a \`: keep-alive\` comment keeps a quiet stream open. With stream false a single JSON body. conversation_id null starts a conversation; the model sees its last completed exchanges, at most ${CHAT_CONTEXT_PAIRS} (past that the oldest are left out ${CHAT_CONTEXT_PAIRS / 2} at a time). A message for a conversation whose reply is still being written is refused with 409; another tenant's conversation is 404. At most ${CHAT_STREAMS_PER_ACCOUNT} chat requests in flight and ${CHAT_TURNS_PER_MINUTE} chat requests per minute per account (all of its API keys together); a reply whose client left keeps its slot for a few seconds while it stops. ${SSE_NOTE}`,
    scope: 'chat',
    limit: 'concurrent_streams',
    request: { body: ChatRequest },
    responses: {
      '200': {
        description: 'The reply: an SSE stream (stream true) or a JSON body (stream false).',
        json: ChatResponse,
        events: ChatStreamEvents,
      },
    },
    extraErrors: ['not_found', 'conflict'],
  },
  chatStream: {
    method: 'get',
    path: '/api/chat/stream',
    tag: 'Chat',
    summary: 'Chat stream (EventSource)',
    description: `The chat stream for clients that can only GET, such as browsers' EventSource. With \`message\` it sends a user turn (continuing conversation_id, or starting a conversation without it) and streams the reply exactly as POST /api/chat does. With the Last-Event-ID header it re-attaches to the reply that event belongs to: the events after it are replayed, then the reply is followed live while it is still being written; a finished reply is replayed from storage, ending with its done or error event (\`message\` is then ignored, so a reconnecting EventSource never sends a turn twice). With conversation_id alone it streams the conversation's latest reply from its start. 204 when nothing is left to send, which stops EventSource from reconnecting. Counts towards the account's ${CHAT_STREAMS_PER_ACCOUNT} concurrent chat requests and ${CHAT_TURNS_PER_MINUTE} chat requests per minute. ${SSE_NOTE}`,
    scope: 'chat',
    limit: 'concurrent_streams',
    request: { query: ChatStreamQuery, headers: ChatStreamHeaders },
    responses: {
      '200': { description: 'An SSE stream.', events: ChatStreamEvents },
      '204': { description: 'Nothing left to send: the reply has ended and Last-Event-ID named its last event.' },
    },
    extraErrors: ['not_found', 'conflict'],
  },
  getJobStatus: {
    method: 'get',
    path: '/api/jobs/{job_type}/{job_id}/status',
    tag: 'Jobs',
    summary: 'Job status',
    description:
      "Status of a job, with its progress and current step. Poll about every 2 s while pending or running. The API key needs the scope of the job's product ({job_type}). Another tenant's job is reported as not found.",
    scope: 'job_type',
    limit: 'per_minute',
    request: { params: JobPathParams },
    responses: {
      '200': { description: "The job's current state.", json: JobStatusResponse },
    },
  },
  getJobResult: {
    method: 'get',
    path: '/api/jobs/{job_type}/{job_id}/result',
    tag: 'Jobs',
    summary: 'Job result',
    description:
      "Result of a completed job. Before the job has completed the answer is 409 (poll the status URL). The API key needs the scope of the job's product ({job_type}).",
    scope: 'job_type',
    limit: 'per_minute',
    request: { params: JobPathParams },
    responses: {
      '200': { description: 'The result; its shape depends on {job_type}.', json: JobResultAnyType },
    },
    extraErrors: ['conflict'],
  },
  getJobEvents: {
    method: 'get',
    path: '/api/jobs/{job_type}/{job_id}/events',
    tag: 'Jobs',
    summary: 'Job event stream',
    description:
      "The job's state as an SSE stream, instead of polling: first a `status` event with the current state, then `status` on every change of status and `progress` on every change of progress or current step, and finally `result` (the result URL's answer) when the job completes or `error` (the job's error) when it fails, after which the stream ends. A job already finished gets its final event at once. Every event carries an `id:` that increases within the job; a client that reconnects with Last-Event-ID gets only newer events (204 when it already has the final one). A `: keep-alive` comment keeps a quiet stream open. The API key needs the scope of the job's product ({job_type}); another tenant's job is reported as not found. Each connect counts as one request of the account's per-minute job limit, and an account may hold 100 streams open at once per server (429 beyond). Each event is `id: <n>`, `event: <name>` and one `data:` line of JSON, then a blank line. An `error` event with a `job_id` means that the job failed; one without is the gateway ending the stream (the key was revoked).",
    scope: 'job_type',
    limit: 'per_minute',
    request: { params: JobPathParams, headers: JobEventsHeaders },
    responses: {
      '200': { description: "An SSE stream of the job's events.", events: JobStreamEvents },
      '204': { description: 'Nothing left to send: the job has finished and Last-Event-ID named its final event.' },
    },
  },
  listFilings: {
    method: 'get',
    path: '/api/filings',
    tag: 'Filings',
    summary: 'SEC filings of a company',
    description: `A US company's filings with the SEC (10-K, 10-Q, 8-K with its item numbers, …), newest first, from SEC EDGAR: each with its accession number, form, filing and report dates and a link to the document on www.sec.gov that anyone can open. Narrow them with \`forms\` and \`since\`. A symbol SEC EDGAR does not know (a listing outside the US, such as 7203.T) is not an error: 200 with \`company\` null, no filings and a \`note\` saying there are no filings for this market. In offline mode (npm start without network) the answer is the bundled sample, \`source: "sample"\`. Answers may be cached for 5 minutes (\`Cache-Control: private, max-age=300\`). Limit: ${FILINGS_REQUESTS_PER_MINUTE} requests per minute per account to the filings routes together (all of its API keys together).`,
    scope: 'filings',
    limit: 'per_minute',
    cacheControl: 'private, max-age=300',
    request: { query: FilingsQuery },
    responses: {
      '200': { description: "The company's filings, newest first (none for a listing EDGAR does not cover).", json: FilingListResponse },
    },
  },
  getFiling: {
    method: 'get',
    path: '/api/filings/{accession}',
    tag: 'Filings',
    summary: 'One filing and its sections',
    description: `One filing of the company and the sections of its primary document (a 10-K's Items 1, 1A, 7, …, an 8-K's items), by item and title with their length, not their text: read a section with GET /api/filings/{accession}/sections/{item}. 404 when the company has no such filing, or SEC EDGAR does not know the symbol. A filing never changes: answers may be cached for a day (\`Cache-Control: private, max-age=86400, immutable\`). Counts towards the account's ${FILINGS_REQUESTS_PER_MINUTE} filings requests per minute.`,
    scope: 'filings',
    limit: 'per_minute',
    cacheControl: 'private, max-age=86400, immutable',
    request: { params: FilingPathParams, query: FilingQuery },
    responses: {
      '200': { description: 'The filing and its sections.', json: FilingResponse },
    },
  },
  getFilingSection: {
    method: 'get',
    path: '/api/filings/{accession}/sections/{item}',
    tag: 'Filings',
    summary: "One section's text",
    description: `One section of a filing as plain text (Item 1A risk factors, Item 7 MD&A, an 8-K's Item 2.02): sections, never whole filings. 404 when the filing has no such item (the detail lists those it has). Cached like the filing (\`Cache-Control: private, max-age=86400, immutable\`). Counts towards the account's ${FILINGS_REQUESTS_PER_MINUTE} filings requests per minute.`,
    scope: 'filings',
    limit: 'per_minute',
    cacheControl: 'private, max-age=86400, immutable',
    request: { params: FilingSectionPathParams, query: FilingQuery },
    responses: {
      '200': { description: 'The section and its text.', json: FilingSectionResponse },
    },
  },
  listCustomerTools: {
    method: 'get',
    path: '/api/customer-tools/',
    tag: 'Customer tools',
    summary: 'List customer tools',
    description: 'The external data APIs this tenant registered for the AI to use.',
    scope: 'tools',
    limit: 'per_minute',
    responses: {
      '200': { description: 'The tools, oldest first.', json: CustomerToolListResponse },
    },
  },
  createCustomerTool: {
    method: 'post',
    path: '/api/customer-tools/',
    tag: 'Customer tools',
    summary: 'Create a customer tool',
    description: `Registers an external API the AI may call (function calling): \`name\` and \`description\` are what the model sees, \`input_schema\` (a JSON Schema, draft 2020-12, checked and compiled) describes its arguments, which are sent as a JSON body (POST) or query parameters (GET) to the https \`endpoint\`. Header values (e.g. the customer's API key) are stored encrypted and never returned: responses list \`header_names\` only. A tool name is unique per tenant (409 otherwise) and is not one of the names of the service's own tools (${RESERVED_TOOL_NAMES.join(', ')}: 400 naming \`name\`); at most 50 tools per tenant. Calls go only to public internet addresses, checked when the call is made; redirects are not followed; each call has the tool's time limit and a 1 MiB response cap.`,
    scope: 'tools',
    limit: 'per_minute',
    request: { body: CustomerToolCreateRequest },
    responses: {
      '201': { description: 'Created.', json: CustomerTool },
    },
    extraErrors: ['conflict'],
  },
  getCustomerTool: {
    method: 'get',
    path: '/api/customer-tools/{id}',
    tag: 'Customer tools',
    summary: 'Get a customer tool',
    description: 'One registered tool.',
    scope: 'tools',
    limit: 'per_minute',
    request: { params: CustomerToolPathParams },
    responses: {
      '200': { description: 'The tool.', json: CustomerTool },
    },
  },
  listCustomerToolCalls: {
    method: 'get',
    path: '/api/customer-tools/{id}/calls',
    tag: 'Customer tools',
    summary: 'Customer tool call audit',
    description:
      "The most recent calls the AI (or the portal's test button) made to the tool, newest first: which job or conversation, the outcome, the HTTP status, the duration and the response size. Arguments, header values and response bodies are never recorded.",
    scope: 'tools',
    limit: 'per_minute',
    request: { params: CustomerToolPathParams, query: CustomerToolCallsQuery },
    responses: {
      '200': { description: 'The calls, newest first.', json: CustomerToolCallListResponse },
    },
  },
  updateCustomerTool: {
    method: 'put',
    path: '/api/customer-tools/{id}',
    tag: 'Customer tools',
    summary: 'Replace a customer tool',
    description:
      "Replaces a tool. Omitted optional fields take their defaults, except headers: omitted keeps the stored headers, {} removes them. A tool the service disabled because its name became one of the service's own tool names (`disabled_reason`) is saved only under another name (400 naming `name` otherwise), which clears `disabled_reason`.",
    scope: 'tools',
    limit: 'per_minute',
    request: { params: CustomerToolPathParams, body: CustomerToolUpdateRequest },
    responses: {
      '200': { description: 'The updated tool.', json: CustomerTool },
    },
    extraErrors: ['conflict'],
  },
  deleteCustomerTool: {
    method: 'delete',
    path: '/api/customer-tools/{id}',
    tag: 'Customer tools',
    summary: 'Delete a customer tool',
    description: 'Removes a tool; the AI stops using it at once.',
    scope: 'tools',
    limit: 'per_minute',
    request: { params: CustomerToolPathParams },
    responses: {
      '204': { description: 'Deleted.' },
    },
  },
  listWebhooks: {
    method: 'get',
    path: '/api/webhooks/',
    tag: 'Webhooks',
    summary: 'List webhook endpoints',
    description: 'The endpoints this account registered to be told when its jobs finish.',
    scope: 'webhooks',
    limit: 'per_minute',
    responses: {
      '200': { description: 'The endpoints, oldest first.', json: WebhookListResponse },
    },
  },
  createWebhook: {
    method: 'post',
    secretInAnswer: true,
    path: '/api/webhooks/',
    tag: 'Webhooks',
    summary: 'Create a webhook endpoint',
    description:
      "Registers an https URL that receives `job.completed` and/or `job.failed` for the jobs of this account whose product this API key may read (its scopes `news`, `stock-report`, `analysis`; the answer's `products` lists them, so a key with only the `webhooks` scope registers an endpoint that receives test events only), as a signed JSON POST (Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256 of id.timestamp.body>`). The answer holds the signing secret, shown this once. A delivery succeeds on a 2xx answer within 10 s; otherwise it is retried with exponential backoff for 24 hours, then marked failed. Deliveries go only to public internet addresses (checked when each is sent; an IP literal that is not public is refused here); redirects are not followed. An endpoint whose every attempt fails for 3 days is disabled (`disabled_reason` says so). Attempts to one endpoint, one account and one host are bounded, so one account's slow receivers never delay another's. At most 20 endpoints per account.",
    scope: 'webhooks',
    limit: 'per_minute',
    request: { body: WebhookCreateRequest },
    responses: {
      '201': { description: 'Created; `secret` is shown only in this answer.', json: WebhookCreated },
    },
    extraErrors: ['conflict'],
  },
  getWebhook: {
    method: 'get',
    path: '/api/webhooks/{id}',
    tag: 'Webhooks',
    summary: 'Get a webhook endpoint',
    description: 'One endpoint (without its secret).',
    scope: 'webhooks',
    limit: 'per_minute',
    request: { params: WebhookPathParams },
    responses: {
      '200': { description: 'The endpoint.', json: Webhook },
    },
  },
  updateWebhook: {
    method: 'put',
    path: '/api/webhooks/{id}',
    tag: 'Webhooks',
    summary: 'Replace a webhook endpoint',
    description:
      'Replaces an endpoint: omitted optional fields take their defaults, and `products` become those this API key may read. The signing secret is kept. Setting `enabled` to true on a disabled endpoint clears `disabled_reason` and `failing_since` and sends the deliveries that waited. Deliveries already queued for the endpoint go to its new `url`. Only a key that may read every product the endpoint receives may replace it (otherwise 403 naming the products), so the same holds for deleting it, rotating its secret and sending it a test event.',
    scope: 'webhooks',
    limit: 'per_minute',
    request: { params: WebhookPathParams, body: WebhookUpdateRequest },
    responses: {
      '200': { description: 'The updated endpoint.', json: Webhook },
    },
  },
  deleteWebhook: {
    method: 'delete',
    path: '/api/webhooks/{id}',
    tag: 'Webhooks',
    summary: 'Delete a webhook endpoint',
    description:
      'Removes an endpoint with its deliveries; nothing more is sent to it. 403 when the endpoint receives a product this API key may not read.',
    scope: 'webhooks',
    limit: 'per_minute',
    request: { params: WebhookPathParams },
    responses: {
      '204': { description: 'Deleted.' },
    },
  },
  rotateWebhookSecret: {
    method: 'post',
    secretInAnswer: true,
    path: '/api/webhooks/{id}/rotate-secret',
    tag: 'Webhooks',
    summary: 'Rotate a signing secret',
    description:
      'Makes a new signing secret, shown this once. For 24 hours every delivery carries two signatures, one with the new and one with the previous secret, so receivers can switch without missing a delivery. 403 when the endpoint receives a product this API key may not read.',
    scope: 'webhooks',
    limit: 'per_minute',
    request: { params: WebhookPathParams },
    responses: {
      '200': { description: 'The new secret.', json: WebhookSecretRotated },
    },
  },
  testWebhook: {
    method: 'post',
    path: '/api/webhooks/{id}/test',
    tag: 'Webhooks',
    summary: 'Send a test event',
    description:
      'Queues a `webhook.test` delivery to the endpoint, signed and retried like any other; its attempts show in the deliveries list. 403 when the endpoint receives a product this API key may not read.',
    scope: 'webhooks',
    limit: 'per_minute',
    request: { params: WebhookPathParams },
    responses: {
      '202': { description: 'Queued.', json: WebhookDelivery },
    },
  },
  // Before the {id} routes below: a router trying them in this order must not take `callbacks` for an {id}.
  listCallbackDeliveries: {
    method: 'get',
    path: '/api/webhooks/callbacks/deliveries',
    tag: 'Webhooks',
    summary: 'Callback deliveries',
    description:
      "The account's most recent deliveries to product requests' `callback_url`s, newest first, each with every attempt, as an endpoint's deliveries are listed; `job_id` keeps one job's. Only the deliveries of jobs whose product this API key may read are listed.",
    scope: 'webhooks',
    limit: 'per_minute',
    request: { query: CallbackDeliveriesQuery },
    responses: {
      '200': { description: 'The deliveries, newest first.', json: WebhookDeliveryListResponse },
    },
  },
  redeliverCallbackDelivery: {
    method: 'post',
    path: '/api/webhooks/callbacks/deliveries/{delivery_id}/redeliver',
    tag: 'Webhooks',
    summary: 'Redeliver a callback',
    description:
      'Sends a callback delivery again now, with the same `webhook-id` and body (receivers drop repeats by id), whatever its status; if that attempt fails it is retried on the usual schedule for another 24 hours. A delivery this API key would not see listed (a job of a product it may not read) is a 404.',
    scope: 'webhooks',
    limit: 'per_minute',
    request: { params: CallbackDeliveryPathParams },
    responses: {
      '202': { description: 'Queued.', json: WebhookDelivery },
    },
  },
  listWebhookDeliveries: {
    method: 'get',
    path: '/api/webhooks/{id}/deliveries',
    tag: 'Webhooks',
    summary: 'Webhook deliveries',
    description:
      "The endpoint's most recent deliveries, newest first, each with every attempt: when, the outcome, the HTTP status, the duration, the first 1,024 characters of the answer, and when the next attempt is due. Only test events and the deliveries of jobs whose product this API key may read are listed.",
    scope: 'webhooks',
    limit: 'per_minute',
    request: { params: WebhookPathParams, query: WebhookDeliveriesQuery },
    responses: {
      '200': { description: 'The deliveries, newest first.', json: WebhookDeliveryListResponse },
    },
  },
  redeliverWebhookDelivery: {
    method: 'post',
    path: '/api/webhooks/{id}/deliveries/{delivery_id}/redeliver',
    tag: 'Webhooks',
    summary: 'Redeliver',
    description:
      'Sends a delivery again now, with the same `webhook-id` and body (receivers drop repeats by id), whatever its status; if that attempt fails it is retried on the usual schedule for another 24 hours. A delivery this API key would not see listed (a job of a product it may not read) is a 404.',
    scope: 'webhooks',
    limit: 'per_minute',
    request: { params: WebhookDeliveryPathParams },
    responses: {
      '202': { description: 'Queued.', json: WebhookDelivery },
    },
  },
  rotateCallbackSecret: {
    method: 'post',
    secretInAnswer: true,
    path: '/api/webhooks/callback-secret',
    tag: 'Webhooks',
    summary: 'Create or rotate the callback secret',
    description:
      "Makes the account's callback secret, shown this once: deliveries to a product request's `callback_url` are signed with it, like webhooks. A request with `callback_url` is refused until the account has one. Rotating keeps the previous secret signing too for 24 hours.",
    scope: 'webhooks',
    limit: 'per_minute',
    responses: {
      '200': { description: 'The new secret.', json: WebhookSecretRotated },
    },
  },
  mcp: {
    method: 'post',
    path: '/mcp',
    tag: 'MCP',
    summary: 'MCP server (streamable HTTP)',
    description: `The API as Model Context Protocol tools, for AI assistants (Claude Desktop and other MCP clients): point the client at this URL with the \`X-API-Key\` header. The server is stateless (no \`Mcp-Session-Id\`): every message is answered on its own POST, so any replica serves it. Tools: news, stock_report, analysis, chat, sec_filings and job_status (a job's status, and its result once it has completed); tools/list shows only those the key's scopes allow, and a call of another is a tool error naming the missing scope. A tool calls the API with the caller's key, so each call counts against the account's limits of the product it uses (and a cached result is answered from the cache) exactly as a direct request would; the endpoint itself is not counted. A job that does not finish within the tool's wait is returned as its job id and status URL, for job_status later; while waiting, progress is sent as \`notifications/progress\` when the request carried a progressToken. A request is answered with an SSE stream of JSON-RPC \`message\` events (progress notifications, then the response); notifications and responses alone with 202. The transport's optional GET stream of server-initiated messages is not offered: \`GET /mcp\` answers 405, which tells MCP clients to carry on without it. ${SSE_NOTE}`,
    scope: 'any',
    limit: null,
    // One message: batches are not part of the protocol since its 2025-06-18 revision.
    request: { body: McpMessage, headers: McpRequestHeaders },
    responses: {
      '200': {
        description: 'The JSON-RPC response, with any progress notifications before it, as an SSE stream.',
        events: McpStreamEvents,
      },
      '202': { description: 'Accepted: the body held only notifications or responses.' },
    },
  },
  mcpStream: {
    method: 'get',
    path: '/mcp',
    tag: 'MCP',
    summary: 'MCP server-initiated stream (not offered)',
    description:
      "The streamable HTTP transport's optional stream of server-initiated messages. This server is stateless and sends nothing unasked, so it answers 405, which tells MCP clients to carry on without it.",
    scope: 'any',
    limit: null,
    responses: {},
    extraErrors: ['method_not_allowed'],
    // Not an operation: POST /mcp's description says that GET answers 405.
    documented: false,
  },
  getOpenApiDocument: {
    method: 'get',
    path: '/api/openapi.json',
    tag: 'Documentation',
    summary: 'OpenAPI document',
    description: 'This document. No API key needed.',
    scope: null,
    limit: null,
    // No input, but a request Node's HTTP parser refuses (an oversized header block) gets the 400 every route may.
    extraErrors: ['validation_error'],
    responses: {
      '200': { description: 'The OpenAPI 3.1 document.', json: OpenApiDocumentBody },
    },
  },
  getApiDocs: {
    method: 'get',
    path: '/docs',
    tag: 'Documentation',
    summary: 'API reference page',
    description:
      'This document as an interactive API reference: every route, its parameters, bodies, responses and event streams, with a client that sends a request to this gateway with the API key you enter (kept in the page only, never stored). No API key needed to open it.',
    scope: null,
    limit: null,
    // No input, but a request Node's HTTP parser refuses (an oversized header block) gets the 400 every route may.
    extraErrors: ['validation_error'],
    responses: {
      '200': { description: 'An HTML page.', html: true },
    },
  },
});

export type ApiRouteId = keyof typeof API_ROUTES;

/** Every public route, in the order of the document. */
export const API_ROUTE_LIST: readonly (typeof API_ROUTES)[ApiRouteId][] = Object.values(API_ROUTES);
