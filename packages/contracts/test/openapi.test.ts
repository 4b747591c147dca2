// The OpenAPI document: structurally valid 3.1 (every $ref resolves), one operation per route of API_ROUTES,
// every error documented with ErrorBody, and every documented response schema accepting what the services
// send — checked twice: with the zod schema, and with the JSON Schema the document itself states.
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { z } from 'zod';
import {
  API_ROUTES,
  API_ROUTE_LIST,
  AnalysisResponse,
  AnalysisDoneEvent,
  AnalysisStreamEvents,
  AnalysisSynthesisChunkEvent,
  AsyncJobResponse,
  ChatDoneEvent,
  ChatNodeStartEvent,
  ChatStreamEvents,
  ChatTokenEvent,
  ChatToolEndEvent,
  ChatToolStartEvent,
  ERROR_STATUS,
  ErrorBody,
  FilingListResponse,
  FilingResponse,
  FilingSectionResponse,
  JobStatusResponse,
  JobStreamEvents,
  NewsResponse,
  StockReportResponse,
  createOpenApiDocument,
  errorStatuses,
  jobUrls,
  responseSchema,
  type ApiRoute,
  type ApiRouteId,
  type SseEvents,
} from '../src';
import { UUID } from './helpers';

type Json = Record<string, unknown>;
const document = JSON.parse(JSON.stringify(createOpenApiDocument())) as Json & {
  openapi: string;
  paths: Record<string, Record<string, Json & { responses: Record<string, Json>; parameters?: Json[]; security?: unknown }>>;
  components: { schemas: Record<string, Json>; responses: Record<string, Json>; securitySchemes: Record<string, Json> };
};
/** The routes the document describes: all but those that offer no operation (GET /mcp, which only answers 405). */
const routes: readonly ApiRoute[] = (API_ROUTE_LIST as readonly ApiRoute[]).filter((route) => route.documented !== false);

function resolvePointer(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  return ref
    .slice(2)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((node, key) => (typeof node === 'object' && node !== null ? (node as Json)[key] : undefined), root);
}

function collectRefs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((child) => collectRefs(child, out));
  else if (typeof node === 'object' && node !== null) {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') out.push(value);
      else collectRefs(value, out);
    }
  }
  return out;
}

const deref = (node: unknown): Json => {
  const ref = (node as Json | undefined)?.$ref;
  return (typeof ref === 'string' ? resolvePointer(document, ref) : node) as Json;
};

/** The document's own JSON Schema for a media type, as a zod validator ($refs into the components). */
const definitions = JSON.parse(JSON.stringify(document.components.schemas).replaceAll('#/components/schemas/', '#/$defs/')) as Json;
function documentValidator(schema: unknown): z.ZodType {
  const rewritten = JSON.parse(JSON.stringify(schema).replaceAll('#/components/schemas/', '#/$defs/')) as Json;
  return z.fromJSONSchema({ ...rewritten, $defs: definitions } as Parameters<typeof z.fromJSONSchema>[0]);
}

function documentedResponse(route: ApiRoute, status: string): Json {
  const response = deref(document.paths[route.path]?.[route.method]?.responses[status]);
  if (response === undefined) throw new Error(`${route.id} documents no ${status}`);
  return response;
}

