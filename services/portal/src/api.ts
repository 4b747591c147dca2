// The customer-tools API (/api/customer-tools, scope `tools`, reached through the gateway). Handlers are short:
// the contract validates the input, the store does the work, errors of the store become 400 / 409.
import { type CustomerToolCallListResponse, type CustomerToolListResponse } from '@fin/contracts';
import { CustomerToolError, listCalls, toApiTool, type CallRecord, type ToolStore } from '@fin/customer-tools';
import type { Pool } from '@fin/db';
import { badRequest, conflict, forbidden, notFound, type Caller, type HandlerTable } from '@fin/http';

const NOT_FOUND = 'No customer tool with this id.';

function tenantOf(caller: Caller): string {
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

export function customerToolsHandlers({ store, pool }: { store: ToolStore; pool: Pool }): HandlerTable {
  return {
    listCustomerTools: async ({ caller }): Promise<CustomerToolListResponse> => ({
      tools: (await store.list(tenantOf(caller))).map(toApiTool),
    }),

    createCustomerTool: async ({ body, caller }, { res }) => {
      const tool = await translated(store.create(tenantOf(caller), body));
      res.status(201).location(`/api/customer-tools/${tool.id}`);
      return toApiTool(tool);
    },

    getCustomerTool: async ({ params, caller }) => {
      const tool = await store.get(tenantOf(caller), params.id);
      if (tool === null) throw notFound(NOT_FOUND);
      return toApiTool(tool);
    },

    updateCustomerTool: async ({ params, body, caller }) => {
      const tool = await translated(store.update(tenantOf(caller), params.id, body));
      if (tool === null) throw notFound(NOT_FOUND);
      return toApiTool(tool);
    },

    deleteCustomerTool: async ({ params, caller }, { res }) => {
      if (!(await store.delete(tenantOf(caller), params.id))) throw notFound(NOT_FOUND);
      res.status(204).end();
      return undefined;
    },

    listCustomerToolCalls: async ({ params, query, caller }): Promise<CustomerToolCallListResponse> => {
      const tenantId = tenantOf(caller);
      if ((await store.get(tenantId, params.id)) === null) throw notFound(NOT_FOUND);
      return { calls: (await listCalls(pool, tenantId, params.id, query.limit)).map(toApiCall) };
    },
  };
}
