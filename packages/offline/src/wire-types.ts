// The Messages API as offline mode answers it: the request body as the SDK sends it, and an assistant turn in
// our own camelCase terms, which wire.ts renders into the exact shapes the real API sends (snake_case JSON, SSE
// events). The test fakes (@fin/fakes) script their replies in the same terms and render them with the same code.

/** Every stop reason the Messages API reports. */
export type StopReason =
  'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'pause_turn' | 'refusal' | 'model_context_window_exceeded';

/** The `error.type` values of the API's error bodies, with the HTTP status each is sent with by default. */
export const API_ERROR_STATUS = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
} as const;
export type ApiErrorType = keyof typeof API_ERROR_STATUS;

/** One result of Claude's server-side web search, as the `web_search_tool_result` block lists it. */
export interface WebSearchResult {
  url: string;
  title: string;
  /** How old the page is, as the API words it ("2 days ago", "November 18, 2026"); null when unknown. */
  pageAge?: string | null;
  /** Opaque to clients; generated when omitted. */
  encryptedContent?: string;
}

/** A `web_search_result_location` citation attached to a text block. */
export interface WebSearchCitation {
  url: string;
  title: string | null;
  citedText: string;
  /** Opaque to clients; generated when omitted. */
  encryptedIndex?: string;
}

export interface TextScript {
  type: 'text';
  text: string;
  citations?: WebSearchCitation[];
}

export interface ToolUseScript {
  type: 'tool_use';
  /** `toolu_…`; generated when omitted. */
  id?: string;
  name: string;
  input: unknown;
}

export interface ServerToolUseScript {
  type: 'server_tool_use';
  /** `srvtoolu_…`; the web_search_tool_result that answers it names the same id. */
  id: string;
  name: 'web_search';
  input: { query: string };
}

export type WebSearchErrorCode =
  'invalid_tool_input' | 'unavailable' | 'max_uses_exceeded' | 'too_many_requests' | 'query_too_long' | 'request_too_large';

export interface WebSearchToolResultScript {
  type: 'web_search_tool_result';
  toolUseId: string;
  /** The results, or the error code the search failed with. */
  content: WebSearchResult[] | { errorCode: WebSearchErrorCode };
}

/**
 * A thinking block. Its signature is made when the reply is rendered (thinking.ts), over the model, the
 * conversation before it and `thinking`; `fullText` is the reasoning the signature stands for when `thinking`
 * shows less of it (display omitted), counted as output tokens.
 */
export interface ThinkingScript {
  type: 'thinking';
  thinking: string;
  fullText?: string;
  signature?: string;
}

export type ContentScript = TextScript | ToolUseScript | ServerToolUseScript | WebSearchToolResultScript | ThinkingScript;

/** Token counts to report instead of the estimate (input ≈ request chars / 4, output ≈ reply chars / 4). */
export interface UsageOverride {
  inputTokens?: number;
  outputTokens?: number;
  cacheCreationInputTokens?: number;
  cacheReadInputTokens?: number;
}

/** A successful assistant turn. */
export interface AssistantReply {
  content: ContentScript[];
  /** Defaults to `tool_use` when the content has a tool_use block, otherwise `end_turn`. */
  stopReason?: StopReason;
  stopSequence?: string | null;
  usage?: UsageOverride;
  /** Defaults to the model the request named. */
  model?: string;
  /** `msg_…`; generated when omitted. */
  id?: string;
}

/** A content block of a request message, as sent by the client (only the fields read here are typed). */
export interface RequestContentBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: unknown;
  is_error?: boolean;
  [key: string]: unknown;
}

export interface RequestMessage {
  role: 'user' | 'assistant';
  content: string | RequestContentBlock[];
}

/** The body of `POST /v1/messages` as the client sent it (validated only as far as the real API's basics). */
export interface MessagesRequestBody {
  model: string;
  max_tokens: number;
  messages: RequestMessage[];
  system?: string | Array<{ type: 'text'; text: string; [key: string]: unknown }>;
  tools?: Array<{ name: string; type?: string; description?: string; input_schema?: unknown; [key: string]: unknown }>;
  tool_choice?: { type: string; name?: string; [key: string]: unknown };
  output_config?: { format?: { type: string; schema?: Record<string, unknown> } | null; [key: string]: unknown };
  stream?: boolean;
  [key: string]: unknown;
}

/** A request as a model stand-in sees it (the test fakes hand their handlers a record with more fields). */
export interface ModelRequest {
  body: MessagesRequestBody;
}

/** Where a request stands: its 0-based position among the requests the same API answered. */
export interface ModelCallContext {
  index: number;
}

/** A stand-in for the model: computes the assistant's turn from the request, as the offline analyst does. */
export type StandInModel = (request: ModelRequest, context: ModelCallContext) => AssistantReply | Promise<AssistantReply>;
