// The checks the real API makes before it generates anything, worded as it words them, so client bugs (a missing
// tool_result, a schema the structured-output grammar refuses) fail offline and against the test fakes as they
// would in production.
import { type ApiErrorType, type MessagesRequestBody, type RequestContentBlock } from './wire-types';

export interface Rejection {
  type: ApiErrorType;
  message: string;
}

export interface ValidationOptions {
  /** When set, only this x-api-key is accepted. */
  apiKey?: string;
  /** Body checks (headers are always checked). */
  validateBody: boolean;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The API key a request carries: `x-api-key`, or a bearer token (what the SDK sends for `apiKey` since v1). */
export function requestApiKey(headers: Record<string, string>): string | undefined {
  const bearer = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '')?.[1];
  return headers['x-api-key'] || bearer || undefined;
}

export function checkHeaders(headers: Record<string, string>, options: ValidationOptions): Rejection | undefined {
  const key = requestApiKey(headers);
  if (!key) return { type: 'authentication_error', message: 'x-api-key header is required' };
  if (options.apiKey !== undefined && key !== options.apiKey) return { type: 'authentication_error', message: 'invalid x-api-key' };
  if (!headers['anthropic-version']) return { type: 'invalid_request_error', message: 'anthropic-version: header is required' };
  return undefined;
}

export function parseBody(raw: string): { body: unknown } | Rejection {
  try {
    return { body: JSON.parse(raw) as unknown };
  } catch {
    return { type: 'invalid_request_error', message: 'There was an issue with the request body: it is not valid JSON.' };
  }
}

function blocks(content: unknown): RequestContentBlock[] {
  return Array.isArray(content)
    ? content.filter((block): block is RequestContentBlock => isRecord(block) && typeof block.type === 'string')
    : [];
}

/** Every object in a structured-output schema must close itself with additionalProperties: false. */
function openObjectPath(schema: unknown, path: string): string | undefined {
  if (Array.isArray(schema)) {
    for (const [index, item] of schema.entries()) {
      const found = openObjectPath(item, `${path}.${index}`);
      if (found) return found;
    }
    return undefined;
  }
  if (!isRecord(schema)) return undefined;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if ((types.includes('object') || isRecord(schema.properties)) && schema.additionalProperties !== false) return path;
  for (const key of ['properties', '$defs', 'definitions'] as const) {
    const children = schema[key];
    if (!isRecord(children)) continue;
    for (const [name, child] of Object.entries(children)) {
      const found = openObjectPath(child, `${path}.${key}.${name}`);
      if (found) return found;
    }
  }
  for (const key of ['items', 'prefixItems', 'anyOf', 'allOf', 'oneOf', 'not'] as const) {
    const found = openObjectPath(schema[key], `${path}.${key}`);
    if (found) return found;
  }
  return undefined;
}

function checkOutputConfig(body: Record<string, unknown>): Rejection | undefined {
  const config = body.output_config;
  if (config === undefined || config === null) return undefined;
  if (!isRecord(config)) return { type: 'invalid_request_error', message: 'output_config: Input should be a valid dictionary' };
  const format = config.format;
  if (format === undefined || format === null) return undefined;
  if (!isRecord(format) || format.type !== 'json_schema') {
    return { type: 'invalid_request_error', message: "output_config.format.type: Input should be 'json_schema'" };
  }
  if (!isRecord(format.schema)) return { type: 'invalid_request_error', message: 'output_config.format.schema: Field required' };
  const open = openObjectPath(format.schema, 'output_config.format.schema');
  if (open) {
    return { type: 'invalid_request_error', message: `${open}: For 'object' type, 'additionalProperties' must be explicitly set to false` };
  }
  return undefined;
}

function checkToolPairing(messages: Array<Record<string, unknown>>): Rejection | undefined {
  for (const [index, message] of messages.entries()) {
    const content = blocks(message.content);
    if (message.role === 'assistant' && index < messages.length - 1) {
      const calls = content.filter((block) => block.type === 'tool_use').map((block) => String(block.id));
      const next = messages[index + 1];
      const answered = new Set(
        next?.role === 'user'
          ? blocks(next.content)
              .filter((block) => block.type === 'tool_result')
              .map((block) => String(block.tool_use_id))
          : [],
      );
      const missing = calls.filter((id) => !answered.has(id));
      if (missing.length > 0) {
        return {
          type: 'invalid_request_error',
          message: `messages.${index}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        };
      }
    }
    if (message.role === 'user') {
      const previous = messages[index - 1];
      const calls = new Set(
        previous?.role === 'assistant'
          ? blocks(previous.content)
              .filter((block) => block.type === 'tool_use')
              .map((block) => String(block.id))
          : [],
      );
      for (const [position, block] of content.entries()) {
        if (block.type === 'tool_result' && !calls.has(String(block.tool_use_id))) {
          return {
            type: 'invalid_request_error',
            message: `messages.${index}.content.${position}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          };
        }
      }
    }
  }
  return undefined;
}

/** The body checks of `POST /v1/messages` (and of count_tokens, which takes no max_tokens); on success the body is typed. */
export function checkMessagesBody(body: unknown, { countTokens = false } = {}): { body: MessagesRequestBody } | Rejection {
  const invalid = (message: string): Rejection => ({ type: 'invalid_request_error', message });
  if (!isRecord(body)) return invalid('Input should be a valid dictionary');
  if (typeof body.model !== 'string' || body.model === '') return invalid('model: Field required');
  if (!countTokens) {
    if (body.max_tokens === undefined) return invalid('max_tokens: Field required');
    if (!Number.isInteger(body.max_tokens) || (body.max_tokens as number) < 1)
      return invalid('max_tokens: Input should be greater than or equal to 1');
  }
  if (!Array.isArray(body.messages)) return invalid('messages: Field required');
  if (body.messages.length === 0) return invalid('messages: at least one message is required');
  for (const [index, message] of (body.messages as unknown[]).entries()) {
    if (!isRecord(message)) return invalid(`messages.${index}: Input should be a valid dictionary`);
    if (message.role !== 'user' && message.role !== 'assistant')
      return invalid(`messages.${index}.role: Input should be 'user' or 'assistant'`);
    if (typeof message.content !== 'string' && !Array.isArray(message.content))
      return invalid(`messages.${index}.content: Input should be a valid list`);
  }
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return invalid('tools: Input should be a valid list');
    const names = new Set<string>();
    for (const [index, tool] of (body.tools as unknown[]).entries()) {
      if (!isRecord(tool) || typeof tool.name !== 'string') return invalid(`tools.${index}.name: Field required`);
      if (names.has(tool.name)) return invalid(`tools: Tool names must be unique.`);
      names.add(tool.name);
      // Server tools (web_search_…) carry a versioned `type` instead of an input schema.
      if (tool.type === undefined || tool.type === 'custom') {
        if (!isRecord(tool.input_schema)) return invalid(`tools.${index}.custom.input_schema: Field required`);
      }
    }
  }
  return (
    checkOutputConfig(body) ?? checkToolPairing(body.messages as Array<Record<string, unknown>>) ?? { body: body as MessagesRequestBody }
  );
}
