// /api/customer-tools: external HTTP APIs a customer registers for the model to call (function calling).
// The spec leaves the payloads open; they follow what function-calling APIs use: a name and description the
// model sees, and a JSON Schema of the arguments (`input_schema`, as in the Anthropic tool definition).
import { z } from 'zod';
import {
  MAX_JSON_DEPTH,
  UNSTORABLE_TEXT_MESSAGE,
  dedupe,
  fieldError,
  isStorableText,
  maxJsonBytes,
  quote,
  requestObject,
  storableJson,
  uuid,
} from './internal';

export const CUSTOMER_TOOL_NAME_PATTERN = /^[a-zA-Z][a-zA-Z0-9_]{0,63}$/;
export const CUSTOMER_TOOL_DESCRIPTION_MAX = 1024;
export const CUSTOMER_TOOL_ENDPOINT_MAX = 2048;
export const CUSTOMER_TOOL_INPUT_SCHEMA_MAX_BYTES = 16 * 1024;
export const CUSTOMER_TOOL_HEADERS_MAX = 20;
export const CUSTOMER_TOOL_HEADER_VALUE_MAX = 4096;
export const CUSTOMER_TOOL_TIMEOUT_MIN_MS = 100;
export const CUSTOMER_TOOL_TIMEOUT_MAX_MS = 30_000;
export const CUSTOMER_TOOL_TIMEOUT_DEFAULT_MS = 10_000;

/** Hop-by-hop headers (RFC 9110 §7.6.1 plus the historical ones): they belong to one connection, never forwarded. */
export const HOP_BY_HOP_HEADERS: readonly string[] = [
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];

/**
 * Headers a customer may not set: hop-by-hop headers belong to one connection, and Host / Content-Length are
 * computed by our HTTP client; letting a customer set them would allow request smuggling or misrouting. Compared
 * case-insensitively.
 */
export const FORBIDDEN_TOOL_HEADERS: readonly string[] = [...HOP_BY_HOP_HEADERS, 'content-length', 'host'];

/** RFC 9110 `token`: the characters allowed in a header field name. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$/;
/** Visible ASCII, obs-text, space and tab; no CR, LF or NUL (header injection). */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

export const CustomerToolProduct = z
  .enum(['news', 'stock-report', 'analysis', 'chat'], {
    error: fieldError((input) => `must be one of news, stock-report, analysis, chat, got ${quote(input)}`),
  })
  .meta({ id: 'CustomerToolProduct', description: 'A product whose model may call the tool.' });
export type CustomerToolProduct = z.infer<typeof CustomerToolProduct>;

/**
 * The names of the tools the service's own engine offers the model beside a tenant's customer tools: `market_data`
 * (@fin/ai market-data-tool.ts), `sec_filings` (@fin/ai filings-tool.ts) and the server-side `web_search` (@fin/ai
 * loop.ts). The Messages API refuses a
 * request whose tools list one name twice, so a customer tool of one of these names made every run that offered it
 * fail: they are refused as customer tool names. Compared exactly, as the Messages API compares tool names
 * (`Web_Search` is another name). Here, not in @fin/ai, because the request schemas below need it and @fin/ai
 * depends on this package; packages/ai/test/reserved-tool-names.test.ts fails when the engine offers a tool not
 * listed here. A name added later also needs a migration that disables the tools already saved under it, as
 * 1764460800000_reserved-tool-names.sql does for the first two and 1765324800000_sec-filings-tool-name.sql for
 * `sec_filings`.
 */
export const RESERVED_TOOL_NAMES: readonly string[] = ['market_data', 'sec_filings', 'web_search'];

/** Why `name` cannot be a customer tool's name (without the field prefix), or null when it can. */
export function reservedToolNameProblem(name: string): string | null {
  return RESERVED_TOOL_NAMES.includes(name) ? `${quote(name)} is reserved for the service's own tools: choose another name` : null;
}

const CUSTOMER_TOOL_NAME_DESCRIPTION = 'The name the model sees and calls the tool by; unique per account.';

