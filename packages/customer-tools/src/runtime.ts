// A tenant's customer tools as AI-engine tools. `load` reads the tenant's enabled tools that allow the product
// and wraps each as a ToolDefinition: the model sees the tool's name, description and JSON Schema; its arguments
// are validated by the compiled schema before anything is sent; the call goes through the SSRF-safe executor
// and is recorded in the audit table, whatever its outcome.
import { RESERVED_TOOL_NAMES, type CustomerToolProduct } from '@fin/contracts';
import type { CustomerToolSource, OfferedTools, ToolDefinition, ToolProduct, ToolRunOwner } from '@fin/ai';
import { prismaFor, type Pool } from '@fin/db';
import type { Logger } from '@fin/log';
import { FIN_ATTRIBUTES, SpanKind, withSpan } from '@fin/tracing';
import { z } from 'zod';
import { recordCall, type CallOrigin, type CallRecord } from './audit';
import type { CallResult, ToolExecutor } from './executor';
import { compileInputSchema, type InputValidator } from './input-schema';
import { openHeaders, sealedBytes, type Keyring } from './secrets';

/** Largest tool result handed to the model; longer responses are cut with a note (the wire cap is separate). */
const DEFAULT_MODEL_RESULT_BYTES = 32 * 1024;
/** The engine's own per-tool deadline is this much later than the tool's, so the executor's fires first and is audited. */
const ENGINE_DEADLINE_GRACE_MS = 2_000;
const ERROR_BODY_EXCERPT_BYTES = 2_048;

/** Which run the tools are loaded for: a product job, or a chat conversation. */
export type LoadContext = { tenantId: string; product: CustomerToolProduct } & (
  { jobId: string; conversationId?: undefined } | { conversationId: string; jobId?: undefined }
);

export interface CustomerToolRuntimeOptions {
  pool: Pool;
  keyring: Keyring;
  executor: ToolExecutor;
  logger?: Logger;
  /** Largest result handed to the model (default 32 KiB). */
  maxResultBytes?: number;
}

export interface TestCallOutcome {
  /** Problems of `input` against the tool's schema; when non-empty nothing was sent. */
  inputProblems: string[];
  result: CallResult | null;
  record: CallRecord | null;
}

export interface CustomerToolRuntime extends CustomerToolSource {
  /** The tenant's enabled tools for the product, ready for RunContext.customerTools. */
  load(context: LoadContext): Promise<ToolDefinition[]>;
  /** The portal's "test" button: one call with sample input, audited as portal_test. Null: no such tool. */
  testCall(tenantId: string, toolId: string, input: Record<string, unknown>, signal?: AbortSignal): Promise<TestCallOutcome | null>;
  /** Closes the executor's connections. */
  close(): Promise<void>;
}

/** What a call needs of a tool, its sealed headers included. */
interface LoadedTool {
  id: string;
  tenantId: string;
  name: string;
  description: string;
  endpoint: string;
  method: 'GET' | 'POST';
  inputSchema: Record<string, unknown>;
  headersCiphertext: Buffer | null;
  timeoutMs: number;
}

const LOAD_COLUMNS =
  'id, tenant_id AS "tenantId", name, description, endpoint, method, input_schema AS "inputSchema", headers_ciphertext AS "headersCiphertext", timeout_ms AS "timeoutMs"';

/**
 * The zod schema the engine validates arguments with, carrying the customer's JSON Schema as metadata: the
 * engine turns a tool's zod schema into the JSON Schema the model sees, and metadata is copied into it verbatim,
 * so the model sees the customer's schema unchanged. (A top-level `id` would be taken as a registry id by zod.)
 */
function argumentsSchema(jsonSchema: Record<string, unknown>, validate: InputValidator) {
  const { id: _ignored, ...meta } = jsonSchema;
  return z
    .custom<Record<string, unknown>>()
    .superRefine((value, ctx) => {
      for (const problem of validate(value)) ctx.addIssue({ code: 'custom', message: problem });
    })
    .meta(meta);
}

