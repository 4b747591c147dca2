// The MCP tools: each is one product of the API, called through the gateway with the caller's own key (so its
// scopes, rate limits and cache apply exactly as to a direct request). Input schemas are the contract's request
// schemas, less what makes no sense to an assistant (callback_url, stream), and the job tools' output schemas its
// result schemas: one source of truth with the API.
import {
  AnalysisRequest,
  AnalysisResult,
  ChatRequest,
  ErrorBody,
  FilingSectionPathParams,
  FilingsQuery,
  JobPathParams,
  NewsResult,
  newsToolInput,
  StockReportRequest,
  StockReportResult,
  type ApiScope,
  type JobType,
} from '@fin/contracts';
import { APIError, JobFailedError, type FinancialIntelligence, type JobHandle, type JobStatusResponse } from '@financial-intelligence/sdk';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { z } from 'zod';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export interface ToolContext {
  /** The API as the caller: an SDK client holding the caller's key. */
  api: FinancialIntelligence;
  /** How long a tool waits for a job before answering with its id and status URL instead. */
  jobWaitMs: number;
  /** Time between two status polls while waiting. */
  pollIntervalMs: number;
}

export interface ToolDefinition {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  /** The key needs one of these scopes to list and call the tool. */
  readonly scopes: readonly ApiScope[];
  readonly inputSchema: z.ZodObject;
  /** What the tool's structuredContent holds (listed as its outputSchema; the server checks every answer against it). */
  readonly outputSchema?: z.ZodObject;
  readonly annotations: { readOnlyHint: boolean; openWorldHint: boolean };
  run(input: unknown, context: ToolContext, extra: Extra): Promise<CallToolResult>;
}

/** A tool's answer: the value as indented JSON text (what every client shows) and as structured content. */
function answer(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: value };
}

/** A tool error carrying the API's error body, so the assistant reads what went wrong and how to go on. */
function toolError(body: ErrorBody, hint?: string): CallToolResult {
  const text = `${body.detail} (HTTP ${String(body.status_code)} ${body.type})${hint === undefined ? '' : ` ${hint}`}`;
  return { content: [{ type: 'text', text }], structuredContent: { error: body }, isError: true };
}

/** The refusal of a tool the key's scopes do not allow: the gateway's 403, as a tool error. */
export function scopeRefusal(tool: ToolDefinition): CallToolResult {
  const needed = tool.scopes.join(' or ');
  return toolError({
    detail: `This API key does not have the ${needed} scope, which the ${tool.name} tool needs.`,
    status_code: 403,
    type: 'forbidden',
  });
}

/** What the API's errors become: its error body; a 429 says when to try again. Anything else is thrown. */
function apiFailure(error: unknown): CallToolResult {
  // The job's own error (gateway_timeout when the model timed out, validation_error for a tool input the job
  // refused, …), as the status endpoint reports it: not a 500 of this service.
  if (error instanceof JobFailedError)
    return toolError(
      { detail: `The ${error.jobType} job ${error.jobId} failed: ${error.detail}`, status_code: error.status, type: error.type },
      `job_status with job_type ${error.jobType} and job_id ${error.jobId} shows it.`,
    );
  if (!(error instanceof APIError)) throw error;
  const retryAfter = error.headers.get('retry-after');
  return toolError(error.body, error.status === 429 && retryAfter !== null ? `Retry in ${retryAfter} s.` : undefined);
}

/**
 * Reports a job's progress as MCP progress notifications, when the client asked for them (a progressToken in the
 * request's _meta). Progress only ever increases, as the protocol requires.
 */
function progressReporter(extra: Extra): ((status: JobStatusResponse) => void) | undefined {
  const token = extra._meta?.progressToken;
  if (token === undefined) return undefined;
  let last = -1;
  return (status) => {
    if (status.progress <= last) return;
    last = status.progress;
    extra
      .sendNotification({
        method: 'notifications/progress',
        params: { progressToken: token, progress: status.progress, total: 100, message: status.currently_working_on },
      })
      .catch(() => undefined);
  };
}

/**
 * Follows a product request: its result when it is cached, answered inline or completes within the wait;
 * otherwise its job id and status URL for job_status, so the assistant can come back to it.
 */