describe('OpenAPI document structure', () => {
  it('is OpenAPI 3.1 with info, paths and components', () => {
    expect(document.openapi).toMatch(/^3\.1\.\d+$/);
    expect(document.info).toMatchObject({ title: 'Financial Intelligence API', version: expect.any(String) });
    expect(Object.keys(document.paths).length).toBeGreaterThan(0);
  });

  it('has every $ref resolving to something in the document', () => {
    const refs = collectRefs(document);
    expect(refs.length).toBeGreaterThan(50);
    expect([...new Set(refs)].filter((ref) => resolvePointer(document, ref) === undefined)).toEqual([]);
  });

  it('keys every route of API_ROUTES by its id, and lists them in the order of the document', () => {
    for (const [key, route] of Object.entries(API_ROUTES)) expect(route.id).toBe(key);
    expect(routes.map((route) => route.id)).toEqual(Object.keys(API_ROUTES).filter((id) => id !== 'mcpStream'));
    // GET /mcp is routed (405) but is no operation: its absence is stated on POST /mcp.
    expect(document.paths['/mcp']).not.toHaveProperty('get');
    expect(document.paths['/mcp']?.post?.description).toContain('`GET /mcp` answers 405');
    const documented = Object.values(document.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
    // The document groups operations by path, each path where its first route is.
    const byPath = new Map<string, string[]>();
    for (const route of routes) byPath.set(route.path, [...(byPath.get(route.path) ?? []), route.id]);
    expect(documented).toEqual([...byPath.values()].flat());
  });

  it('has one operation per route, with a unique operationId, the same method and path', () => {
    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => ({ path, method, id: op.operationId })),
    );
    expect(operations).toHaveLength(routes.length);
    expect(new Set(operations.map((op) => op.id)).size).toBe(routes.length);
    for (const route of routes) expect(operations).toContainEqual({ path: route.path, method: route.method, id: route.id });
  });

  it('declares every path parameter of a path template, as required', () => {
    for (const route of routes) {
      const templated = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]);
      const parameters = (document.paths[route.path]?.[route.method]?.parameters ?? []).map(deref);
      const inPath = parameters.filter((parameter) => parameter.in === 'path');
      expect([route.id, inPath.map((parameter) => parameter.name).sort()]).toEqual([route.id, templated.sort()]);
      for (const parameter of inPath) expect(parameter.required).toBe(true);
    }
  });

  it('requires the X-API-Key on every route but the documentation, naming the scope', () => {
    expect(document.components.securitySchemes.ApiKey).toEqual(
      expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-API-Key' }),
    );
    for (const route of routes) {
      const security = document.paths[route.path]?.[route.method]?.security;
      if (route.scope === null) expect(security).toEqual([]);
      else expect(security).toEqual([{ ApiKey: route.scope === 'job_type' || route.scope === 'any' ? [] : [route.scope] }]);
    }
  });

  it("documents every error a route can answer with the spec's error body", () => {
    const keyed = ['unauthorized', 'forbidden', 'bad_gateway', 'service_unavailable', 'gateway_timeout', 'internal_error'] as const;
    for (const route of routes) {
      const expected = errorStatuses(route);
      // A route any key may use (the MCP endpoint) has no scope to refuse with 403.
      if (route.scope !== null)
        for (const type of keyed) if (type !== 'forbidden' || route.scope !== 'any') expect(expected).toContain(type);
      if (route.scope === 'any') expect(expected).not.toContain('forbidden');
      if (route.request?.body !== undefined)
        expect(expected).toEqual(expect.arrayContaining(['validation_error', 'unsupported_media_type']));
      if (route.limit !== null) expect(expected).toContain('rate_limit_exceeded');
      for (const type of expected) {
        const content = documentedResponse(route, String(ERROR_STATUS[type])).content as Record<string, { schema: unknown }>;
        expect([route.id, type, content['application/json']?.schema]).toEqual([route.id, type, { $ref: '#/components/schemas/ErrorBody' }]);
      }
    }
  });

  it("documents event streams as text/event-stream with each event's schema", () => {
    const streaming = routes.filter((route) => Object.values(route.responses).some((response) => response.events !== undefined));
    expect(streaming.map((route) => route.id)).toEqual(
      expect.arrayContaining(['chat', 'chatStream', 'createAnalysis', 'getJobEvents', 'mcp']),
    );
    for (const route of streaming) {
      for (const [status, response] of Object.entries(route.responses)) {
        if (response.events === undefined) continue;
        const stream = (documentedResponse(route, status).content as Record<string, Json>)['text/event-stream'];
        const expected = Object.entries(response.events).map(([name, schema]) => [
          name,
          `#/components/schemas/${z.globalRegistry.get(schema)?.id}`,
        ]);
        // The plain map: event name → $ref of its data.
        const events = stream?.['x-sse-events'] as Record<string, { $ref: string }>;
        expect(Object.entries(events).map(([name, ref]) => [name, ref.$ref])).toEqual(expected);
        // The schema renderers and generators read: one frame object per event, each a component the
        // discriminator's mapping names (an inline one could not be selected by it).
        const schema = stream?.schema as {
          oneOf: { $ref: string }[];
          discriminator: { propertyName: string; mapping: Record<string, string> };
        };
        expect(schema.discriminator.propertyName).toBe('event');
        expect(Object.values(schema.discriminator.mapping)).toEqual(schema.oneOf.map((frame) => frame.$ref));
        const frames = schema.oneOf.map((entry) => {
          const frame = deref(entry);
          const properties = frame.properties as Record<string, Json>;
          expect(frame.required).toEqual(['event', 'data']);
          expect(schema.discriminator.mapping[properties.event?.const as string]).toBe(entry.$ref);
          return [properties.event?.const, properties.data?.$ref];
        });
        expect([route.id, frames]).toEqual([route.id, expected]);
      }
    }
  });

  it('names the events of the chat and analysis streams in their schemas', () => {
    const eventNames = (route: ApiRoute) =>
      (
        (documentedResponse(route, '200').content as Record<string, Json>)['text/event-stream']?.schema as {
          oneOf: Json[];
        }
      ).oneOf.map((frame) => (deref(frame).properties as { event: Json }).event.const);
    expect(eventNames(API_ROUTES.chatStream)).toEqual(['token', 'node_start', 'tool_start', 'tool_end', 'progress', 'done', 'error']);
    expect(eventNames(API_ROUTES.chat)).toEqual(Object.keys(ChatStreamEvents));
    expect(eventNames(API_ROUTES.createAnalysis)).toEqual(['synthesis_chunk', 'done', 'error']);
    expect(eventNames(API_ROUTES.getJobEvents)).toEqual(Object.keys(JobStreamEvents));
    expect(Object.keys(AnalysisStreamEvents)).toEqual(['synthesis_chunk', 'done', 'error']);
  });

  it('references every schema component from some route (no orphans)', () => {
    /** $refs in schemas, not in the x-sse-events map (an extension a renderer ignores). */
    const schemaRefs = (node: unknown, out: string[] = []): string[] => {
      if (Array.isArray(node)) node.forEach((child) => schemaRefs(child, out));
      else if (typeof node === 'object' && node !== null) {
        for (const [key, value] of Object.entries(node)) {
          if (key === '$ref' && typeof value === 'string') out.push(value);
          else if (!key.startsWith('x-')) schemaRefs(value, out);
        }
      }
      return out;
    };
    const reached = new Set<string>();
    // Routes, and the deliveries sent to webhook endpoints (the document's `webhooks`).
    const queue = schemaRefs([document.paths, (document as { webhooks?: unknown }).webhooks]);
    for (let ref = queue.pop(); ref !== undefined; ref = queue.pop()) {
      if (reached.has(ref)) continue;
      reached.add(ref);
      queue.push(...schemaRefs(resolvePointer(document, ref)));
    }
    const components = Object.keys(document.components.schemas).map((name) => `#/components/schemas/${name}`);
    expect(components.length).toBeGreaterThan(30);
    expect(components.filter((ref) => !reached.has(ref))).toEqual([]);
    for (const event of [
      ChatTokenEvent,
      ChatNodeStartEvent,
      ChatToolStartEvent,
      ChatToolEndEvent,
      ChatDoneEvent,
      AnalysisSynthesisChunkEvent,
      AnalysisDoneEvent,
    ])
      expect(reached).toContain(`#/components/schemas/${z.globalRegistry.get(event)?.id}`);
  });
});