export const CustomerToolName = z
  .string({ error: fieldError('must be a string') })
  .regex(CUSTOMER_TOOL_NAME_PATTERN, 'must start with a letter and contain only letters, digits and "_" (at most 64 characters)')
  .superRefine((name, ctx) => {
    const problem = reservedToolNameProblem(name);
    if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({
    id: 'CustomerToolName',
    description: `${CUSTOMER_TOOL_NAME_DESCRIPTION} Not one of the names of the service's own tools (${RESERVED_TOOL_NAMES.join(', ')}; compared exactly): the model cannot be offered two tools with one name.`,
    examples: ['get_portfolio_positions'],
  });
export type CustomerToolName = z.infer<typeof CustomerToolName>;

export const CustomerToolMethod = z
  .enum(['GET', 'POST'], { error: fieldError((input) => `must be GET or POST, got ${quote(input)}`) })
  .meta({ id: 'CustomerToolMethod', description: 'GET sends the arguments as query parameters, POST as a JSON body.' });
export type CustomerToolMethod = z.infer<typeof CustomerToolMethod>;

/**
 * The endpoint: an absolute https URL without credentials (secrets go in `headers`, which are never returned).
 * Whether the host resolves to a public address is checked when the tool is called, not here: DNS can change
 * after registration.
 */
const CustomerToolEndpoint = z
  .url({ protocol: /^https$/, error: fieldError('must be an absolute https:// URL') })
  .max(CUSTOMER_TOOL_ENDPOINT_MAX, `must be at most ${CUSTOMER_TOOL_ENDPOINT_MAX} characters`)
  .regex(/^https:\/\//i, 'must be an absolute https:// URL')
  .refine((endpoint) => !hasCredentials(endpoint), 'must not contain a user name or password; put secrets in headers')
  .refine(isStorableText, UNSTORABLE_TEXT_MESSAGE)
  .meta({
    description: `Absolute https:// URL of the customer's API, at most ${CUSTOMER_TOOL_ENDPOINT_MAX} characters, no credentials.`,
    examples: ['https://api.example.com/positions'],
  });

function hasCredentials(endpoint: string): boolean {
  try {
    const url = new URL(endpoint);
    return url.username !== '' || url.password !== '';
  } catch {
    return false; // not a URL at all: the format check has reported it
  }
}

/**
 * JSON Schema of the tool's arguments. Here: an object schema at the top (as every function-calling API requires)
 * and a size cap. The portal service also checks it against the draft 2020-12 meta-schema and compiles it with
 * Ajv (@fin/customer-tools), answering 400 with the path of each problem inside `input_schema`.
 */
export const ToolInputSchema = z
  .looseObject(
    { type: z.literal('object', { error: 'must be "object": a tool takes its arguments as a JSON object' }) },
    { error: fieldError('must be a JSON Schema object') },
  )
  .superRefine(storableJson())
  .superRefine(maxJsonBytes(CUSTOMER_TOOL_INPUT_SCHEMA_MAX_BYTES))
  .meta({
    id: 'ToolInputSchema',
    description:
      `JSON Schema (draft 2020-12) of the tool's arguments; top-level type "object"; at most ${CUSTOMER_TOOL_INPUT_SCHEMA_MAX_BYTES / 1024} KiB, nested at most ${MAX_JSON_DEPTH} levels deep. ` +
      '`pattern` and `patternProperties` run on RE2 (linear time); backreferences, lookahead and lookbehind are refused with a 400 naming the keyword.',
    examples: [{ type: 'object', properties: { account: { type: 'string' } }, required: ['account'] }],
  });
export type ToolInputSchema = z.infer<typeof ToolInputSchema>;

const HeaderName = z
  .string()
  .regex(HEADER_NAME, "must be 1 to 128 HTTP token characters (letters, digits and !#$%&'*+-.^_`|~)")
  .refine((name) => !FORBIDDEN_TOOL_HEADERS.includes(name.toLowerCase()), {
    error: (issue) => `${quote(issue.input)} is set by the HTTP client and cannot be configured`,
  });

export const ToolHeaders = z
  .record(
    HeaderName,
    z
      .string({ error: 'must be a string' })
      .min(1, 'must not be empty')
      .max(CUSTOMER_TOOL_HEADER_VALUE_MAX, `must be at most ${CUSTOMER_TOOL_HEADER_VALUE_MAX} characters`)
      .regex(HEADER_VALUE, 'must not contain line breaks or control characters'),
    { error: fieldError('must be an object mapping header names to values') },
  )
  .superRefine((headers, ctx) => {
    const names = Object.keys(headers);
    if (names.length > CUSTOMER_TOOL_HEADERS_MAX) {
      ctx.addIssue({ code: 'custom', message: `must have at most ${CUSTOMER_TOOL_HEADERS_MAX} headers, got ${names.length}` });
    }
    const seen = new Map<string, string>();
    for (const name of names) {
      const first = seen.get(name.toLowerCase());
      if (first === undefined) seen.set(name.toLowerCase(), name);
      else ctx.addIssue({ code: 'custom', path: [name], message: `duplicates header ${quote(first)} (header names are case-insensitive)` });
    }
  })
  .meta({
    id: 'ToolHeaders',
    description: `Headers sent with every call (e.g. the customer's API key); at most ${CUSTOMER_TOOL_HEADERS_MAX}. Write-only: values are stored encrypted and never returned.`,
    maxProperties: CUSTOMER_TOOL_HEADERS_MAX,
    examples: [{ Authorization: 'Bearer <customer-secret>' }],
  });
export type ToolHeaders = z.infer<typeof ToolHeaders>;

const ALL_PRODUCTS = CustomerToolProduct.options;

const toolFields = {
  name: CustomerToolName,
  description: z
    .string({ error: fieldError('must be a string') })
    .trim()
    .min(1, 'must not be empty')
    .max(CUSTOMER_TOOL_DESCRIPTION_MAX, `must be at most ${CUSTOMER_TOOL_DESCRIPTION_MAX} characters`)
    .refine(isStorableText, UNSTORABLE_TEXT_MESSAGE)
    .meta({ description: 'What the tool does and when to use it; the model reads this to decide whether to call it.' }),
  endpoint: CustomerToolEndpoint,
  method: CustomerToolMethod.default('POST'),
  input_schema: ToolInputSchema,
  headers: ToolHeaders.optional(),
  enabled: z.boolean({ error: 'must be true or false' }).default(true),
  timeout_ms: z
    .int({ error: fieldError('must be an integer') })
    .min(CUSTOMER_TOOL_TIMEOUT_MIN_MS, `must be at least ${CUSTOMER_TOOL_TIMEOUT_MIN_MS}`)
    .max(CUSTOMER_TOOL_TIMEOUT_MAX_MS, `must be at most ${CUSTOMER_TOOL_TIMEOUT_MAX_MS}`)
    .default(CUSTOMER_TOOL_TIMEOUT_DEFAULT_MS)
    .meta({ description: 'Time allowed for one call, in milliseconds.' }),
  products: z
    .array(CustomerToolProduct, { error: fieldError('must be an array of product names') })
    .overwrite(dedupe)
    .min(1, 'must list at least one product')
    .default(() => [...ALL_PRODUCTS])
    .meta({ description: 'Products whose model may call the tool; default all. Repeats are ignored.' }),
};

const toolExample = {
  name: 'get_portfolio_positions',
  description: 'Returns the current positions of a client account. Use when the user asks about their holdings.',
  endpoint: 'https://api.example.com/positions',
  method: 'POST',
  input_schema: { type: 'object', properties: { account: { type: 'string' } }, required: ['account'] },
  products: ['analysis', 'chat'],
};

export const CustomerToolCreateRequest = requestObject(toolFields).meta({
  id: 'CustomerToolCreateRequest',
  description: 'Registers a tool. Omitted optional fields take their defaults.',
  examples: [{ ...toolExample, headers: { Authorization: 'Bearer <customer-secret>' } }],
});
export type CustomerToolCreateRequest = z.infer<typeof CustomerToolCreateRequest>;
export type CustomerToolCreateRequestInput = z.input<typeof CustomerToolCreateRequest>;

/**
 * PUT semantics: the body is the tool's new state, so an omitted optional field takes its default (not its
 * previous value) — with ONE exception: `headers`. Header values are write-only secrets the client cannot read
 * back, so omitting `headers` keeps the stored ones; sending `{}` removes them all; sending an object replaces
 * them all. Stored values never follow the endpoint to another origin: omitting `headers` while moving it there
 * is a 400 asking for them (the portal service checks it against the stored endpoint).
 */
export const CustomerToolUpdateRequest = requestObject(toolFields).meta({
  id: 'CustomerToolUpdateRequest',
  description:
    'Replaces a tool. Omitted optional fields take their defaults, except `headers`: omitted keeps the stored headers, {} removes them. ' +
    'Stored header values are never sent to another origin: a new `endpoint` whose scheme, host or port differs needs `headers` again (or {}); without them the answer is 400 naming `headers` and the tool is unchanged.',
  examples: [{ ...toolExample, enabled: false }],
});
export type CustomerToolUpdateRequest = z.infer<typeof CustomerToolUpdateRequest>;
export type CustomerToolUpdateRequestInput = z.input<typeof CustomerToolUpdateRequest>;

export const CustomerToolPathParams = z
  .object({ id: uuid() })
  .meta({ id: 'CustomerToolPathParams', description: 'Path parameter {id} of /api/customer-tools/{id} and its /calls.' });
export type CustomerToolPathParams = z.infer<typeof CustomerToolPathParams>;

/** A stored tool as returned to its owner. Header values are never returned, only their names. */
export const CustomerTool = z
  .object({
    id: z.uuid(),
    // Not CustomerToolName: a tool saved before its name was reserved is still listed (disabled, see disabled_reason).
    name: z.string().meta({ description: CUSTOMER_TOOL_NAME_DESCRIPTION, examples: ['get_portfolio_positions'] }),
    description: z.string(),
    endpoint: z.string(),
    method: CustomerToolMethod,
    input_schema: z.record(z.string(), z.unknown()),
    header_names: z
      .array(z.string())
      .meta({ description: 'Names of the configured headers; values are write-only.', examples: [['Authorization']] }),
    enabled: z.boolean(),
    disabled_reason: z
      .string()
      .nullable()
      .meta({
        description:
          "Why the service disabled the tool, when it did; null otherwise. Set on tools saved before their name became one of the service's own tool names: such a tool stays disabled until it is saved under another name, which clears this.",
        examples: [null],
      }),
    timeout_ms: z.int(),
    products: z.array(CustomerToolProduct),
    created_at: z.iso.datetime({ offset: true }),
    updated_at: z.iso.datetime({ offset: true }),
  })
  .meta({ id: 'CustomerTool', description: 'A registered customer tool.' });
export type CustomerTool = z.infer<typeof CustomerTool>;

export const CustomerToolListResponse = z
  .object({ tools: z.array(CustomerTool) })
  .meta({ id: 'CustomerToolListResponse', description: "The caller's tools, oldest first." });
export type CustomerToolListResponse = z.infer<typeof CustomerToolListResponse>;

export const CUSTOMER_TOOL_CALLS_DEFAULT_LIMIT = 50;
export const CUSTOMER_TOOL_CALLS_MAX_LIMIT = 200;

export const CustomerToolCallOutcome = z
  .enum([
    'ok',
    'http_error',
    'blocked_address',
    'redirect_refused',
    'timeout',
    'response_too_large',
    'connection_failed',
    'invalid_endpoint',
    'aborted',
  ])
  .meta({
    id: 'CustomerToolCallOutcome',
    description:
      'ok: a 2xx answer; http_error: a 4xx/5xx answer; blocked_address: the endpoint resolved to a non-public address and was not contacted; redirect_refused: a 3xx answer (redirects are not followed); timeout; response_too_large: the body passed 1 MiB and was cut off; connection_failed: DNS, TCP or TLS failure; invalid_endpoint; aborted: the job or conversation ended first.',
  });
export type CustomerToolCallOutcome = z.infer<typeof CustomerToolCallOutcome>;

/** One recorded call of a tool. Never arguments, header values or response bodies. */
export const CustomerToolCall = z
  .object({
    id: z.uuid(),
    tool_id: z.uuid().nullable(),
    tool_name: z.string(),
    source: z
      .enum(['job', 'conversation', 'portal_test'])
      .meta({ description: "What made the call: a product job, a chat conversation, or the portal's test button." }),
    product: CustomerToolProduct.nullable(),
    job_id: z.uuid().nullable(),
    conversation_id: z.uuid().nullable(),
    outcome: CustomerToolCallOutcome,
    http_status: z.int().nullable().meta({ description: 'Status the endpoint answered with; null when it was not reached.' }),
    duration_ms: z.int(),
    response_bytes: z.int().meta({ description: 'Response body bytes received (at most the 1 MiB cap).' }),
    error: z.string().nullable().meta({ description: 'Why the call did not succeed, when it did not.' }),
    created_at: z.iso.datetime({ offset: true }),
  })
  .meta({ id: 'CustomerToolCall', description: "One call the AI (or the portal's test button) made to the tool." });
export type CustomerToolCall = z.infer<typeof CustomerToolCall>;

export const CustomerToolCallsQuery = z
  .object({
    limit: z.coerce
      .number({ error: 'must be an integer' })
      .int('must be an integer')
      .min(1, 'must be at least 1')
      .max(CUSTOMER_TOOL_CALLS_MAX_LIMIT, `must be at most ${CUSTOMER_TOOL_CALLS_MAX_LIMIT}`)
      .default(CUSTOMER_TOOL_CALLS_DEFAULT_LIMIT)
      .meta({
        description: `How many of the most recent calls to return (1-${CUSTOMER_TOOL_CALLS_MAX_LIMIT}, default ${CUSTOMER_TOOL_CALLS_DEFAULT_LIMIT}).`,
      }),
  })
  .meta({ id: 'CustomerToolCallsQuery', description: 'Query parameters of GET /api/customer-tools/{id}/calls.' });
export type CustomerToolCallsQuery = z.infer<typeof CustomerToolCallsQuery>;

export const CustomerToolCallListResponse = z
  .object({ calls: z.array(CustomerToolCall) })
  .meta({ id: 'CustomerToolCallListResponse', description: "The tool's most recent calls, newest first." });
export type CustomerToolCallListResponse = z.infer<typeof CustomerToolCallListResponse>;