async function followJob<Completed extends { job_id: string }, Result, Pending extends { job_id: string; status_url: string }>(
  jobType: JobType,
  handle: JobHandle<Completed, Result, Pending>,
  context: ToolContext,
  extra: Extra,
): Promise<CallToolResult> {
  const waited = AbortSignal.timeout(context.jobWaitMs);
  const onProgress = progressReporter(extra);
  try {
    const result = await handle.result({
      signal: AbortSignal.any([waited, extra.signal]),
      pollIntervalMs: context.pollIntervalMs,
      ...(onProgress === undefined ? {} : { onProgress }),
    });
    return answer({ job_id: await handle.jobId(), status: 'completed', result });
  } catch (error) {
    if (!waited.aborted || extra.signal.aborted) return apiFailure(error);
    const response = await handle.response;
    const pending = response.data as Pending;
    return answer({
      job_id: pending.job_id,
      job_type: jobType,
      status: 'pending',
      status_url: pending.status_url,
      note: `Not finished within ${String(Math.round(context.jobWaitMs / 1000))} s; call job_status with this job_type and job_id to check it, and to read its result once it has completed.`,
    });
  }
}

async function guarded(run: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await run();
  } catch (error) {
    return apiFailure(error);
  }
}

const NewsInput = newsToolInput();
const StockReportInput = StockReportRequest.omit({ callback_url: true });
const AnalysisInput = AnalysisRequest.omit({ callback_url: true });
const ChatInput = ChatRequest.omit({ stream: true });
// A schema of its own: the contract's carries an id, which would make the listed input schema a bare $ref.
const JobInput = JobPathParams.pick({ job_type: true, job_id: true });

/**
 * One tool for the filings routes: without `accession` it lists the company's filings (forms, since, limit as the
 * API takes them), with `accession` it gives the filing's sections, and with `item` too that section's text.
 */
const SecFilingsInput = FilingsQuery.extend({
  accession: FilingSectionPathParams.shape.accession.optional().meta({
    description: "A filing's accession number, from a listing: the filing's sections (their items and titles) instead of the list.",
  }),
  item: FilingSectionPathParams.shape.item.optional().meta({
    description: "With accession: that section's text (10-K 1A risk factors, 7 MD&A; 10-Q I-2, II-1A; an 8-K's 2.02).",
  }),
}).superRefine((input, ctx) => {
  if (input.item !== undefined && input.accession === undefined) {
    ctx.addIssue({ code: 'custom', path: ['item'], message: "needs the filing's accession number too" });
  }
});

const readOnly = { readOnlyHint: true, openWorldHint: true };

/**
 * The structured answer of a tool that runs a job (followJob): the result once completed, or the job id and its
 * status URL when it outlasted the wait; a tool error carries the API's error body instead. One object, every
 * field optional, because MCP requires an output schema of type object (a union is not one).
 */
function jobToolOutput(jobType: JobType, result: z.ZodType) {
  return z.object({
    job_id: z.string().optional().meta({ description: 'The job: absent only in a tool error.' }),
    status: z.enum(['completed', 'pending']).optional().meta({ description: 'completed with `result`, or pending with `status_url`.' }),
    result: result.optional().meta({ description: "The job's result, as GET /api/jobs/{job_type}/{job_id}/result gives it." }),
    job_type: z.literal(jobType).optional().meta({ description: 'While pending: the job_type to give job_status.' }),
    status_url: z.string().optional().meta({ description: 'While pending: where the API reports its status.' }),
    note: z.string().optional().meta({ description: 'While pending: how to read the result later.' }),
    error: ErrorBody.optional().meta({ description: "A tool error's body: the API's error, in the spec's error body." }),
  });
}

