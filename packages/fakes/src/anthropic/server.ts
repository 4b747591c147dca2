// A fake Anthropic Messages API on a real HTTP server. The real @anthropic-ai/sdk talks to it through `baseURL`:
//
//   const fake = await startFakeAnthropic();
//   const client = new Anthropic({ apiKey: 'test', baseURL: fake.url, maxRetries: 0 });
//   fake.reply(jsonReply({ answer: 42 }));
//   ... exercise the code under test ...
//   expect(fake.requests[0]?.body?.output_config).toEqual(...);
//   await fake.close();
//
// Replies come from the queue (in order), then from the handler; a request neither answers fails with a 500 that
// names it, so a test never passes on a reply it did not script.
import { type ServerResponse } from 'node:http';
import {
  API_ERROR_STATUS,
  apiId,
  canonicalModel,
  checkHeaders,
  createPacer,
  createRateLimiter,
  eventSchedule,
  checkMessagesBody,
  errorBody,
  estimateInputTokens,
  lastUserText,
  parseBody,
  PromptCache,
  renderEvents,
  renderMessage,
  requestApiKey,
  resolveReply,
  serializeEvent,
  type ApiErrorType,
  type BilledInput,
  type MessagesRequestBody,
  type PaceOptions,
  type RateLimitOptions,
  type Rejection,
  type RenderOptions,
  type ResolvedReply,
} from '@fin/offline';
import { type Exchange, type ListenOptions, headerRecord, pause, readBody, sendJson, startServer, waitForAbort } from '../http';
import { defaultErrorMessage } from './replies';
import {
  type ErrorReply,
  type Faults,
  type MessageReply,
  type RecordedRequest,
  type Reply,
  type ReplyHandler,
  type ScriptedReply,
} from './types';

export interface FakeAnthropicOptions extends ListenOptions {
  /**
   * When set, requests with another key get the API's 401. Any non-empty key is accepted otherwise, sent as
   * `x-api-key` or as `authorization: Bearer …` (which is how SDK v1 sends `apiKey`).
   */
  apiKey?: string;
  /**
   * Reject bodies the real API would reject (missing model/max_tokens/messages, tool_use without its tool_result,
   * a structured-output schema with an open object) with its 400. Default true.
   */
  validateRequests?: boolean;
  /** Characters per text_delta (default 12): long enough to be cheap, short enough that every answer streams in pieces. */
  textChunkChars?: number;
  /** Characters per input_json_delta (default 24). */
  jsonChunkChars?: number;
  /** A ping after every this many events, besides the one after message_start (default 5; 0 for none). */
  pingEveryEvents?: number;
  /** Answers requests when the queue is empty. */
  handler?: ReplyHandler;
  /**
   * Keep every request in `requests` (default true). A long-running fake (a benchmark, a long end-to-end run)
   * turns this off so the log does not grow without bound; request indexes still count up.
   */
  recordRequests?: boolean;
  /**
   * The prompt cache's clock in ms (default Date.now): a test moves it to see a 5-minute or 1-hour entry expire.
   * Replies are billed as the API bills them (cache writes and reads per API key, @fin/offline prompt-cache.ts)
   * unless their script gives usage.
   */
  now?: () => number;
  /**
   * Answer at each model's pace (off by default: at once): the first byte after the model's time to first token,
   * then the output at its tokens per second, a non-streamed answer all at once when the last token is written.
   * `true` takes the default pace of every model (@fin/offline pace.ts, with its sources); an object overrides
   * it per model id.
   */
  pace?: boolean | PaceOptions;
  /**
   * The organisation's rate limits per model (off by default: unlimited): requests, input and output tokens per
   * minute as continuously refilled buckets, the API's 429 with retry-after, and the anthropic-ratelimit-*
   * headers on every answer (@fin/offline rate-limits.ts, with what the documentation says). Buckets run on
   * `now` unless the limits give a clock of their own.
   */
  rateLimits?: RateLimitOptions;
  /**
   * The wall-clock length of one second of model time, for both the pace and the limits unless they give their
   * own (default 1): 0.1 runs ten times faster than the API, in the same proportions.
   */
  timeScale?: number;
}

