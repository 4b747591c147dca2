// The access matrix, generated from the route table: every route that names a resource by id (a path parameter, or
// conversation_id in a query or body) × whose resource it names (the caller's own, another tenant's, one that does
// not exist, a malformed id) × which key calls (valid, revoked, missing, one without the route's scope). Each cell
// has one expected answer, and no answer to any cell carries another tenant's data. Both tenants take the caller's
// seat in turn.
import {
  API_ROUTE_LIST,
  CustomerToolUpdateRequest,
  JobType,
  type ApiRoute,
  type ApiScope,
  type JobType as JobTypeName,
} from '@fin/contracts';
import { waitFor } from '@fin/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { parseErrorBody, parseSse, responseProblem } from '../../src/abuse/checks';
import type { WireResponse } from '../../src/abuse/http';
import { Tally, report } from '../../src/abuse/report';
import { createResources, type TenantResources } from '../../src/abuse/resources';
import { TENANTS, startAbuseTarget, type AbuseTarget, type TenantName } from '../../src/abuse/target';
import { UPSTREAM_MODES } from '../../src/system';

type Subject = 'own' | 'other' | 'nonexistent' | 'malformed';
type KeyKind = 'valid' | 'revoked' | 'missing' | 'wrong scope';
const SUBJECTS: readonly Subject[] = ['own', 'other', 'nonexistent', 'malformed'];
const KEY_KINDS: readonly KeyKind[] = ['valid', 'revoked', 'missing', 'wrong scope'];
const MALFORMED_ID = 'not-a-uuid';

/** Which resource an id parameter names. A new id parameter fails the suite until it is added here. */
type ResourceKind = 'job' | 'tool' | 'conversation' | 'webhook' | 'callback delivery';
/** A delivery_id beside an {id} is the endpoint's (the {id} is checked); alone, it names a callback delivery. */
const RESOURCE_OF_PARAMETER: Record<string, ResourceKind> = {
  job_id: 'job',
  id: 'tool',
  conversation_id: 'conversation',
  delivery_id: 'callback delivery',
};
/** `{id}` names a webhook endpoint under /api/webhooks/ (and a customer tool under /api/customer-tools/). */
const kindOf = (route: ApiRoute, parameter: string): ResourceKind | undefined =>
  parameter === 'id' && route.path.startsWith('/api/webhooks/') ? 'webhook' : RESOURCE_OF_PARAMETER[parameter];

interface Operation {
  name: string;
  route: ApiRoute;
  /** The id's parameter, as a 400 names it. */
  parameter: string;
  kind: ResourceKind;
  jobType?: JobTypeName;
  scope: ApiScope;
  /** The status the route documents for success (the first one). */
  success: number;
  /** `deliveryId`: a delivery of the endpoint's owner, for a route that names one beside the endpoint. */
  request(id: string, deliveryId: string): { method: string; path: string; body?: unknown };
}

function fill(path: string, values: Record<string, string>): string {
  return path.replace(/\{(\w+)\}/g, (_match, name: string) => encodeURIComponent(values[name] ?? ''));
}

/** The id-bearing operations of the route table. */
function operationsOf(routes: readonly ApiRoute[]): Operation[] {
  const operations: Operation[] = [];
  for (const route of routes) {
    // The MCP endpoint names no resource: what its tools touch is checked on the routes they call (and below).
    if (route.scope === null || route.scope === 'any') continue;
    const success = Number(Object.keys(route.responses).sort()[0]);
    const method = route.method.toUpperCase();
    const pathParameters = Object.keys(route.request?.params?.shape ?? {});
    const queryParameters = Object.keys(route.request?.query?.shape ?? {});
    const body = route.request?.body as { shape?: Record<string, unknown> } | undefined;
    const bodyFields = Object.keys(body?.shape ?? {});
    const idParameter = [...pathParameters, ...queryParameters, ...bodyFields].find(
      (name) => name in RESOURCE_OF_PARAMETER || /(^|_)id$/.test(name),
    );
    if (idParameter === undefined) continue;
    const kind = kindOf(route, idParameter);
    if (kind === undefined) throw new Error(`${route.id} names a resource by ${idParameter}: add it to RESOURCE_OF_PARAMETER`);
    const jobTypes: (JobTypeName | undefined)[] = pathParameters.includes('job_type') ? [...JobType.options] : [undefined];
    for (const jobType of jobTypes) {
      const scope = route.scope === 'job_type' ? (jobType as ApiScope) : route.scope;
      operations.push({
        name: `${method} ${route.path}${jobType ? ` (${jobType})` : ''}`,
        route,
        parameter: idParameter,
        kind,
        ...(jobType === undefined ? {} : { jobType }),
        scope,
        success,
        request: (id, deliveryId) => {
          if (pathParameters.includes(idParameter)) {
            const path = fill(route.path, { delivery_id: deliveryId, [idParameter]: id, ...(jobType ? { job_type: jobType } : {}) });
            // A body the route accepts, so that only the id decides the answer.
            const example = route.request?.body?.meta()?.examples?.[0];
            return {
              method,
              path,
              ...(route.request?.body === undefined
                ? {}
                : { body: { ...(example as object), ...(kind === 'tool' ? { name: 'matrix_tool' } : {}) } }),
            };
          }
          if (queryParameters.includes(idParameter)) return { method, path: `${route.path}?${idParameter}=${encodeURIComponent(id)}` };
          // An id in the body: chat's conversation_id (a turn, answered as one JSON body).
          return { method, path: route.path, body: { message: 'And the margins?', [idParameter]: id, stream: false } };
        },
      });
    }
  }
  return operations;
}

