// The OpenAPI 3.1 document of the public API, generated from the route table (API_ROUTES in routes.ts) and the
// contract schemas it names.
import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject, type ZodOpenApiResponseObject } from 'zod-openapi';
import { ERROR_STATUS, ErrorBody, type ErrorType } from './errors';
import { WebhookEvent } from './webhooks';
import {
  API_ROUTE_LIST,
  API_SCOPES,
  CHAT_STREAMS_PER_ACCOUNT,
  CHAT_TURNS_PER_MINUTE,
  SSE_NOTE,
  type ApiResponse,
  type ApiRoute,
  type SseEvents,
  type SuccessStatus,
} from './routes';

/** The error statuses a route can answer with, from what it is: keyed, limited, with input, with a body. */
export function errorStatuses(route: ApiRoute): ErrorType[] {
  const types: ErrorType[] = [];
  const hasInput = route.request !== undefined;
  if (hasInput) types.push('validation_error');
  if (route.scope !== null) types.push('unauthorized');
  if (route.scope !== null && route.scope !== 'any') types.push('forbidden');
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
export function responseSchema(
  route: ApiRoute,
  status: number,
  contentType: 'application/json' | 'text/event-stream' = 'application/json',
): z.ZodType | SseEvents | undefined {
  const success = route.responses[String(status) as SuccessStatus];
  if (success !== undefined) return contentType === 'text/event-stream' ? success.events : success.json;
  return errorStatuses(route).some((type) => ERROR_STATUS[type] === status) ? ErrorBody : undefined;
}

// ---- Headers ----

const RateLimitLimit = z
  .int()
  .min(0)
  .meta({
    description: 'Requests allowed per window (one minute) for the account (all of its API keys together) on this product.',
    examples: [100],
    header: { id: 'X-RateLimit-Limit' },
  });
const RateLimitRemaining = z
  .int()
  .min(0)
  .meta({
    description: "Requests remaining in the account's current window, whichever of its keys sends them.",
    examples: [99],
    header: { id: 'X-RateLimit-Remaining' },
  });
const RateLimitReset = z
  .int()
  .min(0)
  .meta({
    description: "Unix timestamp (seconds) at which the account's window resets.",
    examples: [1767225600],
    header: { id: 'X-RateLimit-Reset' },
  });
const RetryAfter = z
  .int()
  .min(1)
  .meta({ description: 'Seconds to wait before retrying.', examples: [12], header: { id: 'Retry-After' } });
const RequestIdHeader = z.string().meta({
  description:
    'Identifies the request in every log line of every service that handled it; quote it when reporting a problem. Echoes the X-Request-Id the caller sent when well-formed (1-128 characters of A-Z a-z 0-9 _ . : -), otherwise generated.',
  examples: ['0f8b5c1e-7d2a-4c3b-9e6f-1a2b3c4d5e6f'],
  header: { id: 'X-Request-Id' },
});

const rateLimitHeaders = {
  'X-RateLimit-Limit': RateLimitLimit,
  'X-RateLimit-Remaining': RateLimitRemaining,
  'X-RateLimit-Reset': RateLimitReset,
};

const NoStoreHeader = z
  .literal('no-store')
  .meta({ description: 'The answer holds a secret shown this once: no browser, proxy or client cache may keep it.' });

/** The headers of a successful response of `route`. */
function successHeaders(route: ApiRoute) {
  return z.object({
    'X-Request-Id': RequestIdHeader,
    ...(route.limit !== null ? rateLimitHeaders : {}),
    ...(route.secretInAnswer === true ? { 'Cache-Control': NoStoreHeader } : {}),
    ...(route.cacheControl !== undefined
      ? {
          'Cache-Control': z.literal(route.cacheControl).meta({
            description:
              'How long a client or its private cache may reuse the answer without asking again (no shared cache: it needs a key).',
          }),
        }
      : {}),
  });
}

// ---- Errors ----

const ERROR_DESCRIPTIONS: Record<ErrorType, string> = {
  validation_error:
    'Invalid request parameters; `detail` names each offending field and why (`body` for a body over the size limit, 256 KiB by default). Also the answer to a request that is not valid HTTP (an oversized header block, a malformed request line), on any route.',
  unauthorized: 'Missing, malformed, unknown, revoked or expired API key.',
  forbidden: 'The API key does not have the scope this route needs; `detail` names it.',
  not_found: "No such resource (another tenant's resources are reported the same way).",
  method_not_allowed: 'The route does not offer this method; `Allow` names those it does.',
  conflict: "The request conflicts with the resource's current state.",
  payload_too_large: 'The request body exceeds the size limit (256 KiB by default).',
  unsupported_media_type: 'The request body is not application/json.',
  unprocessable_entity: 'The Idempotency-Key was already used with a different request body.',
  rate_limit_exceeded:
    "Rate limit exceeded (the account's, all of its API keys together; or too many failed authentications from the caller's address); see Retry-After.",
  model_refused:
    'The AI model declined to answer this request (its safety classifiers stopped it: stop_reason `refusal`). Rephrasing the request may help; sending it again unchanged will not.',
  model_request_rejected:
    "The AI model provider refused the request the service built (a 4xx from the model API): our fault, not the caller's. It is logged with the provider's request id and alerted on; sending it again fails the same way until it is fixed.",
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
      ? `Already ${CHAT_STREAMS_PER_ACCOUNT} chat requests in flight for this account (its API keys together), or its ${CHAT_TURNS_PER_MINUTE} chat requests of the minute used (that answer also carries the X-RateLimit-* headers).`
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

/** The frame schema of each (event name, data schema), shared by the streams that send it: one component each. */
const sseFrames = new Map<string, z.ZodType>();

/** The frame of event `name` with `data`: a component named after the data's schema (`ChatTokenEventFrame`). */
function sseFrame(name: string, data: z.ZodType): { id: string; schema: z.ZodType } {
  const dataId = z.globalRegistry.get(data)?.id;
  if (dataId === undefined) throw new Error(`SSE event ${name} has a schema without an id`);
  const id = `${dataId}Frame`;
  let schema = sseFrames.get(id);
  if (schema === undefined) {
    schema = z
      .object({
        event: z.literal(name),
        id: z.string().optional().meta({ description: 'The id line, on streams that resume from Last-Event-ID.' }),
        data,
      })
      .meta({ id, title: name, description: `An SSE frame of event \`${name}\` whose data line is ${dataId}.` });
    sseFrames.set(id, schema);
  } else if ((schema as z.ZodObject<{ event: z.ZodLiteral<string> }>).shape.event.value !== name) {
    throw new Error(`SSE frame ${id} is sent under two event names`);
  }
  return { id, schema };
}

/**
 * The schema of a text/event-stream body: one of its events, each an object of the frame's fields (`event`, the
 * event's name; `id` when the stream has ids; `data`, the parsed JSON of its data line, with the event's schema),
 * discriminated by `event` — a form renderers and code generators read. `x-sse-events` keeps the plain map. Each
 * frame is a component of its own, so that the discriminator's mapping can name it (an inline one cannot be
 * selected: Redocly's no-illogical-composition-keywords).
 */
function sseStreamSchema(events: SseEvents): z.ZodType {
  const frames = Object.entries(events).map(([name, data]) => ({ name, ...sseFrame(name, data) }));
  const [first, ...rest] = frames;
  if (first === undefined) throw new Error('an event stream without events');
  return z
    .discriminatedUnion('event', [first.schema, ...rest.map((frame) => frame.schema)] as unknown as [
      z.ZodObject<{ event: z.ZodLiteral<string> }>,
      ...z.ZodObject<{ event: z.ZodLiteral<string> }>[],
    ])
    .meta({
      description: `Server-Sent Events: ${Object.keys(events).join(', ')}. ${SSE_NOTE}`,
      override: {
        discriminator: {
          propertyName: 'event',
          mapping: Object.fromEntries(frames.map((frame) => [frame.name, `#/components/schemas/${frame.id}`])),
        },
      },
    });
}

function successResponse(route: ApiRoute, response: ApiResponse): ZodOpenApiResponseObject {
  const content: NonNullable<ZodOpenApiResponseObject['content']> = {};
  if (response.json !== undefined) content['application/json'] = { schema: response.json };
  if (response.events !== undefined) {
    content['text/event-stream'] = {
      schema: sseStreamSchema(response.events),
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
  if (route.scope === 'any') return "\n\nRequires an API key, of any scope (what it offers depends on the key's scopes).";
  const scope =
    route.scope === 'job_type'
      ? "the scope of the job's product ({job_type}: news, stock-report or analysis)"
      : `the \`${route.scope}\` scope`;
  return `\n\nRequires an API key with ${scope}.`;
}

function operation(route: ApiRoute, errorResponses: Map<string, ZodOpenApiResponseObject>): ZodOpenApiOperationObject {
  const responses: ZodOpenApiOperationObject['responses'] = {};
  for (const [status, response] of Object.entries(route.responses) as [SuccessStatus, ApiResponse][]) {
    responses[status] = successResponse(route, response);
  }
  for (const type of errorStatuses(route))
    responses[String(ERROR_STATUS[type]) as `4${string}` | `5${string}`] = errorResponse(route, type, errorResponses);

  const op: ZodOpenApiOperationObject = {
    operationId: route.id,
    tags: [route.tag],
    summary: route.summary,
    description: `${route.description}${scopeNote(route)}`,
    // 3.1 allows role names in the requirement of a non-OAuth scheme: the key's required scope.
    security: route.scope === null ? [] : [{ ApiKey: route.scope === 'job_type' || route.scope === 'any' ? [] : [route.scope] }],
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

/** A delivery's headers (Standard Webhooks). */
const WebhookHeaders = z.object({
  'webhook-id': z.uuid().meta({ description: 'The delivery: the same on every attempt and redelivery; drop repeats by it.' }),
  'webhook-timestamp': z.string().regex(/^\d+$/).meta({ description: 'When this attempt was signed, in Unix seconds.' }),
  'webhook-signature': z.string().meta({
    description:
      'Space-separated `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`, keyed with the base64-decoded part of the `whsec_` secret after the prefix; two entries for 24 h after a rotation.',
  }),
});

/** What this API sends to registered endpoints and callback URLs (OpenAPI 3.1 `webhooks`). */
const WEBHOOK_DELIVERIES: ZodOpenApiPathsObject = Object.fromEntries(
  (
    [
      [
        'job.completed',
        'webhookJobCompleted',
        'A job completed: its result is in `data.result` when its JSON is at most 64 KiB (else read `data.result_url`).',
      ],
      ['job.failed', 'webhookJobFailed', 'A job failed and will not complete: `data.error` says why.'],
      ['webhook.test', 'webhookTest', 'Sent by POST /api/webhooks/{id}/test.'],
    ] as const
  ).map(([event, operationId, description]) => [
    event,
    {
      post: {
        summary: event,
        operationId,
        description: `${description} Signed as Standard Webhooks describes; retried with backoff for 24 hours until the endpoint answers 2xx within 10 s.`,
        tags: ['Webhooks'],
        requestParams: { header: WebhookHeaders },
        requestBody: { content: { 'application/json': { schema: WebhookEvent } } },
        responses: { '2XX': { description: 'Received; any other answer (a redirect too) is retried.' } },
      },
    },
  ]),
);

/** The OpenAPI 3.1 document of the public API, generated from API_ROUTES and the contract schemas. */
export function createOpenApiDocument(options: { version?: string; serverUrl?: string } = {}): ReturnType<typeof createDocument> {
  const paths: ZodOpenApiPathsObject = {};
  const errorResponses = new Map<string, ZodOpenApiResponseObject>();
  for (const route of API_ROUTE_LIST as readonly ApiRoute[]) {
    if (route.documented === false) continue;
    const item = (paths[route.path] ??= {});
    item[route.method] = operation(route, errorResponses);
  }
  return createDocument({
    openapi: OPENAPI_VERSION,
    info: {
      title: 'Financial Intelligence API',
      version: options.version ?? '1.0.0',
      // The API is a commercial service, used under the customer's agreement; no open licence is granted (an SPDX
      // LicenseRef-, as the package's "UNLICENSED" says in npm's terms).
      license: { name: 'Proprietary: use under your agreement with the provider', identifier: 'LicenseRef-Proprietary' },
      description:
        "AI-generated financial research over HTTP: news intelligence, stock analysis, streamed chat and custom analysis, with asynchronous jobs polled for status and result, and US companies' SEC filings.\n\n" +
        'Authenticate with the `X-API-Key` header. Every error has the body `{detail, status_code, type}`. Every response carries `X-Request-Id`.',
    },
    servers: [{ url: options.serverUrl ?? '/', description: 'This gateway' }],
    security: [{ ApiKey: [] }],
    tags: [
      { name: 'Products', description: 'News, stock analysis and custom analysis.' },
      { name: 'Chat', description: 'Streamed research conversations.' },
      { name: 'Jobs', description: 'Status and result of asynchronous jobs.' },
      { name: 'Filings', description: "US companies' SEC filings from EDGAR, and their sections' text." },
      { name: 'Customer tools', description: 'External data APIs the AI may call while analysing.' },
      { name: 'Webhooks', description: 'Endpoints told when a job finishes, and their deliveries.' },
      { name: 'Documentation', description: 'This document.' },
    ],
    paths,
    webhooks: WEBHOOK_DELIVERIES,
    components: {
      securitySchemes: {
        ApiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-API-Key',
          description: `The API key generated in the web portal. Keys carry scopes: ${API_SCOPES.join(', ')}.`,
        },
      },
      parameters: {
        RequestId: z
          .string()
          .regex(/^[\w.:-]{1,128}$/)
          .optional()
          .meta({
            param: {
              in: 'header',
              name: 'X-Request-Id',
              description: 'Optional id for this request, echoed in the X-Request-Id response header and in every log line.',
            },
          }),
      },
      schemas: { ErrorBody },
    },
  });
}
