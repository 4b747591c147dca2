// Renders an assistant turn into what the real API sends: the Message JSON of a non-streamed response, or the
// sequence of SSE events of a streamed one (message_start, content blocks with their deltas, message_delta,
// message_stop, pings). Both are built from the same blocks, so a client that accumulates the stream ends up
// with exactly the Message the non-streamed call returns. Offline mode answers with it in-process (fetch.ts);
// the test fakes' Messages server writes the same bytes to its sockets.
import { apiId, opaque } from './ids';
import { apiModel, effectiveThinking, modelTokens } from './model-rules';
import { promptTokens, type BilledInput } from './prompt-cache';
import { prefixHash, signThinking } from './thinking';
import { countTokens } from './tokens';
import { type ApiErrorType, type AssistantReply, type ContentScript, type MessagesRequestBody, type StopReason } from './wire-types';

export interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

export interface RenderOptions {
  /** Characters per text_delta. */
  textChunkChars: number;
  /** Characters per input_json_delta. */
  jsonChunkChars: number;
  /** A ping after this many events (message_start is always followed by one); 0 for only that first ping. */
  pingEveryEvents: number;
}

const DIRECT_CALLER = { type: 'direct' } as const;

/** Every token of what the model reads, by the tokenizer approximation of tokens.ts (count_tokens' answer). */
export function estimateInputTokens(body: MessagesRequestBody): number {
  return promptTokens(body);
}

function outputTokens(content: ContentScript[]): number {
  let tokens = 0;
  for (const block of content) {
    if (block.type === 'text') tokens += countTokens(block.text);
    else if (block.type === 'thinking') tokens += countTokens(block.fullText ?? block.thinking);
    else if (block.type === 'tool_use') tokens += countTokens(`${block.name} ${JSON.stringify(block.input ?? {})}`);
    else if (block.type === 'server_tool_use') tokens += countTokens(JSON.stringify(block.input));
  }
  return Math.max(1, tokens);
}

/** `text` cut to at most `tokens` of the model's output tokens (a prefix, by code points). */
function cutText(model: string, text: string, tokens: number): string {
  const points = Array.from(text);
  const total = modelTokens(model, countTokens(text));
  let length = Math.floor((points.length * tokens) / Math.max(1, total));
  while (length > 0 && modelTokens(model, countTokens(points.slice(0, length).join(''))) > tokens)
    length -= Math.max(1, Math.ceil(length / 50));
  return points.slice(0, Math.max(0, length)).join('');
}

/**
 * The reply as the model writes it when its output reaches `max_tokens`: generation stops there, mid-sentence or
 * mid-block, and the message ends with stop_reason `max_tokens` (the API never writes past it: "The response
 * reached your max_tokens limit. Raise max_tokens or continue the response",
 * https://platform.claude.com/docs/build-with-claude/handling-stop-reasons). A text or thinking block is cut at
 * the limit; a tool call reached but not finished is the incomplete tool_use block the guide describes, its input
 * not yet written (`{}`), and nothing after it is written (a server tool not called is not run). Undefined when
 * the whole reply fits.
 */
function cutAtMaxTokens(content: ContentScript[], body: MessagesRequestBody): ContentScript[] | undefined {
  const limit = body.max_tokens;
  if (!Number.isFinite(limit) || limit <= 0 || modelTokens(body.model, outputTokens(content)) <= limit) return undefined;
  const kept: ContentScript[] = [];
  let left = limit;
  for (const block of content) {
    if (block.type === 'web_search_tool_result') {
      kept.push(block);
      continue;
    }
    const cost = modelTokens(body.model, outputTokens([block]));
    if (cost <= left) {
      kept.push(block);
      left -= cost;
      continue;
    }
    if (block.type === 'text') kept.push({ ...block, text: cutText(body.model, block.text, left), citations: undefined });
    else if (block.type === 'thinking') {
      const full = cutText(body.model, block.fullText ?? block.thinking, left);
      kept.push({ ...block, thinking: block.thinking === '' ? '' : full, fullText: full });
    } else if (block.type === 'tool_use') kept.push({ ...block, input: {} });
    break;
  }
  return kept;
}

