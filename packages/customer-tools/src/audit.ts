// The audit of customer-tool calls (table customer_tool_calls): what was called, for which job, conversation or
// portal test, and how it ended. Never header values, arguments or response bodies.
import type { CustomerToolProduct } from '@fin/contracts';
import type { Queryable } from '@fin/db';
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

interface CallRow {
  id: string;
  tool_id: string | null;
  tool_name: string;
  source: CallOrigin['source'];
  product: CustomerToolProduct | null;
  job_id: string | null;
  conversation_id: string | null;
  outcome: CallOutcome;
  http_status: number | null;
  duration_ms: number;
  response_bytes: number;
  error: string | null;
  created_at: Date;
}

function toRecord(row: CallRow): CallRecord {
  return {
    id: row.id,
    toolId: row.tool_id,
    toolName: row.tool_name,
    source: row.source,
    product: row.product,
    jobId: row.job_id,
    conversationId: row.conversation_id,
    outcome: row.outcome,
    httpStatus: row.http_status,
    durationMs: row.duration_ms,
    responseBytes: row.response_bytes,
    error: row.error,
    createdAt: row.created_at,
  };
}

export async function recordCall(
  db: Queryable,
  tool: { tenantId: string; id: string; name: string },
  origin: CallOrigin,
  result: CallResult,
): Promise<CallRecord> {
  const { rows } = await db.query<CallRow>(
    `INSERT INTO customer_tool_calls (tenant_id, tool_id, tool_name, source, product, job_id, conversation_id, outcome, http_status,
                                      duration_ms, response_bytes, error)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING *`,
    [
      tool.tenantId,
      tool.id,
      tool.name,
      origin.source,
      origin.source === 'portal_test' ? null : origin.product,
      origin.source === 'job' ? origin.jobId : null,
      origin.source === 'conversation' ? origin.conversationId : null,
      result.outcome,
      result.httpStatus,
      result.durationMs,
      result.responseBytes,
      result.error?.slice(0, 500) ?? null,
    ],
  );
  return toRecord(rows[0] as CallRow);
}

export const MAX_CALLS_LISTED = 200;

/** A tool's most recent calls, newest first (the caller has already checked the tool is the tenant's). */
export async function listCalls(db: Queryable, tenantId: string, toolId: string, limit = 50): Promise<CallRecord[]> {
  const { rows } = await db.query<CallRow>(
    'SELECT * FROM customer_tool_calls WHERE tenant_id = $1 AND tool_id = $2 ORDER BY created_at DESC, id LIMIT $3',
    [tenantId, toolId, Math.min(Math.max(limit, 1), MAX_CALLS_LISTED)],
  );
  return rows.map(toRecord);
}