export interface FakeAnthropic {
  /** The base URL to give the SDK (`baseURL`), e.g. http://127.0.0.1:41234. */
  readonly url: string;
  /** Every request received since start or the last reset(), in arrival order (a live array). */
  readonly requests: readonly RecordedRequest[];
  /** Scripted replies not consumed yet. */
  readonly pendingReplies: number;
  /** Requests refused with the rate limits' 429 since start or the last reset() (counted even when not recorded). */
  readonly rateLimited: number;
  /** Appends replies to the queue; each answers one `POST /v1/messages`, in order. */
  reply(...replies: ScriptedReply[]): void;
  /** Sets (or with undefined removes) the handler that answers once the queue is empty. */
  setHandler(handler: ReplyHandler | undefined): void;
  /**
   * Empties the queue, the request log and the prompt cache, refills the rate limits' buckets, and puts back the
   * handler given at start (if any).
   */
  reset(): void;
  /** Ends every exchange in flight (hanging ones too), closes every connection and stops listening. */
  close(): Promise<void>;
}

const NO_RETRY = { 'x-should-retry': 'false' };

/** A request the fake answers, with what its answer carries whatever the reply is. */
interface Answer {
  exchange: Exchange;
  body: MessagesRequestBody;
  requestId: string;
  /** When the request arrived (ms): the pace counts from here. */
  startedAt: number;
  /** The anthropic-ratelimit-* headers, on every answer when limits are configured. */
  limitHeaders: Record<string, string>;
  /** Corrects the limits' output estimate once the answer ended. */
  settle: (outputTokens: number) => void;
}

function isErrorReply(reply: Reply): reply is ErrorReply {
  return 'error' in reply;
}

function sendError(
  res: ServerResponse,
  requestId: string,
  error: { type: ApiErrorType; message: string; status?: number; details?: Record<string, unknown> },
  headers: Record<string, string> = {},
): void {
  sendJson(res, error.status ?? API_ERROR_STATUS[error.type], errorBody(error.type, error.message, requestId, error.details), {
    ...headers,
    'request-id': requestId,
  });
}

function afterEvents(fault: boolean | { afterEvents: number } | undefined, whenTrue: number): number | undefined {
  if (fault === undefined || fault === false) return undefined;
  return fault === true ? whenTrue : fault.afterEvents;
}

function describeUnscripted(request: RecordedRequest): string {
  const body = request.body;
  const said = body ? lastUserText(body).replace(/\s+/g, ' ').slice(0, 120) : '';
  return (
    `fake-anthropic: no reply scripted for request #${request.index} ` +
    `(POST ${request.path}, model=${body?.model ?? '?'}, stream=${request.stream}, last user text: ${JSON.stringify(said)}). ` +
    'Queue one with fake.reply(...) or answer dynamically with fake.setHandler(...).'
  );
}