function defaultStopReason(content: ContentScript[]): StopReason {
  return content.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end_turn';
}

/** The parts of a reply that do not depend on streaming, resolved once (ids, usage, stop reason). */
export interface ResolvedReply {
  id: string;
  model: string;
  content: ContentScript[];
  stopReason: StopReason;
  stopSequence: string | null;
  usage: {
    input_tokens: number;
    output_tokens: number;
    cache_creation_input_tokens: number;
    cache_read_input_tokens: number;
    ephemeral_5m_input_tokens: number;
    ephemeral_1h_input_tokens: number;
    server_tool_use: { web_search_requests: number; web_fetch_requests: number } | null;
  };
}

/**
 * Fills in what the script left out and checks that it is a reply the API could have sent. `billed` is the
 * request's input as the prompt cache billed it (prompt-cache.ts); a script's usage overrides it.
 */
export function resolveReply(reply: AssistantReply, body: MessagesRequestBody, billed?: BilledInput): ResolvedReply {
  const written = asTheModelWritesIt(
    reply.content.map((block) => (block.type === 'tool_use' && !block.id ? { ...block, id: apiId('toolu') } : block)),
    body,
  );
  // A script that states its output tokens has said what the model wrote; any other reply stops at max_tokens.
  const cut = reply.usage?.outputTokens === undefined ? cutAtMaxTokens(written, body) : undefined;
  const content = signedThinking(cut ?? written, body);
  const serverToolIds = new Set<string>();
  for (const block of content) {
    if (block.type === 'server_tool_use') serverToolIds.add(block.id);
    if (block.type === 'web_search_tool_result' && !serverToolIds.has(block.toolUseId)) {
      throw new Error(
        `the scripted web_search_tool_result answers ${block.toolUseId}, but no server_tool_use block with that id comes before it (use webSearch() to build the pair)`,
      );
    }
  }
  // web_search is the only server tool modelled, so every server_tool_use block is a search.
  const searches = content.filter((block) => block.type === 'server_tool_use').length;
  return {
    id: reply.id ?? apiId('msg'),
    model: reply.model ?? body.model,
    content,
    stopReason: cut ? 'max_tokens' : (reply.stopReason ?? defaultStopReason(content)),
    stopSequence: reply.stopSequence ?? null,
    usage: {
      input_tokens: reply.usage?.inputTokens ?? billed?.input_tokens ?? estimateInputTokens(body),
      // A reply cut at the limit wrote exactly max_tokens.
      output_tokens: reply.usage?.outputTokens ?? (cut ? body.max_tokens : modelTokens(body.model, outputTokens(content))),
      cache_creation_input_tokens: reply.usage?.cacheCreationInputTokens ?? billed?.cache_creation_input_tokens ?? 0,
      cache_read_input_tokens: reply.usage?.cacheReadInputTokens ?? billed?.cache_read_input_tokens ?? 0,
      ephemeral_5m_input_tokens: reply.usage?.cacheCreationInputTokens ?? billed?.ephemeral_5m_input_tokens ?? 0,
      ephemeral_1h_input_tokens: reply.usage?.cacheCreationInputTokens === undefined ? (billed?.ephemeral_1h_input_tokens ?? 0) : 0,
      server_tool_use: searches > 0 ? { web_search_requests: searches, web_fetch_requests: 0 } : null,
    },
  };
}

/**
 * The reply as the model's API returns it: on models that return "text between tool calls ... in thinking blocks"
 * (Sonnet 5.5, Opus 5.5: whats-new pages), the text blocks written before a tool call become thinking blocks —
 * with their text under between_tools ("progress updates ... still come back as thinking blocks with their
 * summary text") and with display "summarized", empty at the default display ("omitted").
 */