const OPERATIONS = operationsOf(API_ROUTE_LIST);

describe.each(UPSTREAM_MODES)('the access matrix of every id-bearing route (%s upstream)', (upstream) => {
  let target: AbuseTarget;
  const resources = {} as Record<TenantName, TenantResources>;
  const statuses = new Tally();
  let cells = 0;
  let leaks = 0;

  beforeAll(async () => {
    target = await startAbuseTarget(upstream);
    for (const tenant of TENANTS) resources[tenant] = await createResources(target.url, target.keys[tenant].valid, tenant);
  }, 180_000);

  afterAll(async () => {
    const exitCode = await target?.stop();
    report(
      `access-matrix-${upstream}`,
      `${cells} cells (${OPERATIONS.length} operations × ${SUBJECTS.length} subjects × ${KEY_KINDS.length} keys × ${TENANTS.length} callers, and the cross-tenant cache): ${leaks} leaks; statuses ${statuses.toString()}`,
      {
        cells,
        leaks,
        operations: OPERATIONS.map((operation) => operation.name),
        statuses: statuses.toJSON(),
      },
    );
    if (exitCode !== 0) throw new Error(`the system did not shut down cleanly (exit ${exitCode})`);
  });

  it('covers every id-bearing route of the table', () => {
    const covered = new Set(OPERATIONS.map((operation) => operation.route.id));
    expect([...covered].sort()).toEqual([
      'chat',
      'chatStream',
      'deleteCustomerTool',
      'deleteWebhook',
      'getCustomerTool',
      'getJobEvents',
      'getJobResult',
      'getJobStatus',
      'getWebhook',
      'listCallbackDeliveries',
      'listCustomerToolCalls',
      'listWebhookDeliveries',
      'redeliverCallbackDelivery',
      'redeliverWebhookDelivery',
      'rotateWebhookSecret',
      'testWebhook',
      'updateCustomerTool',
      'updateWebhook',
    ]);
  });

  function idFor(operation: Operation, tenant: TenantName, subject: Subject): string {
    const of = (owner: TenantName) => {
      const set = resources[owner];
      // A job_id without a job type (a filter of callback deliveries): the news job, which has a callback.
      if (operation.kind === 'job') return set.jobs[operation.jobType ?? 'news'];
      if (operation.kind === 'webhook') return set.webhookId;
      if (operation.kind === 'callback delivery') return set.callbackDeliveryId;
      return operation.kind === 'tool' ? set.toolId : set.conversationId;
    };
    if (subject === 'malformed') return MALFORMED_ID;
    if (subject === 'nonexistent') return '3fa85f64-5717-4562-b3fc-2c963f66afa6';
    return of(subject === 'own' ? tenant : (TENANTS.find((other) => other !== tenant) as TenantName));
  }

  function keyFor(tenant: TenantName, kind: KeyKind, scope: ApiScope): string | undefined {
    const keys = target.keys[tenant];
    if (kind === 'valid') return keys.valid;
    if (kind === 'revoked') return keys.revoked;
    if (kind === 'wrong scope') return keys.without[scope];
    return undefined;
  }

  async function call(operation: Operation, id: string, key: string | undefined, deliveryId = ''): Promise<WireResponse> {
    const { method, path, body } = operation.request(id, deliveryId);
    const response = await fetch(`${target.url}${path}`, {
      method,
      headers: {
        ...(key === undefined ? {} : { 'X-API-Key': key }),
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, headers: Object.fromEntries(response.headers), body: Buffer.from(await response.arrayBuffer()) };
  }

  /** Why the answer to a cell is wrong, or undefined. */
  function cellProblem(
    operation: Operation,
    subject: Subject,
    kind: KeyKind,
    response: WireResponse,
    notFound: string | undefined,
    id: string,
  ): string | undefined {
    const error = response.status >= 400 ? parseErrorBody(response) : undefined;
    if (error && 'problem' in error) return error.problem;
    const detail = error && 'body' in error ? error.body.detail : '';
    if (kind === 'missing')
      return response.status === 401 && detail.startsWith('Missing API key') ? undefined : 'expected 401 naming the missing key';
    if (kind === 'revoked') return response.status === 401 && detail === 'Invalid API key.' ? undefined : 'expected 401 Invalid API key.';
    if (kind === 'wrong scope')
      return response.status === 403 && detail.includes(operation.scope) ? undefined : `expected 403 naming the ${operation.scope} scope`;
    if (subject === 'malformed')
      return response.status === 400 && detail.startsWith(`${operation.parameter}: `)
        ? undefined
        : `expected 400 naming ${operation.parameter}`;
    if (subject === 'own') {
      if (response.status !== operation.success) return `expected ${operation.success}`;
      return responseProblem(operation.route, true, response);
    }
    if (response.status !== 404) return 'expected 404';
    // Another tenant's resource and one that does not exist get the same answer (the id aside).
    if (notFound !== undefined && detail.replaceAll(id, '<id>') !== notFound)
      return `expected the same 404 as for a missing resource: ${notFound}`;
    return undefined;
  }

  it.each(TENANTS.map((tenant) => [tenant]))(
    'as %s: every cell answers as expected, and nothing of the other tenant leaks',
    async (tenant) => {
      const other = TENANTS.find((name) => name !== tenant) as TenantName;
      const foreign = resources[other].markers;
      const problems: string[] = [];
      for (const operation of OPERATIONS) {
        let notFound: string | undefined;
        for (const subject of ['nonexistent', 'other', 'malformed', 'own'] as const) {
          for (const kind of KEY_KINDS) {
            let id = idFor(operation, tenant, subject);
            // Deleting one's own tool is done on a tool made for it, so the other cells keep theirs.
            if (operation.route.id === 'deleteCustomerTool' && subject === 'own' && kind === 'valid') id = await disposableTool(tenant);
            if (operation.route.id === 'deleteWebhook' && subject === 'own' && kind === 'valid') id = await disposableWebhook(tenant);
            // A delivery of the endpoint's owner: another tenant's endpoint is asked for with its own delivery.
            const deliveryId = resources[subject === 'other' ? other : tenant].webhookDeliveryId;
            const response = await call(operation, id, keyFor(tenant, kind, operation.scope), deliveryId);
            cells += 1;
            statuses.add(response.status);
            const text = response.body.toString('utf8');
            if (subject === 'nonexistent' && kind === 'valid' && response.status === 404)
              notFound = (JSON.parse(text) as { detail: string }).detail.replaceAll(id, '<id>');
            const problem = cellProblem(operation, subject, kind, response, notFound, id);
            // The other tenant's markers, except an id the request itself carried (a 404 may repeat it).
            const leaked = foreign.filter(
              (marker) => marker !== id && (text.includes(marker) || JSON.stringify(response.headers).includes(marker)),
            );
            if (leaked.length > 0) leaks += 1;
            // The control that makes the leak scan meaningful: one's own resource's answer does show its markers
            // (unless it is empty: no content, or an empty list such as a tool's calls before any call).
            // A rotated secret names no resource: the answer is the new secret alone.
            const empty = response.status === 204 || /^\{"\w+":\[\]\}$/.test(text) || operation.route.id === 'rotateWebhookSecret';
            if (subject === 'own' && kind === 'valid' && !empty && !resources[tenant].markers.some((marker) => text.includes(marker))) {
              problems.push(
                `${operation.name} · own ${operation.kind}: the answer shows none of the resource's own markers, so a leak could not be seen either`,
              );
            }
            if (problem !== undefined || leaked.length > 0) {
              problems.push(
                `${operation.name} · ${subject} ${operation.kind} · ${kind} key → ${response.status} ${text.slice(0, 300)}${problem ? `\n    ${problem}` : ''}${leaked.length > 0 ? `\n    LEAK of ${leaked.join(', ')}` : ''}`,
              );
            }
          }
        }
      }
      expect(problems).toEqual([]);
    },
    300_000,
  );

  it("serves no tenant a result made while another tenant's customer tools were offered (the cross-tenant cache cell)", async () => {
    // Both tenants have a customer tool that every product may offer (createResources), and each cell asks
    // something nobody asked before (its own language), so the cache holds nothing for it yet.
    const cases = [
      { product: 'news', body: { symbols: ['NVDA'], n: 3 } },
      { product: 'stock-report', body: { symbols: ['AMZN'] } },
    ] as const;
    const languages = ['fi', 'sv', 'nl', 'pl'];
    const problems: string[] = [];
    for (const { product, body } of cases) {
      for (const [owner, other] of [TENANTS, [...TENANTS].reverse()] as [TenantName, TenantName][]) {
        const request = { ...body, language: languages.shift() };
        const post = (tenant: TenantName, headers: Record<string, string> = {}) =>
          fetch(`${target.url}/api/products/${product}`, {
            method: 'POST',
            headers: { 'X-API-Key': target.keys[tenant].valid, 'Content-Type': 'application/json', ...headers },
            body: JSON.stringify(request),
          });
        // The owner's fresh run, with its tool offered to the model.
        const fresh = await post(owner, { 'Cache-Control': 'no-cache' });
        const { job_id: jobId } = (await fresh.json()) as { job_id: string };
        await waitFor(
          async () => {
            const status = await fetch(`${target.url}/api/jobs/${product}/${jobId}/status`, {
              headers: { 'X-API-Key': target.keys[owner].valid },
            });
            return ((await status.json()) as { status: string }).status === 'completed';
          },
          { timeoutMs: 60_000, what: `the ${product} job of ${owner}` },
        );
        // Control: the owner's repeat is served from the cache, so a miss below is the isolation, not a cold cache.
        const repeat = await post(owner);
        cells += 2;
        statuses.add(repeat.status);
        if (repeat.status !== 200 || ((await repeat.json()) as { from_cache?: boolean }).from_cache !== true) {
          problems.push(`${product}: ${owner}'s own repeat was not served from the cache (${repeat.status})`);
        }
        const answer = await post(other);
        statuses.add(answer.status);
        const text = await answer.text();
        if (answer.status !== 202 || text.includes(jobId)) {
          leaks += 1;
          problems.push(`${product}: ${other} got ${answer.status} ${text.slice(0, 200)} — a result made with ${owner}'s tools`);
        }
      }
    }
    expect(problems).toEqual([]);
  }, 300_000);

  it('answers the same matrix through the MCP endpoint: job_status and chat name resources by id, as the caller', async () => {
    const problems: string[] = [];
    const connect = async (key: string | undefined): Promise<Client | Error> => {
      const client = new Client({ name: 'access-matrix', version: '1.0.0' });
      const headers: Record<string, string> = key === undefined ? {} : { 'X-API-Key': key };
      try {
        await client.connect(new StreamableHTTPClientTransport(new URL(`${target.url}/mcp`), { requestInit: { headers } }));
        return client;
      } catch (error) {
        return error as Error;
      }
    };
    const textOf = (result: CallToolResult) => (result.content[0]?.type === 'text' ? result.content[0].text : '');
    for (const tenant of TENANTS) {
      const other = TENANTS.find((name) => name !== tenant) as TenantName;
      const foreign = resources[other].markers;
      // A missing or revoked key: the gateway's 401 before the MCP service.
      for (const kind of ['missing', 'revoked'] as const) {
        const refused = await connect(keyFor(tenant, kind, 'news'));
        cells += 1;
        if (!(refused instanceof Error) || !/401/.test(refused.message)) problems.push(`MCP · ${tenant} · ${kind} key: expected 401`);
        if (!(refused instanceof Error)) await refused.close();
      }
      const calls: { name: string; args: (id: string) => Record<string, unknown>; subject: Subject; scope: ApiScope; id: string }[] = [];
      for (const jobType of JobType.options) {
        for (const subject of SUBJECTS) {
          const id =
            subject === 'malformed'
              ? MALFORMED_ID
              : subject === 'nonexistent'
                ? '3fa85f64-5717-4562-b3fc-2c963f66afa6'
                : resources[subject === 'own' ? tenant : other].jobs[jobType];
          calls.push({ name: 'job_status', args: (jobId) => ({ job_type: jobType, job_id: jobId }), subject, scope: jobType, id });
        }
      }
      for (const subject of ['other', 'nonexistent'] as const) {
        const id = subject === 'other' ? resources[other].conversationId : '3fa85f64-5717-4562-b3fc-2c963f66afa6';
        calls.push({
          name: 'chat',
          args: (conversationId) => ({ message: 'And the margins?', conversation_id: conversationId }),
          subject,
          scope: 'chat',
          id,
        });
      }
      for (const kind of ['valid', 'wrong scope'] as const) {
        for (const call of calls) {
          const client = await connect(keyFor(tenant, kind, call.scope));
          if (client instanceof Error) {
            problems.push(`MCP · ${tenant} · ${kind} key: could not connect: ${client.message}`);
            continue;
          }
          const result = (await client.callTool({ name: call.name, arguments: call.args(call.id) })) as CallToolResult;
          await client.close();
          cells += 1;
          const text = `${textOf(result)} ${JSON.stringify(result.structuredContent ?? {})}`;
          const cell = `MCP ${call.name} · ${call.subject} · ${kind} key (${tenant})`;
          const leaked = foreign.filter((marker) => marker !== call.id && text.includes(marker));
          if (leaked.length > 0) {
            leaks += 1;
            problems.push(`${cell}: LEAK of ${leaked.join(', ')}`);
          }
          const expected =
            call.subject === 'malformed'
              ? /job_id/
              : kind === 'wrong scope'
                ? new RegExp(`does not have the ${call.scope} scope`)
                : call.subject === 'own'
                  ? undefined
                  : /\(HTTP 404 not_found\)/;
          if (expected === undefined) {
            if (result.isError === true || !text.includes(call.id))
              problems.push(`${cell}: expected its own job, got ${text.slice(0, 200)}`);
          } else if (result.isError !== true || !expected.test(text)) {
            problems.push(`${cell}: expected a tool error matching ${String(expected)}, got ${text.slice(0, 200)}`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
  }, 300_000);

  async function disposableWebhook(tenant: TenantName): Promise<string> {
    const response = await fetch(`${target.url}/api/webhooks/`, {
      method: 'POST',
      headers: { 'X-API-Key': target.keys[tenant].valid, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url: 'https://hooks.example.com/disposable', enabled: false }),
    });
    expect(response.status).toBe(201);
    return ((await response.json()) as { id: string }).id;
  }

  async function disposableTool(tenant: TenantName): Promise<string> {
    const example = CustomerToolUpdateRequest.meta()?.examples?.[0] as Record<string, unknown>;
    const response = await fetch(`${target.url}/api/customer-tools/`, {
      method: 'POST',
      headers: { 'X-API-Key': target.keys[tenant].valid, 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...example, name: `disposable_${Math.random().toString(36).slice(2, 10)}` }),
    });
    expect(response.status).toBe(201);
    return ((await response.json()) as { id: string }).id;
  }

  it("lists only the caller's own tools, and the answers carry none of the other tenant's data", async () => {
    for (const tenant of TENANTS) {
      const other = TENANTS.find((name) => name !== tenant) as TenantName;
      const response = await fetch(`${target.url}/api/customer-tools/`, { headers: { 'X-API-Key': target.keys[tenant].valid } });
      const text = await response.text();
      cells += 1;
      statuses.add(response.status);
      expect(response.status).toBe(200);
      expect(resources[other].markers.filter((marker) => text.includes(marker))).toEqual([]);
      expect(text).toContain(resources[tenant].toolId);
    }
    // A replayed stream of one's own conversation is one's own text.
    const replay = await fetch(`${target.url}/api/chat/stream?conversation_id=${resources.acme.conversationId}`, {
      headers: { 'X-API-Key': target.keys.acme.valid },
    });
    expect(replay.status).toBe(200);
    expect(parseSse(await replay.text()).map((event) => event.event)).toContain('done');
  });

  it("lists only the caller's own webhook endpoints, and the answers carry none of the other tenant's data", async () => {
    for (const tenant of TENANTS) {
      const other = TENANTS.find((name) => name !== tenant) as TenantName;
      const response = await fetch(`${target.url}/api/webhooks/`, { headers: { 'X-API-Key': target.keys[tenant].valid } });
      const text = await response.text();
      cells += 1;
      statuses.add(response.status);
      expect(response.status).toBe(200);
      expect(resources[other].markers.filter((marker) => text.includes(marker))).toEqual([]);
      expect(text).toContain(resources[tenant].webhookId);
    }
  });
});
