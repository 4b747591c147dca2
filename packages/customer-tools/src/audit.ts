// The audit of customer-tool calls (table customer_tool_calls): what was called, for which job, conversation or
// portal test, and how it ended. Never header values, arguments or response bodies.
import type { CustomerToolProduct } from '@fin/contracts';
import { prismaFor, type Pool, type Prisma } from '@fin/db';
import type { CallOutcome, CallResult } from './executor';

/** What made a call. */
export type CallOrigin =
  | { source: 'job'; jobId: string; product: CustomerToolProduct }
  | { source: 'conversation'; conversationId: string; product: CustomerToolProduct }
  | { source: 'portal_test' };

export interface CallRecord {
  id: string;
  toolId: string | null;
  toolName: string;
  source: CallOrigin['source'];
  product: CustomerToolProduct | null;
  jobId: string | null;
  conversationId: string | null;
  outcome: CallOutcome;
  httpStatus: number | null;
  durationMs: number;
  responseBytes: number;
  error: string | null;
  createdAt: Date;
}

/** The columns hold what this module wrote: an origin's source and product, an executor's outcome. */
function toRecord({ tenantId: _tenant, ...row }: Prisma.CustomerToolCallGetPayload<object>): CallRecord {
  return {
    ...row,
    source: row.source as CallRecord['source'],
    product: row.product as CallRecord['product'],
    outcome: row.outcome as CallOutcome,
  };
}

/** Writes through the pool's Prisma client (`prismaFor`), as every statement of the audit does. */
export async function recordCall(
  pool: Pool,
  tool: { tenantId: string; id: string; name: string },
  origin: CallOrigin,
  result: CallResult,
): Promise<CallRecord> {
  // created_at is the database's (the column default): calls are listed in its order, to the microsecond.
  const row = await prismaFor(pool).customerToolCall.create({
    data: {
      tenantId: tool.tenantId,
      toolId: tool.id,
      toolName: tool.name,
      source: origin.source,
      product: origin.source === 'portal_test' ? null : origin.product,
      jobId: origin.source === 'job' ? origin.jobId : null,
      conversationId: origin.source === 'conversation' ? origin.conversationId : null,
      outcome: result.outcome,
      httpStatus: result.httpStatus,
      durationMs: result.durationMs,
      responseBytes: result.responseBytes,
      error: result.error?.slice(0, 500) ?? null,
    },
  });
  return toRecord(row);
}

const MAX_CALLS_LISTED = 200;

/** A tool's most recent calls, newest first (the caller has already checked the tool is the tenant's). */
export async function listCalls(pool: Pool, tenantId: string, toolId: string, limit = 50): Promise<CallRecord[]> {
  const rows = await prismaFor(pool).customerToolCall.findMany({
    where: { tenantId, toolId },
    orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
    take: Math.min(Math.max(limit, 1), MAX_CALLS_LISTED),
  });
  return rows.map(toRecord);
}
