// The checks the real API makes before it generates anything, worded as it words them, so client bugs (a missing
// tool_result, a schema the structured-output grammar refuses) fail offline and against the test fakes as they
// would in production.
import { apiModel, checkModelRules } from './model-rules';
import { promptTokens } from './prompt-cache';
import { checkThinkingBlocks } from './thinking';
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

/** tool_choice needs tools, names one of them when it names one, and is one of the API's four kinds. */
function checkToolChoice(body: Record<string, unknown>): Rejection | undefined {
  const choice = body.tool_choice;
  if (choice === undefined || choice === null) return undefined;
  const invalid = (message: string): Rejection => ({ type: 'invalid_request_error', message });
  if (!isRecord(choice) || !['auto', 'any', 'tool', 'none'].includes(String(choice.type))) {
    return invalid("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'");
  }
  const tools = Array.isArray(body.tools) ? (body.tools as Array<Record<string, unknown>>) : [];
  if (tools.length === 0) return invalid('tool_choice: tool_choice may only be specified while providing tools.');
  if (choice.type === 'tool' && !tools.some((tool) => tool.name === choice.name)) {
    return invalid(`tool_choice.name: Tool '${String(choice.name)}' not found in tools.`);
  }
  // Forced tool use with thinking on is a rule of each model's (model-rules.ts).
  return undefined;
}

/** A conversation holding tool_use or tool_result blocks must define tools (the API refuses it otherwise). */
function checkToolBlocksHaveTools(body: Record<string, unknown>, messages: Array<Record<string, unknown>>): Rejection | undefined {
  if (Array.isArray(body.tools) && body.tools.length > 0) return undefined;
  const usesTools = messages.some((message) =>
    blocks(message.content).some((block) => block.type === 'tool_use' || block.type === 'tool_result'),
  );
  return usesTools
    ? { type: 'invalid_request_error', message: 'Requests which include `tool_use` or `tool_result` blocks must define tools.' }
    : undefined;
}

const MAX_CACHE_BREAKPOINTS = 4;

/**
 * cache_control: at most 4 breakpoints in tools, system and messages together; never on an empty text block; and
 * a 1-hour breakpoint never after a 5-minute one (longer lifetimes come first in the prompt).
 */
function checkCacheControl(body: Record<string, unknown>, messages: Array<Record<string, unknown>>): Rejection | undefined {
  const invalid = (message: string): Rejection => ({ type: 'invalid_request_error', message });
  const marked: Array<{ path: string; block: Record<string, unknown> }> = [];
  const visit = (block: unknown, path: string) => {
    if (isRecord(block) && block.cache_control !== undefined && block.cache_control !== null) marked.push({ path, block });
  };
  if (Array.isArray(body.tools)) body.tools.forEach((tool, index) => visit(tool, `tools.${index}`));
  if (Array.isArray(body.system)) body.system.forEach((block, index) => visit(block, `system.${index}`));
  messages.forEach((message, index) => {
    if (Array.isArray(message.content)) message.content.forEach((block, position) => visit(block, `messages.${index}.content.${position}`));
  });
  if (marked.length > MAX_CACHE_BREAKPOINTS) {
    return invalid(`A maximum of ${MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found ${marked.length}.`);
  }
  let seenShort = false;
  for (const { path, block } of marked) {
    const control = block.cache_control;
    if (!isRecord(control) || control.type !== 'ephemeral') return invalid(`${path}.cache_control.type: Input should be 'ephemeral'`);
    if (control.ttl !== undefined && control.ttl !== '5m' && control.ttl !== '1h')
      return invalid(`${path}.cache_control.ttl: Input should be '5m' or '1h'`);
    if (block.type === 'text' && block.text === '') return invalid(`${path}: cache_control cannot be set for empty text blocks`);
    if (block.type === 'thinking' || block.type === 'redacted_thinking')
      return invalid(`${path}: cache_control cannot be set on thinking blocks`);
    if (control.ttl === '1h' && seenShort) {
      return invalid(`${path}.cache_control: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block`);
    }
    if (control.ttl !== '1h') seenShort = true;
  }
  return undefined;
}

/** A prompt longer than the model's context window, in the words the API uses. */
function checkContextWindow(body: MessagesRequestBody): Rejection | undefined {
  const window = apiModel(body.model)?.contextWindow;
  if (window === undefined) return undefined;
  const tokens = promptTokens(body);
  return tokens > window
    ? { type: 'invalid_request_error', message: `prompt is too long: ${tokens} tokens > ${window} maximum` }
    : undefined;
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
      // A user-defined tool's name "must match the regex ^[a-zA-Z0-9_-]{1,128}$"
      // (https://platform.claude.com/docs/agents-and-tools/tool-use/define-tools, read 2026-11-29).
      if ((tool.type === undefined || tool.type === 'custom') && !/^[a-zA-Z0-9_-]{1,128}$/.test(tool.name))
        return invalid(`tools.${index}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`);
      if (names.has(tool.name)) return invalid(`tools: Tool names must be unique.`);
      names.add(tool.name);
      // Server tools (web_search_…) carry a versioned `type` instead of an input schema.
      if (tool.type === undefined || tool.type === 'custom') {
        if (!isRecord(tool.input_schema)) return invalid(`tools.${index}.custom.input_schema: Field required`);
      }
    }
  }
  const messages = body.messages as Array<Record<string, unknown>>;
  const typed = body as MessagesRequestBody;
  return (
    checkModelRules(typed, { countTokens }) ??
    checkToolChoice(body) ??
    checkToolBlocksHaveTools(body, messages) ??
    checkCacheControl(body, messages) ??
    checkOutputConfig(body) ??
    checkToolPairing(messages) ??
    checkThinkingBlocks(typed) ??
    checkContextWindow(typed) ?? { body: typed }
  );
}