/** What the model reads for an answer that arrived: the body (cut to the cap), or the HTTP error and an excerpt. */
function modelText(result: CallResult, maxBytes: number): string {
  const body = result.body ?? '';
  if (result.outcome === 'http_error') {
    return `The tool's API answered HTTP ${result.httpStatus ?? '?'}.\n${cut(body, ERROR_BODY_EXCERPT_BYTES)}`;
  }
  return cut(body, maxBytes - 200);
}

function cut(text: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= maxBytes) return text;
  // Cut on a character boundary: decoding a byte slice drops a trailing partial character as U+FFFD, removed here.
  const head = Buffer.from(text, 'utf8')
    .subarray(0, maxBytes)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return `${head}\n[truncated: the response was ${bytes} bytes; the first ${Buffer.byteLength(head, 'utf8')} are shown]`;
}

/**
 * The endpoint as a citation names it: scheme, host and path only. Its query and user info are left out, since a
 * customer may have put a key there; the answer quoted is the endpoint's either way.
 */
function citableUrl(endpoint: string): string | undefined {
  try {
    const url = new URL(endpoint);
    return `${url.origin}${url.pathname}`;
  } catch {
    return undefined;
  }
}

export function createCustomerToolRuntime({
  pool,
  keyring,
  executor,
  logger,
  maxResultBytes = DEFAULT_MODEL_RESULT_BYTES,
}: CustomerToolRuntimeOptions): CustomerToolRuntime {
  const prisma = prismaFor(pool);
  const audit = async (row: LoadedTool, origin: CallOrigin, result: CallResult): Promise<CallRecord | null> => {
    logger?.info(
      {
        toolId: row.id,
        tool: row.name,
        source: origin.source,
        outcome: result.outcome,
        httpStatus: result.httpStatus,
        durationMs: result.durationMs,
        bytes: result.responseBytes,
      },
      'customer tool called',
    );
    try {
      return await recordCall(pool, { tenantId: row.tenantId, id: row.id, name: row.name }, origin, result);
    } catch (error) {
      // The call itself happened; a failed audit write must not turn the model's answer into a failure.
      logger?.error({ err: error, toolId: row.id }, 'could not record a customer tool call in the audit');
      return null;
    }
  };

  // With traces exported, each call is an `execute_tool <name>` span: the tool, its outcome and HTTP status only
  // (never its URL, headers, input or answer, which may hold the customer's credentials and data).
  const call = (row: LoadedTool, input: Record<string, unknown>, signal: AbortSignal | undefined): Promise<CallResult> =>
    withSpan(
      `execute_tool ${row.name}`,
      {
        kind: SpanKind.CLIENT,
        attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': row.name, [FIN_ATTRIBUTES.tenantId]: row.tenantId },
      },
      async (span) => {
        const result = await executor.call(
          {
            endpoint: row.endpoint,
            method: row.method,
            headers: openHeaders(keyring, row.headersCiphertext, { tenantId: row.tenantId, toolId: row.id }),
            input,
            timeoutMs: row.timeoutMs,
          },
          signal === undefined ? {} : { signal },
        );
        span.setAttribute(FIN_ATTRIBUTES.toolOutcome, result.outcome);
        if (result.httpStatus !== null) span.setAttribute('http.response.status_code', result.httpStatus);
        return result;
      },
    );

  const definitionOf = (row: LoadedTool, origin: CallOrigin): ToolDefinition | null => {
    if (RESERVED_TOOL_NAMES.includes(row.name)) {
      // Offered beside the engine's own tool of that name, every model request of the run would be refused. Such
      // tools are disabled (the migration that reserved the name) and cannot be enabled; this holds if one is not.
      logger?.warn({ toolId: row.id, tool: row.name }, "a customer tool has the name of one of the service's own tools; it is not offered");
      return null;
    }
    let validate: InputValidator;
    try {
      validate = compileInputSchema(row.inputSchema);
    } catch (error) {
      // Schemas are compiled on registration; one that no longer compiles (an Ajv upgrade) is left out, not fatal.
      logger?.warn({ err: error, toolId: row.id }, "a customer tool's input schema does not compile; the tool is not offered");
      return null;
    }
    return {
      name: row.name,
      description: row.description,
      input: argumentsSchema(row.inputSchema, validate),
      timeoutMs: row.timeoutMs + ENGINE_DEADLINE_GRACE_MS,
      maxResultBytes,
      async execute(input, { signal }) {
        const result = await call(row, input as Record<string, unknown>, signal);
        await audit(row, origin, result);
        if (result.outcome === 'http_error') return { content: modelText(result, maxResultBytes) };
        if (result.outcome === 'ok') {
          const text = modelText(result, maxResultBytes);
          // What the model read of a successful answer is material a result may quote, under the endpoint's URL.
          const url = citableUrl(row.endpoint);
          return { content: text, documents: url === undefined ? [] : [{ url, title: row.name, source: 'customer_tool', text }] };
        }
        throw new Error(`${row.name} failed: ${result.error ?? result.outcome}`);
      },
    };
  };

  /**
   * The tools and the digest of their set come from one statement, so they describe the same moment: a tool
   * saved in between cannot be offered under the digest of the set before it.
   */
  const offer = async (context: LoadContext): Promise<OfferedTools> => {
    const origin: CallOrigin =
      context.jobId !== undefined
        ? { source: 'job', jobId: context.jobId, product: context.product }
        : { source: 'conversation', conversationId: context.conversationId, product: context.product };
    // pg, not Prisma: it runs for every job and chat turn that may offer customer tools, and the model API cannot
    // select the digest function beside the rows, so its form would be two statements in a transaction, at
    // several times the cost (`npm run bench -- crud-client`).
    const { rows } = await pool.query<LoadedTool & { tool_set: string }>(
      `SELECT ${LOAD_COLUMNS}, customer_tool_set_digest($1, $2) AS tool_set
         FROM customer_tools WHERE tenant_id = $1 AND enabled AND $2 = ANY (products) ORDER BY created_at, id`,
      [context.tenantId, context.product],
    );
    return {
      tools: rows.map((row) => definitionOf(row, origin)).filter((tool): tool is ToolDefinition => tool !== null),
      // Every row carries the set's digest; a tenant with no tools for the product has none.
      toolSet: rows[0]?.tool_set ?? null,
    };
  };

  return {
    load: async (context) => (await offer(context)).tools,

    async toolsFor(tenantId: string, product: ToolProduct, owner: ToolRunOwner) {
      return offer(
        owner.jobId !== undefined ? { tenantId, product, jobId: owner.jobId } : { tenantId, product, conversationId: owner.conversationId },
      );
    },

    async testCall(tenantId, toolId, input, signal) {
      const found = await prisma.customerTool.findFirst({
        where: { tenantId, id: toolId },
        select: {
          id: true,
          tenantId: true,
          name: true,
          description: true,
          endpoint: true,
          method: true,
          inputSchema: true,
          headersCiphertext: true,
          timeoutMs: true,
        },
      });
      if (found === null) return null;
      const row: LoadedTool = {
        ...found,
        method: found.method as LoadedTool['method'],
        inputSchema: found.inputSchema as Record<string, unknown>,
        headersCiphertext: sealedBytes(found.headersCiphertext),
      };
      let validate: InputValidator;
      try {
        validate = compileInputSchema(row.inputSchema);
      } catch (error) {
        // Registered before a rule that now refuses it (a pattern RE2 cannot run): the customer must edit it.
        logger?.warn({ err: error, toolId: row.id }, "a customer tool's input schema does not compile; the test call is refused");
        return { inputProblems: ['input_schema: no longer accepted; edit the tool to see why'], result: null, record: null };
      }
      const inputProblems = validate(input);
      if (inputProblems.length > 0) return { inputProblems, result: null, record: null };
      const result = await call(row, input, signal);
      const record = await audit(row, { source: 'portal_test' }, result);
      return { inputProblems: [], result, record };
    },

    close: () => executor.close(),
  };
}