export async function startFakeAnthropic(options: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const render: RenderOptions = {
    textChunkChars: options.textChunkChars ?? 12,
    jsonChunkChars: options.jsonChunkChars ?? 24,
    pingEveryEvents: options.pingEveryEvents ?? 5,
  };
  const validation = { apiKey: options.apiKey, validateBody: options.validateRequests ?? true };
  const queue: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];
  const record = options.recordRequests ?? true;
  let received = 0;
  let handler = options.handler;
  const promptCache = new PromptCache({ now: options.now });
  const pacer =
    options.pace === undefined || options.pace === false
      ? undefined
      : createPacer({ timeScale: options.timeScale, ...(options.pace === true ? {} : options.pace) });
  const limiter = options.rateLimits
    ? createRateLimiter({ now: options.now, timeScale: options.timeScale, ...options.rateLimits }, canonicalModel)
    : undefined;
  let rateLimited = 0;

  /** Waits until `dueMs` after the request arrived (no wait without a pace); false when the exchange ended first. */
  const until = (answer: Answer, dueMs: number) => pause(answer.startedAt + dueMs - Date.now(), answer.exchange.signal);

  async function writeStream(answer: Answer, reply: MessageReply, resolved: ResolvedReply) {
    const { exchange, body, requestId } = answer;
    const { res, signal } = exchange;
    const faults: Faults = reply.faults ?? {};
    const events = renderEvents(resolved, render);
    const schedule = pacer ? eventSchedule(pacer, body.model, events, resolved.usage.output_tokens) : undefined;
    // The status line, headers and message_start come with the first token.
    if (schedule && !(await until(answer, schedule[0] ?? 0))) return;
    res.writeHead(200, {
      ...answer.limitHeaders,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'request-id': requestId,
    });
    res.flushHeaders();

    const contentEvents = events.filter((event) => event.event !== 'ping').length;
    const malformedAt = afterEvents(faults.malformedJson, 2);
    const hangAt = typeof faults.hang === 'object' ? faults.hang.afterEvents : undefined;
    const at = (threshold: number | undefined, sent: number) =>
      threshold !== undefined && (threshold === sent || (sent === contentEvents && threshold > sent));

    // Faults fire at a checkpoint: before the next non-ping event, or at the end of the stream.
    const faultAt = async (sent: number): Promise<boolean> => {
      if (faults.failMidStream && at(faults.failMidStream.afterEvents, sent)) {
        const { type, message } = faults.failMidStream.error;
        res.end(`event: error\ndata: ${JSON.stringify(errorBody(type, message ?? defaultErrorMessage(type), requestId))}\n\n`);
        return true;
      }
      if (at(malformedAt, sent)) {
        res.end(
          `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"cut of\n\n`,
        );
        return true;
      }
      if (at(faults.dropConnectionAfterEvents, sent)) {
        res.socket?.destroy();
        return true;
      }
      if (at(hangAt, sent)) {
        await waitForAbort(signal);
        return true;
      }
      return false;
    };

    let sent = 0;
    for (const [position, event] of events.entries()) {
      if (signal.aborted) return;
      if (event.event !== 'ping') {
        if (await faultAt(sent)) return;
        if (sent > 0 && faults.delayBetweenEventsMs && !(await pause(faults.delayBetweenEventsMs, signal))) return;
        if (schedule && !(await until(answer, schedule[position] ?? 0))) return;
        sent++;
      }
      if (!res.write(serializeEvent(event))) await new Promise<void>((resolve) => res.once('drain', resolve));
    }
    if (await faultAt(sent)) return;
    res.end();
  }

  async function answer(given: Answer, request: RecordedRequest, reply: Reply) {
    let outputTokens = 0;
    try {
      outputTokens = await respond(given, request, reply);
    } finally {
      // The output estimated from max_tokens is corrected to what was written (nothing, for an error answer).
      given.settle(outputTokens);
    }
  }

  /** Sends the answer; resolves with the output tokens it carried. */
  async function respond(given: Answer, request: RecordedRequest, reply: Reply): Promise<number> {
    const { exchange, body, requestId } = given;
    const { res, signal } = exchange;
    const faults: Faults = reply.faults ?? {};
    if (faults.latencyMs && !(await pause(faults.latencyMs, signal))) return 0;
    if (faults.hang === true || (!request.stream && faults.hang)) {
      await waitForAbort(signal);
      return 0;
    }
    if (faults.dropConnectionAfterEvents !== undefined && (!request.stream || isErrorReply(reply))) {
      res.socket?.destroy();
      return 0;
    }

    if (isErrorReply(reply)) {
      const { type, message, status, retryAfterSeconds, shouldRetry, details } = reply.error;
      const headers: Record<string, string> = { ...given.limitHeaders };
      if (retryAfterSeconds !== undefined) headers['retry-after'] = String(retryAfterSeconds);
      if (shouldRetry !== undefined) headers['x-should-retry'] = String(shouldRetry);
      sendError(res, requestId, { type, message: message ?? defaultErrorMessage(type), status, details }, headers);
      return 0;
    }

    if (!request.stream && (faults.failMidStream || faults.delayBetweenEventsMs)) {
      throw new Error(
        `fake-anthropic: request #${request.index} is not streamed, but its scripted reply has a streaming fault (failMidStream/delayBetweenEventsMs)`,
      );
    }
    // Billed (and the cache written) only for an answer the API would have given.
    const billed: BilledInput = promptCache.bill(request.apiKey ?? '', body);
    const resolved = resolveReply(reply, body, billed);
    const outputTokens = resolved.usage.output_tokens;
    if (request.stream) {
      await writeStream(given, reply, resolved);
      return outputTokens;
    }

    // A whole answer comes when its last token is written.
    if (pacer && !(await until(given, pacer.firstTokenMs(body.model) + pacer.outputMs(body.model, outputTokens)))) return outputTokens;
    const text = JSON.stringify(renderMessage(resolved));
    const headers = { ...given.limitHeaders, 'content-type': 'application/json', 'request-id': requestId };
    if (faults.malformedJson) {
      // A body cut off mid-object: the headers promise JSON, the bytes are not.
      const cut = text.slice(0, Math.max(1, Math.floor(text.length / 2)));
      res.writeHead(200, { ...headers, 'content-length': String(Buffer.byteLength(cut)) });
      res.end(cut);
      return outputTokens;
    }
    res.writeHead(200, { ...headers, 'content-length': String(Buffer.byteLength(text)) });
    res.end(text);
    return outputTokens;
  }

  async function handle(exchange: Exchange): Promise<void> {
    const startedAt = Date.now();
    const { req, res } = exchange;
    const requestId = apiId('req');
    const rawBody = await readBody(req);
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    const headers = headerRecord(req);
    const request: RecordedRequest = {
      index: received++,
      method: req.method ?? 'GET',
      path,
      headers,
      apiKey: requestApiKey(headers),
      body: undefined,
      rawBody,
      stream: false,
      answeredBy: 'validation',
      cancelled: false,
    };
    if (record) requests.push(request);
    // 'close' before the response finished: the client went away mid-answer (an aborted SDK call).
    res.once('close', () => {
      if (!res.writableFinished) request.cancelled = true;
    });
    const reject = (rejection: Rejection) => sendError(res, requestId, rejection);

    const isMessages = path === '/v1/messages' || path === '/v1/messages/count_tokens';
    if (req.method !== 'POST' || !isMessages) {
      request.answeredBy = 'builtin';
      reject({ type: 'not_found_error', message: `Not found: ${req.method ?? ''} ${path}` });
      return;
    }
    const headerProblem = checkHeaders(headers, validation);
    if (headerProblem) {
      reject(headerProblem);
      return;
    }
    const parsed = parseBody(rawBody);
    if ('type' in parsed) {
      reject(parsed);
      return;
    }
    if (typeof parsed.body === 'object' && parsed.body !== null) {
      request.body = parsed.body as MessagesRequestBody;
      request.stream = (parsed.body as { stream?: unknown }).stream === true;
    }
    if (validation.validateBody) {
      const checked = checkMessagesBody(parsed.body, { countTokens: path === '/v1/messages/count_tokens' });
      if ('type' in checked) {
        reject(checked);
        return;
      }
    }
    const body = request.body;
    if (!body) {
      reject({ type: 'invalid_request_error', message: 'Input should be a valid dictionary' });
      return;
    }

    if (path === '/v1/messages/count_tokens') {
      request.answeredBy = 'builtin';
      sendJson(res, 200, { input_tokens: estimateInputTokens(body) }, { 'request-id': requestId });
      return;
    }

    // The organisation's limits, before any reply is taken: a refused request consumes no scripted reply.
    let limitHeaders: Record<string, string> = {};
    let settle: (outputTokens: number) => void = () => undefined;
    if (limiter) {
      const quoted = promptCache.quote(request.apiKey ?? '', body);
      const admission = limiter.admit(body.model, {
        inputTokens: quoted.input_tokens + quoted.cache_creation_input_tokens,
        maxTokens: body.max_tokens,
      });
      if (!admission.admitted) {
        request.answeredBy = 'rate_limited';
        rateLimited++;
        sendError(res, requestId, admission.rejection, admission.headers);
        return;
      }
      limitHeaders = admission.headers;
      settle = admission.settle;
    }
    const given: Answer = { exchange, body, requestId, startedAt, limitHeaders, settle };

    const typed = request as RecordedRequest & { body: MessagesRequestBody };
    let scripted = queue.shift();
    if (scripted !== undefined) request.answeredBy = 'queue';
    else if (handler) {
      request.answeredBy = 'handler';
      scripted = handler;
    } else {
      request.answeredBy = 'unscripted';
      settle(0);
      sendError(res, requestId, { type: 'api_error', message: describeUnscripted(request) }, { ...limitHeaders, ...NO_RETRY });
      return;
    }
    let reply: Reply;
    try {
      reply = typeof scripted === 'function' ? await scripted(typed, { index: request.index }) : scripted;
    } catch (error) {
      settle(0);
      throw error;
    }
    await answer(given, request, reply);
  }

  const server = await startServer(
    handle,
    ({ res }, error) => {
      // A script or handler bug: answer loudly (and unretryably) instead of leaving the client waiting.
      const message = error instanceof Error ? error.message : String(error);
      if (!res.headersSent) sendError(res, apiId('req'), { type: 'api_error', message: `fake-anthropic: ${message}` }, NO_RETRY);
      else res.destroy();
    },
    options,
  );

  return {
    url: server.url,
    requests,
    get pendingReplies() {
      return queue.length;
    },
    get rateLimited() {
      return rateLimited;
    },
    reply(...replies) {
      queue.push(...replies);
    },
    setHandler(next) {
      handler = next;
    },
    reset() {
      queue.length = 0;
      requests.length = 0;
      received = 0;
      promptCache.clear();
      limiter?.reset();
      rateLimited = 0;
      handler = options.handler;
    },
    close: () => server.close(),
  };
}
