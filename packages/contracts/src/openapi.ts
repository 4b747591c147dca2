// The public routes of the API as data, and the OpenAPI 3.1 document generated from them. The gateway builds
// its routing from API_ROUTES (adding only where each route is forwarded), so the document and the routes the
// gateway serves come from one list and cannot drift apart.
import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject, type ZodOpenApiResponseObject } from 'zod-openapi';
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
} from './customer-tools';
import { ERROR_STATUS, ErrorBody, type ErrorType } from './errors';
import { AnalysisStreamEvents, ChatStreamEvents } from './events';
import { JobPathParams, JobResultResponseByType, JobStatusResponse } from './jobs';
import { NewsRequest, NewsResponse } from './news';
import { StockReportRequest, StockReportResponse } from './stock-report';

/** What an API key can be allowed to use. A key without the scope a route needs gets 403. */
export const API_SCOPES = ['news', 'stock-report', 'analysis', 'chat', 'tools'] as const;
export type ApiScope = (typeof API_SCOPES)[number];

/**
 * Limits stated by the spec, per account (tenant: all of its API keys together). Also the defaults of the
 * gateway's limiter; a tenant can have higher limits arranged with the account manager.
 */
export const RATE_LIMITS_PER_MINUTE = { news: 100, 'stock-report': 20, analysis: 20 } as const;
/** Concurrent chat requests per account (the spec's "10 concurrent streams"). */
export const CHAT_STREAMS_PER_KEY = 10;
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

export interface ApiRoute {
  /** The OpenAPI operationId; the gateway's route table is keyed by it. */
  readonly id: string;
  readonly method: HttpMethod;
  /** OpenAPI path template, e.g. /api/jobs/{job_type}/{job_id}/status. */
  readonly path: string;
  readonly tag: string;
  readonly summary: string;
  readonly description: string;
  /**
   * The scope the API key needs: a scope; `job_type` for the scope of the product named by the {job_type}
   * path parameter; null for a route that needs no API key.
   */
  readonly scope: ApiScope | 'job_type' | null;
  /**
   * per_minute: counted per account and minute, with X-RateLimit-* headers and 429 beyond the limit;
   * concurrent_streams: at most CHAT_STREAMS_PER_KEY requests in flight per account, 429 beyond, and counted per
   * account and minute too (CHAT_TURNS_PER_MINUTE, with X-RateLimit-* headers);
   * null: not limited.
   */
  readonly limit: 'per_minute' | 'concurrent_streams' | null;
  readonly request?: {
    readonly params?: z.ZodObject;
    readonly query?: z.ZodObject;
    readonly headers?: z.ZodObject;
    readonly body?: z.ZodType;
  };
  readonly responses: Readonly<Partial<Record<SuccessStatus, ApiResponse>>>;
  /** Error statuses specific to this route, beyond those every route of its kind has (see errorStatuses). */
  readonly extraErrors?: readonly ErrorType[];
}

const [analysisPending, analysisCompleted] = AnalysisResponse.options;

/** Result endpoint: `result` is shaped by the job type of the path. */
const JobResultAnyType = z
  .union([JobResultResponseByType.news, JobResultResponseByType['stock-report'], JobResultResponseByType.analysis])
  .meta({ description: 'Result of a completed job; the shape of `result` depends on {job_type}.' });

/** Any JSON object: the OpenAPI document itself. */
const OpenApiDocumentBody = z.record(z.string(), z.unknown()).meta({ description: 'This OpenAPI 3.1 document.' });

const SSE_NOTE =
  'Each event is `event: <name>` and one `data:` line of JSON, then a blank line. A stream that fails after it started ends with an `error` event whose data is the error body.';

/**
 * Every public route. The order is the order of the document and of the docs page. Adding a route here makes
 * the gateway's type-check demand a route target for it.
 */
/** Optional request headers of the cached products (news, stock-report). */
const CachedProductHeaders = z.object({
  'Idempotency-Key': z
    .string()
    .regex(/^[\x21-\x7e]{1,255}$/)
    .optional()
    .meta({ description: 'Makes the POST safe to retry: the same key and body return the same job (never a second one); the same key with a different body is 422.', examples: ['order-2026-11-21-0001'] }),
  'Cache-Control': z
    .string()
    .optional()
    .meta({ description: '`no-cache` (or `no-store`) skips the 7-day cache and starts a fresh run, whose result then replaces the cached one.', examples: ['no-cache'] }),
});