describe('OpenAPI document validity', () => {
  /**
   * Redocly's recommended-strict rules: the structure of OpenAPI 3.1, every $ref resolving, examples valid against
   * their schemas, unique operation ids, declared path parameters. Off: rules of style the spec decides otherwise.
   */
  const lint = async (source: unknown) => {
    const config = await createConfig({
      extends: ['recommended-strict'],
      rules: {
        // The spec's paths: /api/customer-tools/ and /api/webhooks/ end with a slash (as redocly.yaml says).
        'no-path-trailing-slash': 'off',
      },
    });
    const problems = await lintFromString({ source: JSON.stringify(source), absoluteRef: '/openapi.json', config });
    return problems.map((problem) => `${problem.ruleId}: ${problem.message} (${problem.location[0]?.pointer ?? ''})`);
  };

  it('validates as OpenAPI 3.1', async () => {
    expect(await lint(document)).toEqual([]);
  });

  it('is checked by a validator that rejects a broken document', async () => {
    const broken = JSON.parse(JSON.stringify(document)) as typeof document;
    (broken.components.schemas.ErrorBody as Json).type = 'strng';
    broken.paths['/api/chat/stream'] = { get: { responses: { '200': { $ref: '#/components/responses/Nothing' } } } };
    const problems = await lint(broken);
    expect(problems).toEqual(expect.arrayContaining([expect.stringMatching(/^struct: /), expect.stringMatching(/^no-unresolved-refs: /)]));
  });
});

