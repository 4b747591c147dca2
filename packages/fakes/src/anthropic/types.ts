// The scripting vocabulary of the fake Anthropic Messages API. Scripts are written in our own camelCase terms;
// the server renders them into the exact wire shapes (snake_case JSON, SSE events) the real API sends.

/** Every stop reason the Messages API reports. */
export type StopReason =
  | 'end_turn'
  | 'max_tokens'
  | 'stop_sequence'
  | 'tool_use'
  | 'pause_turn'
  | 'refusal'
  | 'model_context_window_exceeded';

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
  /** `srvtoolu_…`; the web_search_tool_result that answers it names the same id (webSearch() pairs them). */
  id: string;
  name: 'web_search';
  input: { query: string };
}

export type WebSearchErrorCode =
  | 'invalid_tool_input'
  | 'unavailable'
  | 'max_uses_exceeded'
  | 'too_many_requests'
  | 'query_too_long'
  | 'request_too_large';

export interface WebSearchToolResultScript {
  type: 'web_search_tool_result';
  toolUseId: string;
  /** The results, or the error code the search failed with. */
  content: WebSearchResult[] | { errorCode: WebSearchErrorCode };
}

export type ContentScript = TextScript | ToolUseScript | ServerToolUseScript | WebSearchToolResultScript;

/** Token counts to report instead of the estimate (input ≈ request chars / 4, output ≈ reply chars / 4). */
export interface UsageOverride {
  inputTokens?: number;
  outputTokens?: number;
  cacheCreationInputTokens?: number;
  cacheReadInputTokens?: number;
}

/**
 * Ways to misbehave. Event counts refer to the SSE events of a streamed reply, pings not counted: `message_start`
 * is event 1, so `afterEvents: 1` fails right after it.
 */
export interface Faults {
  /** Wait this long before sending the status line and headers. */
  latencyMs?: number;
  /** Streamed replies: wait this long before each event after the first. */
  delayBetweenEventsMs?: number;
  /** Streamed replies: after this many events send an `error` event (status stays 200) and end the stream. */
  failMidStream?: { afterEvents: number; error: { type: ApiErrorType; message?: string } };
  /**
   * A syntactically broken JSON body (non-streamed) or `data:` line (streamed; the broken event follows
   * `afterEvents` good ones, default 2, i.e. after the first content_block_start). The stream ends after it.
   */
  malformedJson?: boolean | { afterEvents: number };
  /**
   * Never finish: `true` sends nothing at all (not even headers); `{afterEvents}` streams that many events and
   * then stalls. Ends only when the client gives up or the fake closes, which is how SDK timeouts are tested.
   */
  hang?: boolean | { afterEvents: number };
  /**
   * Destroy the TCP connection: streamed replies after this many events; non-streamed replies before anything
   * is written (the client sees a connection error).
   */
  dropConnectionAfterEvents?: number;
}

/** A successful assistant turn. */
export interface MessageReply {
  content: ContentScript[];
  /** Defaults to `tool_use` when the content has a tool_use block, otherwise `end_turn`. */
  stopReason?: StopReason;
  stopSequence?: string | null;
  usage?: UsageOverride;
  /** Defaults to the model the request named. */
  model?: string;
  /** `msg_…`; generated when omitted. */
  id?: string;
  faults?: Faults;
}

/** An error answered with an HTTP error status, before any streaming starts (mid-stream errors are a fault). */
export interface ErrorReply {
  error: {
    type: ApiErrorType;
    /** Defaults to the type's usual wording ("Overloaded" for overloaded_error). */
    message?: string;
    /** Defaults to the status the API uses for the type (API_ERROR_STATUS). */
    status?: number;
    /** Sent as the `retry-after` header (the real API sends whole seconds; fractions help keep tests fast). */
    retryAfterSeconds?: number;
    /** Sent as `x-should-retry`, which the SDK obeys over its own status rules. */
    shouldRetry?: boolean;
    /** Passed through as `error.details` (the SDK maps some `details.error_code`s to subclasses). */
    details?: Record<string, unknown>;
  };
  faults?: Pick<Faults, 'latencyMs' | 'hang' | 'dropConnectionAfterEvents'>;
}

export type Reply = MessageReply | ErrorReply;

/** A content block of a request message, as sent by the client (only the fields the fake looks at are typed). */
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

/** One request the fake received, in arrival order. */
export interface RecordedRequest {
  /** 0-based position among all requests this fake received (since the last reset). */
  index: number;
  method: string;
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The key the client authenticated with (`x-api-key`, or the bearer token of `authorization`). */
  apiKey: string | undefined;
  /** The parsed JSON body; `undefined` when it was not JSON. */
  body: MessagesRequestBody | undefined;
  rawBody: string;
  /** `body.stream === true`. */
  stream: boolean;
  /** How the fake answered: a scripted reply, the handler, a validation error, or the unscripted-request 500. */
  answeredBy: 'queue' | 'handler' | 'validation' | 'unscripted' | 'builtin';
  /**
   * Set (on this live record) when the connection closed before the answer was complete: the client aborted
   * the call, as the SDK does when its `signal` fires, or the fake was closed first. Stays false for an
   * answer that was sent in full.
   */
  cancelled: boolean;
}

export interface HandlerContext {
  /** Same as `request.index`. */
  index: number;
}

/** Computes a reply from the request: how dynamic fakes (e.g. the offline analyst) answer. */
export type ReplyHandler = (request: RecordedRequest & { body: MessagesRequestBody }, context: HandlerContext) => Reply | Promise<Reply>;

/** A queue entry: a fixed reply, or one computed from the request it answers. */
export type ScriptedReply = Reply | ReplyHandler;