const CACHE_NOTE =
  ' Responses carry `Cache-Status` (`fin-api; hit; ttl=…` or `fin-api; fwd=miss|bypass`) and, on a hit, `Age`; a 202 also carries `Location` (the status URL).';

export const API_ROUTES = [
  {
    id: 'createNews',
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
  {
    id: 'createStockReport',
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
  {
    id: 'createAnalysis',
    method: 'post',
    path: '/api/analysis',
    tag: 'Products',
    summary: 'Custom analysis',
    description: `A free-form prompt answered in the chosen output format (typically 30-90 s). Results are not cached. Not streamed: the request waits a while for the job (30 s by default): 200 with the result when it completed in time, 202 with the job URLs (and \`Location\`: the status URL) otherwise, and when the job failed meanwhile, its error (type and reason) with \`Location\`. With output_format.stream true the answer is an SSE stream: \`Location\` (the job's status URL) in its headers, synthesis_chunk events whose chunks concatenate to the result's text (markdown: \`content\` exactly; json and json_schema: \`content\` as JSON indented by two spaces, sent once validated), \`: keep-alive\` comments while the model works, then done; the job and its result stay available at the job URLs. Limit: ${RATE_LIMITS_PER_MINUTE.analysis} requests per minute per account (all of its API keys together). ${SSE_NOTE}`,
    scope: 'analysis',
    limit: 'per_minute',
    request: { body: AnalysisRequest, headers: CachedProductHeaders.pick({ 'Idempotency-Key': true }) },
    responses: {
      '200': { description: 'Completed (result inline), or the SSE stream when output_format.stream is true.', json: analysisCompleted, events: AnalysisStreamEvents },
      '202': { description: 'Accepted, not finished yet: poll status_url about every 2 s, then read result_url. `Location` is the status URL.', json: analysisPending },
    },
    extraErrors: ['unprocessable_entity'],
  },
  {
    id: 'chat',
    method: 'post',
    path: '/api/chat',
    tag: 'Chat',
    summary: 'Chat',
    description: `One user turn of a research conversation. With stream true (the default) the reply is an SSE stream: node_start (research, answer), tool_start and tool_end (market_data, the tenant's customer tools), token, then done with the conversation id; every event carries an \`id:\` for re-attaching with GET /api/chat/stream and Last-Event-ID, and a \`: keep-alive\` comment keeps a quiet stream open. With stream false a single JSON body. conversation_id null starts a conversation; the model sees its last ${CHAT_CONTEXT_PAIRS} completed exchanges. A message for a conversation whose reply is still being written is refused with 409; another tenant's conversation is 404. At most ${CHAT_STREAMS_PER_KEY} chat requests in flight and ${CHAT_TURNS_PER_MINUTE} chat requests per minute per account (all of its API keys together); a reply whose client left keeps its slot for a few seconds while it stops. ${SSE_NOTE}`,
    scope: 'chat',
    limit: 'concurrent_streams',
    request: { body: ChatRequest },
    responses: {
      '200': { description: 'The reply: an SSE stream (stream true) or a JSON body (stream false).', json: ChatResponse, events: ChatStreamEvents },
    },
    extraErrors: ['not_found', 'conflict'],
  },
  {
    id: 'chatStream',
    method: 'get',
    path: '/api/chat/stream',
    tag: 'Chat',
    summary: 'Chat stream (EventSource)',
    description: `The chat stream for clients that can only GET, such as browsers' EventSource. With \`message\` it sends a user turn (continuing conversation_id, or starting a conversation without it) and streams the reply exactly as POST /api/chat does. With the Last-Event-ID header it re-attaches to the reply that event belongs to: the events after it are replayed, then the reply is followed live while it is still being written; a finished reply is replayed from storage, ending with its done or error event (\`message\` is then ignored, so a reconnecting EventSource never sends a turn twice). With conversation_id alone it streams the conversation's latest reply from its start. 204 when nothing is left to send, which stops EventSource from reconnecting. Counts towards the account's ${CHAT_STREAMS_PER_KEY} concurrent chat requests and ${CHAT_TURNS_PER_MINUTE} chat requests per minute. ${SSE_NOTE}`,
    scope: 'chat',
    limit: 'concurrent_streams',
    request: { query: ChatStreamQuery, headers: ChatStreamHeaders },
    responses: {
      '200': { description: 'An SSE stream.', events: ChatStreamEvents },
      '204': { description: 'Nothing left to send: the reply has ended and Last-Event-ID named its last event.' },
    },
    extraErrors: ['not_found', 'conflict'],
  },
  {
    id: 'getJobStatus',
    method: 'get',
    path: '/api/jobs/{job_type}/{job_id}/status',
    tag: 'Jobs',
    summary: 'Job status',
    description: 'Status of a job, with its progress and current step. Poll about every 2 s while pending or running. The API key needs the scope of the job\'s product ({job_type}). Another tenant\'s job is reported as not found.',
    scope: 'job_type',
    limit: 'per_minute',
    request: { params: JobPathParams },
    responses: {
      '200': { description: 'The job\'s current state.', json: JobStatusResponse },
    },
  },
  {
    id: 'getJobResult',
    method: 'get',
    path: '/api/jobs/{job_type}/{job_id}/result',
    tag: 'Jobs',
    summary: 'Job result',
    description: 'Result of a completed job. Before the job has completed the answer is 409 (poll the status URL). The API key needs the scope of the job\'s product ({job_type}).',
    scope: 'job_type',
    limit: 'per_minute',
    request: { params: JobPathParams },
    responses: {
      '200': { description: 'The result; its shape depends on {job_type}.', json: JobResultAnyType },
    },
    extraErrors: ['conflict'],
  },
  {
    id: 'listCustomerTools',
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
  {
    id: 'createCustomerTool',
    method: 'post',
    path: '/api/customer-tools/',
    tag: 'Customer tools',
    summary: 'Create a customer tool',
    description: 'Registers an external API the AI may call (function calling): `name` and `description` are what the model sees, `input_schema` (a JSON Schema, draft 2020-12, checked and compiled) describes its arguments, which are sent as a JSON body (POST) or query parameters (GET) to the https `endpoint`. Header values (e.g. the customer\'s API key) are stored encrypted and never returned: responses list `header_names` only. A tool name is unique per tenant (409 otherwise); at most 50 tools per tenant. Calls go only to public internet addresses, checked when the call is made; redirects are not followed; each call has the tool\'s time limit and a 1 MiB response cap.',
    scope: 'tools',
    limit: 'per_minute',
    request: { body: CustomerToolCreateRequest },
    responses: {
      '201': { description: 'Created.', json: CustomerTool },
    },
    extraErrors: ['conflict'],
  },
  {
    id: 'getCustomerTool',
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
  {
    id: 'listCustomerToolCalls',
    method: 'get',
    path: '/api/customer-tools/{id}/calls',
    tag: 'Customer tools',
    summary: 'Customer tool call audit',
    description:
      'The most recent calls the AI (or the portal\'s test button) made to the tool, newest first: which job or conversation, the outcome, the HTTP status, the duration and the response size. Arguments, header values and response bodies are never recorded.',
    scope: 'tools',
    limit: 'per_minute',
    request: { params: CustomerToolPathParams, query: CustomerToolCallsQuery },
    responses: {
      '200': { description: 'The calls, newest first.', json: CustomerToolCallListResponse },
    },
  },
  {
    id: 'updateCustomerTool',
    method: 'put',
    path: '/api/customer-tools/{id}',
    tag: 'Customer tools',
    summary: 'Replace a customer tool',
    description: 'Replaces a tool. Omitted optional fields take their defaults, except headers: omitted keeps the stored headers, {} removes them.',
    scope: 'tools',
    limit: 'per_minute',
    request: { params: CustomerToolPathParams, body: CustomerToolUpdateRequest },
    responses: {
      '200': { description: 'The updated tool.', json: CustomerTool },
    },
    extraErrors: ['conflict'],
  },
  {
    id: 'deleteCustomerTool',
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
  {
    id: 'getOpenApiDocument',
    method: 'get',
    path: '/api/openapi.json',
    tag: 'Documentation',
    summary: 'OpenAPI document',
    description: 'This document. No API key needed.',
    scope: null,
    limit: null,
    responses: {
      '200': { description: 'The OpenAPI 3.1 document.', json: OpenApiDocumentBody },
    },
  },
  {
    id: 'getApiDocs',
    method: 'get',
    path: '/docs',
    tag: 'Documentation',
    summary: 'API reference page',
    description: 'This document as a self-contained HTML page. No API key needed.',
    scope: null,
    limit: null,
    responses: {
      '200': { description: 'An HTML page.', html: true },
    },
  },
] as const satisfies readonly ApiRoute[];

export type ApiRouteId = (typeof API_ROUTES)[number]['id'];

/** The error statuses a route can answer with, from what it is: keyed, limited, with input, with a body. */
export function errorStatuses(route: ApiRoute): ErrorType[] {
  const types: ErrorType[] = [];
  const hasInput = route.request !== undefined;
  if (hasInput) types.push('validation_error');
  if (route.scope !== null) types.push('unauthorized', 'forbidden');
  if (route.request?.params !== undefined) types.push('not_found');
  types.push(...(route.extraErrors ?? []));
  if (route.request?.body !== undefined) types.push('unsupported_media_type');
  if (route.limit !== null) types.push('rate_limit_exceeded');
  types.push('internal_error');
  // Routes served by a product service can meet that service failing, down, or too slow.
  if (route.scope !== null) types.push('bad_gateway', 'service_unavailable', 'gateway_timeout');
  return types.sort((a, b) => ERROR_STATUS[a] - ERROR_STATUS[b]);
}

/**
 * The schema a response with `status` and `contentType` is documented with, for tests that check what the
 * services return against the document. Error statuses give ErrorBody.
 */
export function responseSchema(route: ApiRoute, status: number, contentType: 'application/json' | 'text/event-stream' = 'application/json'): z.ZodType | SseEvents | undefined {
  const success = route.responses[String(status) as SuccessStatus];
  if (success !== undefined) return contentType === 'text/event-stream' ? success.events : success.json;
  return errorStatuses(route).some((type) => ERROR_STATUS[type] === status) ? ErrorBody : undefined;
}

// ---- Headers ----

const RateLimitLimit = z.int().min(0).meta({ description: 'Requests allowed per window (one minute) for the account (all of its API keys together) on this product.', examples: [100], header: { id: 'X-RateLimit-Limit' } });
const RateLimitRemaining = z.int().min(0).meta({ description: "Requests remaining in the account's current window, whichever of its keys sends them.", examples: [99], header: { id: 'X-RateLimit-Remaining' } });
const RateLimitReset = z.int().min(0).meta({ description: "Unix timestamp (seconds) at which the account's window resets.", examples: [1767225600], header: { id: 'X-RateLimit-Reset' } });
const RetryAfter = z.int().min(1).meta({ description: 'Seconds to wait before retrying.', examples: [12], header: { id: 'Retry-After' } });
const RequestIdHeader = z.string().meta({
  description: 'Identifies the request in every log line of every service that handled it; quote it when reporting a problem. Echoes the X-Request-Id the caller sent when well-formed (1-128 characters of A-Z a-z 0-9 _ . : -), otherwise generated.',
  examples: ['0f8b5c1e-7d2a-4c3b-9e6f-1a2b3c4d5e6f'],
  header: { id: 'X-Request-Id' },
});

const rateLimitHeaders = { 'X-RateLimit-Limit': RateLimitLimit, 'X-RateLimit-Remaining': RateLimitRemaining, 'X-RateLimit-Reset': RateLimitReset };

/** The headers of a successful response of `route`. */
function successHeaders(route: ApiRoute) {
  return z.object({ 'X-Request-Id': RequestIdHeader, ...(route.limit !== null ? rateLimitHeaders : {}) });
}

// ---- Errors ----

const ERROR_DESCRIPTIONS: Record<ErrorType, string> = {
  validation_error: 'Invalid request parameters; `detail` names each offending field and why (`body` for a body over the size limit, 256 KiB by default).',
  unauthorized: 'Missing, malformed, unknown, revoked or expired API key.',
  forbidden: 'The API key does not have the scope this route needs; `detail` names it.',
  not_found: 'No such resource (another tenant\'s resources are reported the same way).',
  conflict: 'The request conflicts with the resource\'s current state.',
  payload_too_large: 'The request body exceeds the size limit (256 KiB by default).',
  unsupported_media_type: 'The request body is not application/json.',
  unprocessable_entity: 'The Idempotency-Key was already used with a different request body.',
  rate_limit_exceeded: "Rate limit exceeded (the account's, all of its API keys together; or too many failed authentications from the caller's address); see Retry-After.",
  internal_error: 'Server error. The detail never contains internals; quote X-Request-Id when reporting it.',
  bad_gateway: 'A service behind the gateway failed.',
  service_unavailable: 'A service behind the gateway is unavailable.',
  gateway_timeout: 'A service behind the gateway did not answer in time.',
};

const pascal = (type: string) => type.replace(/(^|_)([a-z])/g, (_match, _sep: string, letter: string) => letter.toUpperCase());

/**
 * The error responses are shared components, one per error type. Rate-limited routes have two 429s: the
 * per-minute one with the X-RateLimit-* headers, and the chat-concurrency one. (Errors produced after the
 * limiter, such as 413, carry the X-RateLimit-* headers too; they are documented where they always appear:
 * on successes and on 429.)
 */
function errorResponse(route: ApiRoute, type: ErrorType, cache: Map<string, ZodOpenApiResponseObject>): ZodOpenApiResponseObject {
  const tooManyStreams = type === 'rate_limit_exceeded' && route.limit === 'concurrent_streams';
  const id = tooManyStreams ? 'TooManyChatRequests' : pascal(type);
  const cached = cache.get(id);
  if (cached !== undefined) return cached;
  const headers = z.object({
    'X-Request-Id': RequestIdHeader,
    ...(type === 'rate_limit_exceeded' && !tooManyStreams ? rateLimitHeaders : {}),
    ...(type === 'rate_limit_exceeded' ? { 'Retry-After': RetryAfter } : {}),
  });
  const response: ZodOpenApiResponseObject = {
    id,
    description: tooManyStreams
      ? `Already ${CHAT_STREAMS_PER_KEY} chat requests in flight for this account (its API keys together), or its ${CHAT_TURNS_PER_MINUTE} chat requests of the minute used (that answer also carries the X-RateLimit-* headers).`
      : ERROR_DESCRIPTIONS[type],
    headers,
    content: { 'application/json': { schema: ErrorBody } },
  };
  cache.set(id, response);
  return response;
}

// ---- Operations ----

/** `x-sse-events` of a text/event-stream body: event name → $ref of its data schema. */
function sseEventRefs(events: SseEvents): Record<string, { $ref: string }> {
  return Object.fromEntries(
    Object.entries(events).map(([name, schema]) => {
      const id = z.globalRegistry.get(schema)?.id;
      if (id === undefined) throw new Error(`SSE event ${name} has a schema without an id`);
      return [name, { $ref: `#/components/schemas/${id}` }];
    }),
  );
}

function successResponse(route: ApiRoute, response: ApiResponse): ZodOpenApiResponseObject {
  const content: NonNullable<ZodOpenApiResponseObject['content']> = {};
  if (response.json !== undefined) content['application/json'] = { schema: response.json };
  if (response.events !== undefined) {
    content['text/event-stream'] = {
      schema: z.string().meta({ description: `Server-Sent Events: ${Object.keys(response.events).join(', ')}. ${SSE_NOTE}` }),
      'x-sse-events': sseEventRefs(response.events),
    };
  }
  if (response.html === true) content['text/html'] = { schema: z.string() };
  return {
    description: response.description,
    headers: successHeaders(route),
    ...(Object.keys(content).length > 0 ? { content } : {}),
  };
}

function scopeNote(route: ApiRoute): string {
  if (route.scope === null) return '';
  const scope = route.scope === 'job_type' ? 'the scope of the job\'s product ({job_type}: news, stock-report or analysis)' : `the \`${route.scope}\` scope`;
  return `\n\nRequires an API key with ${scope}.`;
}

function operation(route: ApiRoute, errorResponses: Map<string, ZodOpenApiResponseObject>): ZodOpenApiOperationObject {
  const responses: ZodOpenApiOperationObject['responses'] = {};
  for (const [status, response] of Object.entries(route.responses) as [SuccessStatus, ApiResponse][]) {
    responses[status] = successResponse(route, response);
  }
  for (const type of errorStatuses(route)) responses[String(ERROR_STATUS[type]) as `4${string}` | `5${string}`] = errorResponse(route, type, errorResponses);

  const op: ZodOpenApiOperationObject = {
    operationId: route.id,
    tags: [route.tag],
    summary: route.summary,
    description: `${route.description}${scopeNote(route)}`,
    // 3.1 allows role names in the requirement of a non-OAuth scheme: the key's required scope.
    security: route.scope === null ? [] : [{ ApiKey: route.scope === 'job_type' ? [] : [route.scope] }],
    'x-required-scope': route.scope,
    'x-rate-limit': route.limit,
    parameters: [{ $ref: '#/components/parameters/RequestId' }],
    responses,
  };
  if (route.request?.params !== undefined || route.request?.query !== undefined || route.request?.headers !== undefined) {
    op.requestParams = {
      ...(route.request.params !== undefined ? { path: route.request.params } : {}),
      ...(route.request.query !== undefined ? { query: route.request.query } : {}),
      ...(route.request.headers !== undefined ? { header: route.request.headers } : {}),
    };
  }
  if (route.request?.body !== undefined) {
    op.requestBody = { required: true, content: { 'application/json': { schema: route.request.body } } };
  }
  return op;
}

export const OPENAPI_VERSION = '3.1.0';

/** The OpenAPI 3.1 document of the public API, generated from API_ROUTES and the contract schemas. */
export function createOpenApiDocument(options: { version?: string; serverUrl?: string } = {}): ReturnType<typeof createDocument> {
  const paths: ZodOpenApiPathsObject = {};
  const errorResponses = new Map<string, ZodOpenApiResponseObject>();
  for (const route of API_ROUTES as readonly ApiRoute[]) {
    const item = (paths[route.path] ??= {});
    item[route.method] = operation(route, errorResponses);
  }
  // Event schemas are referenced from x-sse-events, which zod-openapi does not read: register them explicitly.
  const eventSchemas = Object.fromEntries(
    [...Object.values(ChatStreamEvents), ...Object.values(AnalysisStreamEvents)].map((schema) => [z.globalRegistry.get(schema)?.id ?? '', schema]),
  );
  return createDocument({
    openapi: OPENAPI_VERSION,
    info: {
      title: 'Financial Intelligence API',
      version: options.version ?? '1.0.0',
      description:
        'AI-generated financial research over HTTP: news intelligence, stock analysis, streamed chat and custom analysis, with asynchronous jobs polled for status and result.\n\n' +
        'Authenticate with the `X-API-Key` header. Every error has the body `{detail, status_code, type}`. Every response carries `X-Request-Id`.',
    },
    servers: [{ url: options.serverUrl ?? '/', description: 'This gateway' }],
    security: [{ ApiKey: [] }],
    tags: [
      { name: 'Products', description: 'News, stock analysis and custom analysis.' },
      { name: 'Chat', description: 'Streamed research conversations.' },
      { name: 'Jobs', description: 'Status and result of asynchronous jobs.' },
      { name: 'Customer tools', description: 'External data APIs the AI may call while analysing.' },
      { name: 'Documentation', description: 'This document.' },
    ],
    paths,
    components: {
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'The API key generated in the web portal. Keys carry scopes: news, stock-report, analysis, chat, tools.' },
      },
      parameters: {
        RequestId: z.string().regex(/^[\w.:-]{1,128}$/).optional().meta({
          param: { in: 'header', name: 'X-Request-Id', description: 'Optional id for this request, echoed in the X-Request-Id response header and in every log line.' },
        }),
      },
      schemas: { ErrorBody, ...eventSchemas },
    },
  });
}