// ---- Every documented response schema accepts what the services send ----

const example = <T>(schema: z.ZodType<T>): T => {
  const examples = z.globalRegistry.get(schema)?.examples;
  if (!Array.isArray(examples) || examples.length === 0) throw new Error('schema without an example');
  return schema.parse(examples[0]);
};

const tool = {
  id: UUID,
  name: 'get_portfolio_positions',
  description: 'Returns the positions of a client account.',
  endpoint: 'https://api.example.com/positions',
  method: 'POST',
  input_schema: { type: 'object', properties: { account: { type: 'string' } } },
  header_names: ['Authorization'],
  enabled: true,
  disabled_reason: null,
  timeout_ms: 10_000,
  products: ['analysis', 'chat'],
  created_at: '2026-01-05T10:00:00.000Z',
  updated_at: '2026-01-05T10:00:00+00:00',
};

const webhook = {
  id: UUID,
  url: 'https://hooks.example.com/fin',
  events: ['job.completed', 'job.failed'],
  description: 'order pipeline',
  enabled: true,
  products: ['news', 'stock-report', 'analysis'],
  failing_since: null,
  disabled_at: null,
  disabled_reason: null,
  created_at: '2026-01-05T10:00:00.000Z',
  updated_at: '2026-01-05T10:00:00+00:00',
};

const delivery = {
  id: UUID,
  webhook_id: UUID,
  callback_url: null,
  event_type: 'job.completed',
  job_id: UUID,
  job_type: 'news',
  status: 'succeeded',
  attempt_count: 2,
  next_attempt_at: null,
  created_at: '2026-01-05T10:00:00.000Z',
  attempts: [
    { attempted_at: '2026-01-05T10:00:05.000Z', outcome: 'ok', http_status: 204, duration_ms: 41, error: null, response_excerpt: null },
    {
      attempted_at: '2026-01-05T10:00:00.000Z',
      outcome: 'http_error',
      http_status: 500,
      duration_ms: 12,
      error: 'the endpoint answered HTTP 500',
      response_excerpt: 'oops',
    },
  ],
};

const callbackDelivery = { ...delivery, webhook_id: null, callback_url: 'https://orders.example.com/done' };

const errorSample = { detail: 'The chat service failed while streaming the response.', status_code: 502, type: 'bad_gateway' };

/** Bodies the services send, per route and success status. Every documented success response needs one. */
const SAMPLES: Record<
  ApiRouteId,
  Partial<Record<string, { json?: unknown[]; events?: Record<string, unknown>; none?: true; html?: string }>>