function asTheModelWritesIt(content: ContentScript[], body: MessagesRequestBody): ContentScript[] {
  const rules = apiModel(body.model);
  const lastToolUse = content.findLastIndex((block) => block.type === 'tool_use');
  if (!rules?.betweenToolTextAsThinking || lastToolUse < 0) return content;
  const thinking = effectiveThinking(body, rules);
  const display =
    typeof body.thinking === 'object' && body.thinking !== null ? (body.thinking as { display?: unknown }).display : undefined;
  const shown = thinking === 'between_tools' || display === 'summarized';
  return content.map((block, index) =>
    block.type === 'text' && index < lastToolUse && block.citations === undefined
      ? { type: 'thinking', thinking: shown ? block.text : '', fullText: block.text }
      : block,
  );
}

/** Every thinking block with the signature that binds it to the model and the conversation before it. */
function signedThinking(content: ContentScript[], body: MessagesRequestBody): ContentScript[] {
  return content.map((block, index) => {
    if (block.type !== 'thinking' || block.signature !== undefined) return block;
    const preceding = content.slice(0, index).map(wireBlock);
    return { ...block, signature: signThinking(body.model, prefixHash(body, body.messages.length, preceding), block.thinking) };
  });
}

function stopDetails(stopReason: StopReason): Record<string, unknown> | null {
  return stopReason === 'refusal' ? { type: 'refusal', category: null, explanation: null } : null;
}

function wireBlock(block: ContentScript): Record<string, unknown> {
  switch (block.type) {
    case 'thinking':
      return { type: 'thinking', thinking: block.thinking, signature: block.signature ?? '' };
    case 'text':
      return {
        type: 'text',
        text: block.text,
        citations: block.citations
          ? block.citations.map((citation) => ({
              type: 'web_search_result_location',
              url: citation.url,
              title: citation.title,
              cited_text: citation.citedText,
              encrypted_index: citation.encryptedIndex ?? opaque(`index:${citation.url}`),
            }))
          : null,
      };
    case 'tool_use':
      return { type: 'tool_use', id: block.id, name: block.name, input: block.input ?? {}, caller: DIRECT_CALLER };
    case 'server_tool_use':
      return { type: 'server_tool_use', id: block.id, name: block.name, input: block.input, caller: DIRECT_CALLER };
    case 'web_search_tool_result':
      return {
        type: 'web_search_tool_result',
        tool_use_id: block.toolUseId,
        content: Array.isArray(block.content)
          ? block.content.map((result) => ({
              type: 'web_search_result',
              url: result.url,
              title: result.title,
              page_age: result.pageAge ?? null,
              encrypted_content: result.encryptedContent ?? opaque(`content:${result.url}`),
            }))
          : { type: 'web_search_tool_result_error', error_code: block.content.errorCode },
        caller: DIRECT_CALLER,
      };
  }
}

function wireUsage(usage: ResolvedReply['usage'], outputTokens: number): Record<string, unknown> {
  return {
    input_tokens: usage.input_tokens,
    cache_creation_input_tokens: usage.cache_creation_input_tokens,
    cache_read_input_tokens: usage.cache_read_input_tokens,
    cache_creation: {
      ephemeral_5m_input_tokens: usage.ephemeral_5m_input_tokens,
      ephemeral_1h_input_tokens: usage.ephemeral_1h_input_tokens,
    },
    output_tokens: outputTokens,
    server_tool_use: usage.server_tool_use,
    service_tier: 'standard',
  };
}

/** The body of a non-streamed 200. */
export function renderMessage(reply: ResolvedReply): Record<string, unknown> {
  return {
    id: reply.id,
    type: 'message',
    role: 'assistant',
    model: reply.model,
    content: reply.content.map(wireBlock),
    stop_reason: reply.stopReason,
    stop_sequence: reply.stopSequence,
    stop_details: stopDetails(reply.stopReason),
    container: null,
    usage: wireUsage(reply.usage, reply.usage.output_tokens),
  };
}