export const TOOLS: readonly ToolDefinition[] = [
  {
    name: 'news',
    title: 'News intelligence',
    description:
      'Relevant market news for 1 to 10 stock symbols: each item with a summary, a relevance score, sources, citations, its publication time, topics and a sentiment per requested symbol (score −1 to 1 and label), plus a sentiment summary per symbol. Optionally limited to a time range (time_from / time_to, at most 90 days), topics, sources to include or exclude, and ordered by relevance or newest first. Cached results (up to 7 days) come at once; a fresh run takes a few seconds.',
    scopes: ['news'],
    inputSchema: NewsInput,
    outputSchema: jobToolOutput('news', NewsResult),
    annotations: readOnly,
    run: (input, context, extra) =>
      guarded(() => followJob('news', context.api.news.create(NewsInput.parse(input), { signal: extra.signal }), context, extra)),
  },
  {
    name: 'stock_report',
    title: 'Stock report',
    description:
      'An equity analysis of one symbol (about 10-20 s), or a comparison of two (about 30-45 s): fundamentals, valuation, risks and a summary, with citations.',
    scopes: ['stock-report'],
    inputSchema: StockReportInput,
    outputSchema: jobToolOutput('stock-report', StockReportResult),
    annotations: readOnly,
    run: (input, context, extra) =>
      guarded(() =>
        followJob('stock-report', context.api.stockReport.create(StockReportInput.parse(input), { signal: extra.signal }), context, extra),
      ),
  },
  {
    name: 'analysis',
    title: 'Custom analysis',
    description:
      'A free-form financial analysis question, optionally about symbols or a portfolio, answered as markdown, free JSON, or JSON with the fields of a given schema (output_format). Typically 30-90 s; output_format.stream is ignored here.',
    scopes: ['analysis'],
    inputSchema: AnalysisInput,
    outputSchema: jobToolOutput('analysis', AnalysisResult),
    annotations: readOnly,
    run: (input, context, extra) =>
      guarded(() =>
        followJob('analysis', context.api.analysis.create(AnalysisInput.parse(input), { signal: extra.signal }), context, extra),
      ),
  },
  {
    name: 'chat',
    title: 'Research chat',
    description:
      'One turn of a research conversation with the financial assistant, which can look up market data. Leave conversation_id out (or null) to start a conversation; send the returned conversation_id to continue it.',
    scopes: ['chat'],
    inputSchema: ChatInput,
    annotations: { readOnlyHint: false, openWorldHint: true },
    run: (input, context, extra) =>
      guarded(async () => {
        const reply = await context.api.chat.send(ChatInput.parse(input), { signal: extra.signal });
        return answer({ conversation_id: reply.conversation_id, message_id: reply.message_id, reply: reply.response });
      }),
  },
  {
    name: 'sec_filings',
    title: 'SEC filings',
    description:
      "A US company's filings with the SEC from EDGAR, and their sections: without accession, its filings newest first (10-K, 10-Q, 8-K with item numbers; narrowed by forms such as \"10-K,8-K\", since a date, limit), each with its accession number and a link anyone can open; with accession, that filing's sections (items and titles); with accession and item, one section's text (1A risk factors, 7 MD&A), never a whole filing. A listing outside the US has no SEC filings: an empty list with a note.",
    scopes: ['filings'],
    inputSchema: SecFilingsInput,
    annotations: readOnly,
    run: (input, context, extra) =>
      guarded(async () => {
        // Parsed by the server with inputSchema before run (server.ts callTool); parsing again would read the forms
        // list it made as the comma-separated string the schema takes.
        const { symbol, forms, since, limit, accession, item } = input as z.output<typeof SecFilingsInput>;
        const options = { signal: extra.signal };
        if (accession === undefined) {
          const query = {
            symbol,
            limit,
            ...(forms === undefined ? {} : { forms: forms.join(',') }),
            ...(since === undefined ? {} : { since }),
          };
          return answer(await context.api.filings.list(query, options));
        }
        if (item === undefined) return answer(await context.api.filings.get(symbol, accession, options));
        return answer(await context.api.filings.section(symbol, accession, item, options));
      }),
  },
  {
    name: 'job_status',
    title: 'Job status and result',
    description:
      "The state of a news, stock-report or analysis job that another tool returned as pending: its status, progress and current step, and its result once completed (or its error once failed). Jobs of the key's own account only.",
    scopes: ['news', 'stock-report', 'analysis'],
    inputSchema: JobInput,
    annotations: readOnly,
    run: (input, context, extra) =>
      guarded(async () => {
        const { job_type: jobType, job_id: jobId } = JobInput.parse(input);
        const status = await context.api.jobs.status(jobType, jobId, { signal: extra.signal });
        if (status.status !== 'completed') return answer({ job_type: jobType, ...status });
        const { result } = await context.api.jobs.result(jobType, jobId, { signal: extra.signal });
        return answer({ job_type: jobType, ...status, result });
      }),
  },
];

/** Whether a key with `scopes` may use the tool. */
export function allows(scopes: readonly string[], tool: ToolDefinition): boolean {
  return tool.scopes.some((scope) => scopes.includes(scope));
}