> = {
  createNews: {
    '200': { json: [example(NewsResponse), { ...example(NewsResponse), from_cache: false, news: [] }] },
    '202': { json: [example(AsyncJobResponse)] },
  },
  createStockReport: {
    '200': { json: [example(StockReportResponse)] },
    '202': { json: [{ job_id: UUID, status: 'pending', from_cache: false, ...jobUrls('stock-report', UUID) }] },
  },
  createAnalysis: {
    '200': {
      json: [
        {
          job_id: UUID,
          status: 'completed',
          ...jobUrls('analysis', UUID),
          result: { format: 'markdown', content: '## Rates\nModerate exposure.' },
        },
        {
          job_id: UUID,
          status: 'completed',
          ...jobUrls('analysis', UUID),
          result: { format: 'json_schema', content: { summary: 'Moderate', risk_score: 0.4 } },
        },
      ],
      events: { synthesis_chunk: { chunk: 'Rates ' }, done: { job_id: UUID, status: 'completed' }, error: errorSample },
    },
    '202': { json: [example(AnalysisResponse)] },
  },
  chat: {
    '200': {
      json: [{ conversation_id: UUID, message_id: '0b9a8c7d-6e5f-4a3b-8c1d-0e9f8a7b6c5d', response: 'Services revenue grew 14%.' }],
      events: {
        token: { type: 'token', content: 'Services ' },
        node_start: { type: 'node_start', node: 'research' },
        tool_start: { type: 'tool_start', tool: 'market_data' },
        tool_end: { type: 'tool_end', tool: 'market_data' },
        done: { type: 'done', conversation_id: UUID },
        error: errorSample,
      },
    },
  },
  chatStream: {
    '200': { events: { token: { type: 'token', content: 'More' }, done: { type: 'done', conversation_id: UUID }, error: errorSample } },
    '204': { none: true },
  },
  getJobStatus: {
    '200': {
      json: [
        example(JobStatusResponse),
        { job_id: UUID, status: 'completed', progress: 100, currently_working_on: 'Done', result_url: `/api/jobs/news/${UUID}/result` },
        {
          job_id: UUID,
          status: 'failed',
          progress: 40,
          currently_working_on: 'Analysing',
          error: { type: 'gateway_timeout', detail: 'The model did not answer in time.' },
        },
      ],
    },
  },
  getJobResult: {
    '200': {
      json: [
        { job_id: UUID, status: 'completed', result: { news: example(NewsResponse).news } },
        {
          job_id: UUID,
          status: 'completed',
          result: {
            detailed_analysis: example(StockReportResponse).detailed_analysis,
            quick_insights: example(StockReportResponse).quick_insights,
          },
        },
        { job_id: UUID, status: 'completed', result: { format: 'markdown', content: 'Text' } },
      ],
    },
  },
  getJobEvents: {
    '200': {
      events: {
        status: { job_id: UUID, status: 'running', progress: 5, currently_working_on: 'Starting' },
        progress: { job_id: UUID, progress: 45, currently_working_on: 'Looking up market data' },
        result: { job_id: UUID, status: 'completed', result: { news: example(NewsResponse).news } },
        error: { job_id: UUID, detail: 'The model did not answer in time.', status_code: 504, type: 'gateway_timeout' },
      },
    },
    '204': { none: true },
  },
  listFilings: {
    '200': {
      json: [
        ...(z.globalRegistry.get(FilingListResponse)?.examples as unknown[]),
        { ...example(FilingListResponse), source: 'sample', note: 'Sample data (offline mode).' },
      ],
    },
  },
  getFiling: { '200': { json: [example(FilingResponse), { ...example(FilingResponse), sections: [] }] } },
  getFilingSection: { '200': { json: [example(FilingSectionResponse)] } },
  listCustomerTools: { '200': { json: [{ tools: [tool] }, { tools: [] }] } },
  createCustomerTool: { '201': { json: [tool] } },
  getCustomerTool: { '200': { json: [tool] } },
  listCustomerToolCalls: {
    '200': {
      json: [
        {
          calls: [
            {
              id: UUID,
              tool_id: UUID,
              tool_name: 'get_portfolio_positions',
              source: 'job',
              product: 'analysis',
              job_id: UUID,
              conversation_id: null,
              outcome: 'ok',
              http_status: 200,
              duration_ms: 182,
              response_bytes: 1_024,
              error: null,
              created_at: '2026-01-05T10:00:00.000Z',
            },
            {
              id: UUID,
              tool_id: UUID,
              tool_name: 'get_portfolio_positions',
              source: 'portal_test',
              product: null,
              job_id: null,
              conversation_id: null,
              outcome: 'blocked_address',
              http_status: null,
              duration_ms: 3,
              response_bytes: 0,
              error: 'the endpoint does not resolve to a public internet address',
              created_at: '2026-01-05T10:00:00Z',
            },
          ],
        },
        { calls: [] },
      ],
    },
  },
  updateCustomerTool: { '200': { json: [{ ...tool, enabled: false, header_names: [] }] } },
  deleteCustomerTool: { '204': { none: true } },
  listWebhooks: { '200': { json: [{ webhooks: [webhook] }, { webhooks: [] }] } },
  createWebhook: { '201': { json: [{ ...webhook, secret: `whsec_${'A'.repeat(43)}=` }] } },
  getWebhook: { '200': { json: [webhook] } },
  updateWebhook: {
    '200': {
      json: [
        {
          ...webhook,
          enabled: false,
          events: ['job.failed'],
          disabled_at: '2026-01-06T10:00:00.000Z',
          disabled_reason: 'Disabled by the account.',
        },
        { ...webhook, products: [], failing_since: '2026-01-06T10:00:00.000Z' },
      ],
    },
  },
  deleteWebhook: { '204': { none: true } },
  rotateWebhookSecret: {
    '200': { json: [{ secret: `whsec_${'B'.repeat(43)}=`, previous_secret_expires_at: '2026-01-06T10:00:00.000Z' }] },
  },
  testWebhook: { '202': { json: [{ ...delivery, event_type: 'webhook.test', job_id: null, job_type: null, attempts: [] }] } },
  listWebhookDeliveries: { '200': { json: [{ deliveries: [delivery] }] } },
  listCallbackDeliveries: { '200': { json: [{ deliveries: [callbackDelivery] }] } },
  redeliverCallbackDelivery: { '202': { json: [{ ...callbackDelivery, status: 'pending', next_attempt_at: '2026-01-05T10:00:05.000Z' }] } },
  redeliverWebhookDelivery: { '202': { json: [{ ...delivery, status: 'pending', next_attempt_at: '2026-01-05T10:00:05.000Z' }] } },
  rotateCallbackSecret: {
    '200': { json: [{ secret: `whsec_${'C'.repeat(43)}=`, previous_secret_expires_at: '2026-01-06T10:00:00.000Z' }] },
  },
  mcp: {
    '200': {
      events: {
        message: { jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text: '{"news":[]}' }], isError: false } },
      },
    },
    '202': { none: true },
  },
  mcpStream: {},
  getOpenApiDocument: { '200': { json: [document] } },
  getApiDocs: { '200': { html: '<!doctype html><title>API</title>' } },
};

