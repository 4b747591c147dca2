// The customer-tools API (/api/customer-tools, scope `tools`, reached through the gateway). Handlers are short:
// the contract validates the input, the store does the work, errors of the store become 400 / 409.
import {
  CustomerToolCallsQuery,
  CustomerToolCreateRequest,
  CustomerToolPathParams,
  CustomerToolUpdateRequest,
  type CustomerToolCallListResponse,
  type CustomerToolListResponse,
} from '@fin/contracts';
import { CustomerToolError, listCalls, toApiTool, type CallRecord, type ToolStore } from '@fin/customer-tools';
import type { Pool } from '@fin/db';
import { badRequest, callerOf, conflict, forbidden, notFound, route, type Caller } from '@fin/http';
import type { Response } from 'express';
import type express from 'express';

const NOT_FOUND = 'No customer tool with this id.';

function tenantOf(res: Response): string {
  const caller: Caller = callerOf(res);
  // The gateway checked the scope; checked again so a wiring mistake there cannot open this API to other keys.
  if (!caller.scopes.includes('tools')) throw forbidden('This API key does not have the tools scope.');
  return caller.tenantId;
}

async function translated<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof CustomerToolError) throw error.kind === 'conflict' ? conflict(error.detail) : badRequest(error.detail);
    throw error;
  }
}

function toApiCall(call: CallRecord) {
  return {
    id: call.id,
    tool_id: call.toolId,
    tool_name: call.toolName,
    source: call.source,
    product: call.product,
    job_id: call.jobId,
    conversation_id: call.conversationId,
    outcome: call.outcome,
    http_status: call.httpStatus,
    duration_ms: call.durationMs,
    response_bytes: call.responseBytes,
    error: call.error,
    created_at: call.createdAt.toISOString(),
  };
}

export function mountCustomerToolsApi(app: express.Express, { store, pool }: { store: ToolStore; pool: Pool }): void {
  app.get(
    '/api/customer-tools/',
    route({}, async (_input, { res }): Promise<CustomerToolListResponse> => ({ tools: (await store.list(tenantOf(res))).map(toApiTool) })),
  );

  app.post(
    '/api/customer-tools/',
    route({ body: CustomerToolCreateRequest }, async ({ body }, { res }) => {
      const tool = await translated(store.create(tenantOf(res), body));
      res.status(201).location(`/api/customer-tools/${tool.id}`);
      return toApiTool(tool);
    }),
  );

  app.get(
    '/api/customer-tools/:id',
    route({ params: CustomerToolPathParams }, async ({ params }, { res }) => {
      const tool = await store.get(tenantOf(res), params.id);
      if (tool === null) throw notFound(NOT_FOUND);
      return toApiTool(tool);
    }),
  );

  app.put(
    '/api/customer-tools/:id',
    route({ params: CustomerToolPathParams, body: CustomerToolUpdateRequest }, async ({ params, body }, { res }) => {
      const tool = await translated(store.update(tenantOf(res), params.id, body));
      if (tool === null) throw notFound(NOT_FOUND);
      return toApiTool(tool);
    }),
  );

  app.delete(
    '/api/customer-tools/:id',
    route({ params: CustomerToolPathParams }, async ({ params }, { res }) => {
      if (!(await store.delete(tenantOf(res), params.id))) throw notFound(NOT_FOUND);
      res.status(204).end();
      return undefined;
    }),
  );

  app.get(
    '/api/customer-tools/:id/calls',
    route({ params: CustomerToolPathParams, query: CustomerToolCallsQuery }, async ({ params, query }, { res }): Promise<CustomerToolCallListResponse> => {
      const tenantId = tenantOf(res);
      if ((await store.get(tenantId, params.id)) === null) throw notFound(NOT_FOUND);
      return { calls: (await listCalls(pool, tenantId, params.id, query.limit)).map(toApiCall) };
    }),
  );
}
