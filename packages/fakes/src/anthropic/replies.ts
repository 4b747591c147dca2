// Small builders for scripted replies, so a test reads as the conversation it scripts:
//   fake.reply(toolUseReply('market_data', { symbol: 'AAPL' }), jsonReply({ ok: true }))
// Content blocks (text, toolUse) are offline mode's own builders; replies here also take faults.
import {
  apiId,
  text,
  toolUse,
  type ApiErrorType,
  type ContentScript,
  type ServerToolUseScript,
  type WebSearchCitation,
  type WebSearchErrorCode,
  type WebSearchResult,
  type WebSearchToolResultScript,
} from '@fin/offline';
import { type ErrorReply, type MessageReply } from './types';

type ReplyOptions = Omit<MessageReply, 'content'>;

/**
 * A server-side web search as the API reports it: a `server_tool_use` block (name web_search, input {query})
 * followed by the `web_search_tool_result` block answering it. Spread it into a reply's content.
 */
export function webSearch(
  query: string,
  results: WebSearchResult[] | { errorCode: WebSearchErrorCode },
  id: string = apiId('srvtoolu'),
): [ServerToolUseScript, WebSearchToolResultScript] {
  return [
    { type: 'server_tool_use', id, name: 'web_search', input: { query } },
    { type: 'web_search_tool_result', toolUseId: id, content: results },
  ];
}

/** A web_search_result_location citation of a search result, quoting `citedText` from it. */
export function citation(result: WebSearchResult, citedText: string): WebSearchCitation {
  return { url: result.url, title: result.title, citedText };
}

/** An assistant turn with the given blocks. */
export function message(content: ContentScript[], options: ReplyOptions = {}): MessageReply {
  return { ...options, content };
}

/** An assistant turn that is one text block. */
export function textReply(value: string, options: ReplyOptions = {}): MessageReply {
  return message([text(value)], options);
}

/** A structured-output answer: the value serialised as the single text block (what output_config.format yields). */
export function jsonReply(value: unknown, options: ReplyOptions = {}): MessageReply {
  return textReply(JSON.stringify(value), options);
}

/** An assistant turn that calls one client tool (stop_reason tool_use), optionally after some text. */
export function toolUseReply(
  name: string,
  input: unknown,
  options: ReplyOptions & { preamble?: string; toolUseId?: string } = {},
): MessageReply {
  const { preamble, toolUseId, ...rest } = options;
  const blocks: ContentScript[] = preamble ? [text(preamble)] : [];
  blocks.push(toolUse(name, input, toolUseId));
  return message(blocks, rest);
}

const DEFAULT_ERROR_MESSAGES: Record<ApiErrorType, string> = {
  invalid_request_error: 'Invalid request',
  authentication_error: 'invalid x-api-key',
  billing_error: 'Your credit balance is too low to access the Anthropic API.',
  permission_error: 'Your API key does not have permission to use the specified resource.',
  not_found_error: 'The requested resource could not be found.',
  request_too_large: 'Request exceeds the maximum allowed number of bytes.',
  rate_limit_error: "This request would exceed your organization's rate limit. Please try again later.",
  api_error: 'Internal server error',
  timeout_error: 'Request timeout',
  overloaded_error: 'Overloaded',
};

export function defaultErrorMessage(type: ApiErrorType): string {
  return DEFAULT_ERROR_MESSAGES[type];
}

/** An HTTP error answer (status from the type unless given). */
export function errorReply(
  type: ApiErrorType,
  options: Omit<ErrorReply['error'], 'type'> & { faults?: ErrorReply['faults'] } = {},
): ErrorReply {
  const { faults, ...error } = options;
  return faults ? { error: { type, ...error }, faults } : { error: { type, ...error } };
}

/** A reply that never comes: the request stays open until the client times out or the fake closes. */
export function hangingReply(): MessageReply {
  return { content: [], faults: { hang: true } };
}