const cases = routes.flatMap((route) => Object.keys(route.responses).map((status) => [`${route.id} ${status}`, route, status] as const));

describe('documented response schemas', () => {
  it.each(cases)("%s: what the service sends parses with the zod schema and with the document's JSON Schema", (_name, route, status) => {
    const sample = SAMPLES[route.id as ApiRouteId][status];
    expect(sample).toBeDefined();
    const documented = documentedResponse(route, status);
    const content = (documented.content ?? {}) as Record<string, Json>;

    if (sample?.none === true) {
      expect(content).toEqual({});
      return;
    }
    if (sample?.html !== undefined) {
      expect(documentValidator(content['text/html']?.schema).parse(sample.html)).toBe(sample.html);
      return;
    }
    if (sample?.json !== undefined) {
      const schema = responseSchema(route, Number(status)) as z.ZodType;
      const validator = documentValidator(content['application/json']?.schema);
      for (const body of sample.json) {
        expect(schema.safeParse(body).error).toBeUndefined();
        expect(validator.safeParse(body).error).toBeUndefined();
      }
    } else {
      expect(content['application/json']).toBeUndefined();
    }
    if (sample?.events !== undefined) {
      const events = responseSchema(route, Number(status), 'text/event-stream') as SseEvents;
      const refs = content['text/event-stream']?.['x-sse-events'] as Record<string, { $ref: string }>;
      expect(Object.keys(sample.events).every((name) => name in events)).toBe(true);
      const stream = documentValidator(content['text/event-stream']?.schema);
      for (const [name, data] of Object.entries(sample.events)) {
        expect(events[name]?.safeParse(data).error).toBeUndefined();
        expect(documentValidator(refs[name]).safeParse(data).error).toBeUndefined();
        // The frame as the stream's documented schema states it: the event's name and its data.
        expect(stream.safeParse({ event: name, data }).error).toBeUndefined();
        expect(stream.safeParse({ event: name, id: '1', data }).error).toBeUndefined();
        expect(stream.safeParse({ event: 'no_such_event', data }).success).toBe(false);
      }
      // Data of one event under the name of another is refused (each event's data has a shape of its own).
      const [first, second] = Object.entries(sample.events);
      if (first !== undefined && second !== undefined) expect(stream.safeParse({ event: first[0], data: second[1] }).success).toBe(false);
    } else {
      expect(content['text/event-stream']).toBeUndefined();
    }
  });

  it('has a sample for every documented success response and no sample for an undocumented one', () => {
    for (const route of routes) expect(Object.keys(SAMPLES[route.id as ApiRouteId]).sort()).toEqual(Object.keys(route.responses).sort());
  });

  it('rejects what the services must not send, in the zod schema and in the document alike', () => {
    const news = routes.find((route) => route.id === 'createNews') as ApiRoute;
    const validator = documentValidator((documentedResponse(news, '200').content as Record<string, Json>)['application/json']?.schema);
    const { news: _dropped, ...withoutNews } = example(NewsResponse);
    for (const bad of [withoutNews, { ...example(NewsResponse), status: 'pending' }, { ...example(NewsResponse), job_id: 'job-1' }]) {
      expect(NewsResponse.safeParse(bad).success).toBe(false);
      expect(validator.safeParse(bad).success).toBe(false);
    }
    const status = routes.find((route) => route.id === 'getJobStatus') as ApiRoute;
    const failedWithoutError = { job_id: UUID, status: 'failed', progress: 10, currently_working_on: 'x' };
    expect(
      documentValidator((documentedResponse(status, '200').content as Record<string, Json>)['application/json']?.schema).safeParse(
        failedWithoutError,
      ).success,
    ).toBe(false);
  });

  it("documents error bodies that the spec's error body of every status parses", () => {
    const validator = documentValidator({ $ref: '#/components/schemas/ErrorBody' });
    for (const [type, status] of Object.entries(ERROR_STATUS)) {
      const body = { detail: 'x', status_code: status, type };
      expect(ErrorBody.parse(body)).toEqual(body);
      expect(validator.parse(body)).toEqual(body);
    }
    expect(validator.safeParse({ detail: 'x', status_code: 200, type: 'not_found' }).success).toBe(false);
    expect(validator.safeParse({ detail: 'x', status_code: 400, type: 'teapot' }).success).toBe(false);
  });

  it("documents request bodies that accept each schema's own example", () => {
    for (const route of routes) {
      if (route.request?.body === undefined) continue;
      const schema = (deref(document.paths[route.path]?.[route.method]?.requestBody).content as Record<string, Json>)['application/json']
        ?.schema;
      const examples = z.globalRegistry.get(route.request.body)?.examples as unknown[];
      expect(examples.length).toBeGreaterThan(0);
      for (const body of examples) {
        expect(route.request.body.safeParse(body).error).toBeUndefined();
        expect(documentValidator(schema).safeParse(body).error).toBeUndefined();
      }
    }
  });
});