/** Splits by code points so a delta never ends in half a surrogate pair. */
function chunk(value: string, size: number): string[] {
  const points = Array.from(value);
  const chunks: string[] = [];
  for (let start = 0; start < points.length; start += size) chunks.push(points.slice(start, start + size).join(''));
  return chunks;
}

function blockEvents(block: ContentScript, index: number, options: RenderOptions): SseEvent[] {
  const events: SseEvent[] = [];
  const delta = (value: Record<string, unknown>): SseEvent => ({
    event: 'content_block_delta',
    data: { type: 'content_block_delta', index, delta: value },
  });
  const wire = wireBlock(block);
  switch (block.type) {
    case 'text': {
      events.push({
        event: 'content_block_start',
        data: { type: 'content_block_start', index, content_block: { type: 'text', text: '', citations: null } },
      });
      // The API sends a cited passage's citation ahead of its text.
      for (const citation of (wire.citations as Array<Record<string, unknown>> | null) ?? []) {
        events.push(delta({ type: 'citations_delta', citation }));
      }
      for (const piece of chunk(block.text, options.textChunkChars)) events.push(delta({ type: 'text_delta', text: piece }));
      break;
    }
    case 'tool_use':
    case 'server_tool_use': {
      events.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: { ...wire, input: {} } } });
      for (const piece of chunk(JSON.stringify(wire.input), options.jsonChunkChars)) {
        events.push(delta({ type: 'input_json_delta', partial_json: piece }));
      }
      break;
    }
    case 'thinking': {
      events.push({
        event: 'content_block_start',
        data: { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } },
      });
      for (const piece of chunk(block.thinking, options.textChunkChars)) events.push(delta({ type: 'thinking_delta', thinking: piece }));
      events.push(delta({ type: 'signature_delta', signature: block.signature ?? '' }));
      break;
    }
    case 'web_search_tool_result':
      // Results arrive whole in the start event; there are no deltas for them.
      events.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: wire } });
      break;
  }
  events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
  return events;
}

/** The events of a streamed 200, pings included. */
export function renderEvents(reply: ResolvedReply, options: RenderOptions): SseEvent[] {
  const body: SseEvent[] = [
    {
      event: 'message_start',
      data: {
        type: 'message_start',
        message: {
          ...renderMessage(reply),
          content: [],
          stop_reason: null,
          stop_sequence: null,
          stop_details: null,
          usage: wireUsage(reply.usage, 1),
        },
      },
    },
  ];
  reply.content.forEach((block, index) => body.push(...blockEvents(block, index, options)));
  body.push(
    {
      event: 'message_delta',
      data: {
        type: 'message_delta',
        delta: { stop_reason: reply.stopReason, stop_sequence: reply.stopSequence, stop_details: stopDetails(reply.stopReason) },
        usage: {
          input_tokens: reply.usage.input_tokens,
          cache_creation_input_tokens: reply.usage.cache_creation_input_tokens,
          cache_read_input_tokens: reply.usage.cache_read_input_tokens,
          output_tokens: reply.usage.output_tokens,
          server_tool_use: reply.usage.server_tool_use,
        },
      },
    },
    { event: 'message_stop', data: { type: 'message_stop' } },
  );

  const ping: SseEvent = { event: 'ping', data: { type: 'ping' } };
  const events: SseEvent[] = [];
  body.forEach((event, position) => {
    events.push(event);
    const isLast = position === body.length - 1;
    if (position === 0 || (!isLast && options.pingEveryEvents > 0 && position % options.pingEveryEvents === 0)) events.push(ping);
  });
  return events;
}

export function serializeEvent(event: SseEvent): string {
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/** The body of an error answer, as the API words it. */
export function errorBody(
  type: ApiErrorType,
  message: string,
  requestId: string,
  details?: Record<string, unknown>,
): Record<string, unknown> {
  return { type: 'error', error: details ? { type, message, details } : { type, message }, request_id: requestId };
}
