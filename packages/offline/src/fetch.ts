// Offline mode's Messages API, answered in-process: a `fetch` given to the Anthropic SDK client in place of the
// network. The SDK sends its real requests (headers, JSON body, `stream: true`) and reads the real wire format
// back (the Message JSON, or server-sent events), so an offline run goes through the same SDK calls, tool loop,
// structured output and grounding as a run against the API. Requests are checked as the API checks them, so a
// request the API would refuse fails offline too.
import { apiId } from './ids';
import { PromptCache } from './prompt-cache';
import { checkHeaders, checkMessagesBody, parseBody, requestApiKey, type Rejection } from './validation';
import {
  errorBody,
  estimateInputTokens,
  renderEvents,
  renderMessage,
  resolveReply,
  serializeEvent,
  type RenderOptions,
  type SseEvent,
} from './wire';
import { API_ERROR_STATUS, type StandInModel } from './wire-types';

/** Text in pieces of 12 characters, so that every answer streams in several deltas as the API's do. */
const RENDER: RenderOptions = { textChunkChars: 12, jsonChunkChars: 24, pingEveryEvents: 5 };

/** A broken stand-in is a bug, not an outage: the SDK must not retry it. */
const NO_RETRY = { 'x-should-retry': 'false' };

function errorResponse(requestId: string, rejection: Rejection, headers: Record<string, string> = {}): Response {
  return Response.json(errorBody(rejection.type, rejection.message, requestId), {
    status: API_ERROR_STATUS[rejection.type],
    headers: { ...headers, 'request-id': requestId },
  });
}

/**
 * The events of a streamed answer as a body the SDK reads like a socket's: one event per read, each after a turn
 * of the event loop, so a long reply does not hold the process while it streams, and a caller that stops reading
 * or aborts (the SDK's timeout, a chat client that went away) ends it mid-reply. An abort errors the body with
 * the signal's reason, as fetch's body does.
 */
function eventBody(events: readonly SseEvent[], signal: AbortSignal | undefined): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let next = 0;
  let finished = false;
  let onAbort: (() => void) | undefined;
  const finish = () => {
    finished = true;
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (!signal) return;
      onAbort = () => {
        if (finished) return;
        finish();
        controller.error(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
    },
    async pull(controller) {
      await new Promise((resolve) => setImmediate(resolve));
      if (finished) return;
      const event = events[next++];
      if (event === undefined) {
        finish();
        controller.close();
        return;
      }
      controller.enqueue(encoder.encode(serializeEvent(event)));
    },
    cancel: finish,
  });
}

/**
 * A `fetch` that answers `POST /v1/messages` (non-streamed and streamed) and `POST /v1/messages/count_tokens`
 * with `model`'s turns, in the API's wire format; anything else gets the API's 404. Nothing listens on a port.
 */
export function messagesApiFetch(model: StandInModel): typeof globalThis.fetch {
  let answered = 0;
  // Offline answers are billed as the API would bill them, prompt caching included, so usage means the same.
  const promptCache = new PromptCache();
  return async (input, init) => {
    const request = new Request(input, init);
    const signal = init?.signal ?? undefined;
    signal?.throwIfAborted();
    const requestId = apiId('req');
    const path = new URL(request.url).pathname;
    const countTokens = path === '/v1/messages/count_tokens';
    if (request.method !== 'POST' || (path !== '/v1/messages' && !countTokens)) {
      return errorResponse(requestId, { type: 'not_found_error', message: `Not found: ${request.method} ${path}` });
    }
    const headers = Object.fromEntries(request.headers);
    const headerProblem = checkHeaders(headers, { validateBody: true });
    if (headerProblem) return errorResponse(requestId, headerProblem);
    const parsed = parseBody(await request.text());
    if ('type' in parsed) return errorResponse(requestId, parsed);
    const checked = checkMessagesBody(parsed.body, { countTokens });
    if ('type' in checked) return errorResponse(requestId, checked);
    const { body } = checked;
    if (countTokens) return Response.json({ input_tokens: estimateInputTokens(body) }, { headers: { 'request-id': requestId } });

    let reply;
    try {
      reply = resolveReply(await model({ body }, { index: answered++ }), body, promptCache.bill(requestApiKey(headers) ?? '', body));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return errorResponse(requestId, { type: 'api_error', message: `offline model: ${message}` }, NO_RETRY);
    }
    signal?.throwIfAborted();
    if (body.stream !== true) return Response.json(renderMessage(reply), { headers: { 'request-id': requestId } });
    return new Response(eventBody(renderEvents(reply, RENDER), signal), {
      headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': requestId },
    });
  };
}
