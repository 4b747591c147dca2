// Offline mode's Messages API, answered in-process: a `fetch` given to the Anthropic SDK client in place of the
// network. The SDK sends its real requests (headers, JSON body, `stream: true`) and reads the real wire format
// back (the Message JSON, or server-sent events), so an offline run goes through the same SDK calls, tool loop,
// structured output and grounding as a run against the API. Requests are checked as the API checks them, so a
// request the API would refuse fails offline too.
import { setTimeout as sleep } from 'node:timers/promises';
import { apiId } from './ids';
import { canonicalModel, createPacer, eventSchedule, type PaceOptions, type Pacer } from './pace';
import { PromptCache } from './prompt-cache';
import { createRateLimiter, type RateLimitOptions } from './rate-limits';
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

/** How the in-process API keeps the real one's pace and limits; both off by default (answers at once, unlimited). */
export interface MessagesApiOptions {
  /** Answer at each model's pace (pace.ts): time to the first token, then output tokens per second. */
  pace?: PaceOptions;
  /** The organisation's rate limits per model (rate-limits.ts), with the API's 429 and anthropic-ratelimit-* headers. */
  limits?: RateLimitOptions;
}

/** Waits `ms`; false when `signal` aborted first. */
async function waited(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (ms <= 0) return signal?.aborted !== true;
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

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
function eventBody(
  events: readonly SseEvent[],
  signal: AbortSignal | undefined,
  paced?: { startedAt: number; dueMs: readonly number[] },
  onEnd?: () => void,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let next = 0;
  let finished = false;
  let onAbort: (() => void) | undefined;
  const finish = () => {
    if (!finished) onEnd?.();
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
      const due = paced?.dueMs[next];
      const waitMs = paced && due !== undefined ? paced.startedAt + due - Date.now() : 0;
      if (waitMs > 0) await waited(waitMs, signal);
      else await new Promise((resolve) => setImmediate(resolve));
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
export function messagesApiFetch(model: StandInModel, options: MessagesApiOptions = {}): typeof globalThis.fetch {
  let answered = 0;
  // Offline answers are billed as the API would bill them, prompt caching included, so usage means the same.
  const promptCache = new PromptCache();
  const pacer: Pacer | undefined = options.pace ? createPacer(options.pace) : undefined;
  const limiter = options.limits ? createRateLimiter(options.limits, canonicalModel) : undefined;
  return async (input, init) => {
    const startedAt = Date.now();
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

    const apiKey = requestApiKey(headers) ?? '';
    let limitHeaders: Record<string, string> = {};
    let settle: (outputTokens: number) => void = () => undefined;
    if (limiter) {
      const quoted = promptCache.quote(apiKey, body);
      const admission = limiter.admit(body.model, {
        inputTokens: quoted.input_tokens + quoted.cache_creation_input_tokens,
        maxTokens: body.max_tokens,
      });
      if (!admission.admitted) return errorResponse(requestId, admission.rejection, admission.headers);
      limitHeaders = admission.headers;
      settle = admission.settle;
    }

    let reply;
    try {
      reply = resolveReply(await model({ body }, { index: answered++ }), body, promptCache.bill(apiKey, body));
    } catch (error) {
      settle(0);
      const message = error instanceof Error ? error.message : String(error);
      return errorResponse(requestId, { type: 'api_error', message: `offline model: ${message}` }, { ...NO_RETRY, ...limitHeaders });
    }
    const outputTokens = reply.usage.output_tokens;
    signal?.throwIfAborted();
    if (body.stream !== true) {
      const answeredAt = startedAt + (pacer ? pacer.firstTokenMs(body.model) + pacer.outputMs(body.model, outputTokens) : 0);
      const complete = await waited(answeredAt - Date.now(), signal);
      settle(outputTokens);
      if (!complete) signal?.throwIfAborted();
      return Response.json(renderMessage(reply), { headers: { ...limitHeaders, 'request-id': requestId } });
    }
    const events = renderEvents(reply, RENDER);
    const dueMs = pacer ? eventSchedule(pacer, body.model, events, outputTokens) : undefined;
    // The headers and message_start come with the first token.
    if (dueMs && !(await waited(startedAt + (dueMs[0] ?? 0) - Date.now(), signal))) {
      settle(outputTokens);
      signal?.throwIfAborted();
    }
    const stream = eventBody(events, signal, dueMs ? { startedAt, dueMs } : undefined, () => settle(outputTokens));
    return new Response(stream, {
      headers: {
        ...limitHeaders,
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'request-id': requestId,
      },
    });
  };
}
