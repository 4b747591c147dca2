// Async iterables over the API's event streams. The request is sent when the stream object is made (so its
// headers — the analysis job's Location — are available before the first event); iterating reads the events,
// typed by name. An `error` event ends the stream by throwing its error body as the APIError subclass of its
// status_code. Leaving a `for await` early (break, return, a throw) closes the connection, and so does the
// AbortSignal given to the call. The chat stream re-attaches when its connection drops before `done`: it sends
// GET /api/chat/stream with Last-Event-ID (the id of the last event it read), which replays the events after it.
import { type HttpRequest, type Transport, isAborted, sleep } from './core';
import { APIConnectionError, APIError, FinancialIntelligenceError, JobFailedError, apiError } from './errors';
import { SseParser, readSse, type SseMessage } from './sse';
import type {
  AnalysisDoneEvent,
  AnalysisSynthesisChunkEvent,
  ChatDoneEvent,
  ChatNodeStartEvent,
  ChatTokenEvent,
  ChatToolEndEvent,
  ChatToolStartEvent,
  ErrorBody,
  JobErrorEvent,
  JobProgressEvent,
  JobResultEvent,
  JobStatusEvent,
  JobType,
} from './types';

/** The headers of a stream's answer. */
export interface StreamResponse {
  status: number;
  headers: Headers;
  requestId: string | undefined;
}

/** A typed event: its name, its id (`id:` field, when the stream sets one) and its parsed data. */
export interface StreamEvent<Name extends string, Data> {
  event: Name;
  id: string | undefined;
  data: Data;
}

export type ChatEvent =
  | StreamEvent<'node_start', ChatNodeStartEvent>
  | StreamEvent<'tool_start', ChatToolStartEvent>
  | StreamEvent<'tool_end', ChatToolEndEvent>
  | StreamEvent<'token', ChatTokenEvent>
  | StreamEvent<'done', ChatDoneEvent>;

export type JobEvent =
  StreamEvent<'status', JobStatusEvent> | StreamEvent<'progress', JobProgressEvent> | StreamEvent<'result', JobResultEvent>;

/** A JSON-RPC message of the MCP endpoint's answer stream. */
export type McpEvent = StreamEvent<'message', Record<string, unknown>>;

export type AnalysisEvent = StreamEvent<'synthesis_chunk', AnalysisSynthesisChunkEvent> | StreamEvent<'done', AnalysisDoneEvent>;

interface StreamSettings {
  /** The event a JSON answer (instead of a stream) stands for, for streams that may be answered so. */
  jsonEvent?: string;
  /** The error an `error` event stands for (default: its body as an APIError). */
  errorOf?: (data: ErrorBody, headers: Headers) => Error;
  /** Event names the stream yields; others (added to the API later) are skipped. */
  events: readonly string[];
  /** Event names after which the stream is over; none: the end of the body is the end of the stream. */
  final: readonly string[];
  /** The request that re-attaches after `lastEventId`, for streams that can. */
  reconnect?: (lastEventId: string) => HttpRequest;
  /** Re-attachments in a row without an event in between before the stream gives up. */
  maxReconnects: number;
}

/** Sends the request and resolves with the answer once its headers arrived (2xx; errors are thrown). */
function connect(transport: Transport, request: HttpRequest): Promise<Response> {
  return transport.send({ ...request, accept: 'sse' }, (response) => Promise.resolve(response)).then(({ response }) => response);
}

function streamResponse(response: Response): StreamResponse {
  return { status: response.status, headers: response.headers, requestId: response.headers.get('x-request-id') ?? undefined };
}

class EventStream<E extends StreamEvent<string, unknown>> implements AsyncIterable<E> {
  /** The id of the last event read: what a re-attachment sends as Last-Event-ID. */
  lastEventId: string | undefined;
  private readonly first: Promise<Response>;
  private iterated = false;

  constructor(
    private readonly transport: Transport,
    request: HttpRequest,
    private readonly settings: StreamSettings,
  ) {
    this.signal = request.signal;
    this.first = connect(transport, request);
    // Rejections surface where the stream is used (iteration, .response); never as an unhandled rejection.
    this.first.catch(() => undefined);
  }

  private readonly signal: AbortSignal | undefined;

  /** The answer's status and headers, once they arrived (rejects with the call's error). */
  get response(): Promise<StreamResponse> {
    return this.first.then(streamResponse);
  }

  /** Handles each event as it arrives; override to record state (conversation id). */
  protected seen(_event: E): void {
    // Nothing by default.
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<E> {
    if (this.iterated) throw new TypeError('An event stream can be iterated once.');
    this.iterated = true;
    let responsePromise = this.first;
    let reconnects = 0;
    for (;;) {
      let response: Response;
      try {
        response = await responsePromise;
      } catch (error) {
        if (!this.mayReconnect(error, reconnects)) throw error;
        reconnects++;
        await sleep(1000, this.signal);
        responsePromise = this.reattach();
        continue;
      }
      if (response.status === 202 || response.status === 204 || response.body === null) return;
      const contentType = response.headers.get('content-type') ?? '';
      if (!contentType.includes('text/event-stream')) {
        // A JSON answer where a stream was asked for: one event for a stream that allows it (MCP), else an error.
        const text = await response.text();
        if (this.settings.jsonEvent === undefined || !contentType.includes('json')) {
          throw new FinancialIntelligenceError(`Expected an event stream, got ${contentType || 'no content type'}.`);
        }
        yield { event: this.settings.jsonEvent, id: undefined, data: JSON.parse(text) as unknown } as E;
        return;
      }
      const parser = new SseParser();
      // The error of an `error` event: the end of the stream, never a reason to re-attach.
      let ended: Error | undefined;
      let retryMs = 1000;
      try {
        for await (const message of readSse(response.body, parser)) {
          if (message.id !== undefined) this.lastEventId = message.id;
          reconnects = 0;
          if (message.event === 'error') {
            const [status, body, headers] = errorOf(message, response.headers);
            ended = this.settings.errorOf?.(body, headers) ?? apiError(status, body, headers);
            throw ended;
          }
          if (!this.settings.events.includes(message.event)) continue;
          const event = { event: message.event, id: message.id, data: JSON.parse(message.data) as unknown } as E;
          this.seen(event);
          yield event;
          if (this.settings.final.includes(message.event)) return;
        }
      } catch (error) {
        if (error === ended || isAborted(this.signal) || error instanceof SyntaxError) throw error;
        if (!this.mayReconnect(error, reconnects)) throw error;
      }
      retryMs = parser.retryMs ?? retryMs;
      // A stream without a final event (MCP) ends with its body.
      if (this.settings.final.length === 0) return;
      // The body ended (or the connection broke) before the final event.
      if (!this.mayReconnect(undefined, reconnects)) throw new APIConnectionError('The event stream ended before its final event.');
      reconnects++;
      await sleep(retryMs, this.signal);
      responsePromise = this.reattach();
    }
  }

  private mayReconnect(error: unknown, reconnects: number): boolean {
    if (this.settings.reconnect === undefined || this.lastEventId === undefined) return false;
    if (isAborted(this.signal) || reconnects >= this.settings.maxReconnects) return false;
    return error === undefined || !(error instanceof APIError) || error.status >= 500;
  }

  private reattach(): Promise<Response> {
    const { reconnect } = this.settings;
    if (reconnect === undefined || this.lastEventId === undefined) throw new TypeError('this stream cannot re-attach');
    return connect(this.transport, reconnect(this.lastEventId));
  }
}

function errorOf(message: SseMessage, headers: Headers): [number, ErrorBody, Headers] {
  let body: ErrorBody;
  try {
    body = JSON.parse(message.data) as ErrorBody;
  } catch {
    body = { detail: message.data, status_code: 500, type: 'internal_error' };
  }
  return [body.status_code, body, headers];
}

/** The reply to a chat message, event by event: node_start, tool_start, tool_end, token, then done. */
export class ChatStream extends EventStream<ChatEvent> {
  /** The conversation: the request's conversation_id, or the new one from `done`. */
  conversationId: string | undefined;

  constructor(transport: Transport, request: HttpRequest, conversationId: string | undefined, maxReconnects: number) {
    super(transport, request, {
      events: ['node_start', 'tool_start', 'tool_end', 'token', 'done'],
      final: ['done'],
      reconnect: (lastEventId) => ({
        method: 'GET',
        path: '/api/chat/stream',
        headers: { ...request.headers, 'Last-Event-ID': lastEventId },
        signal: request.signal,
      }),
      maxReconnects,
    });
    this.conversationId = conversationId;
  }

  protected override seen(event: ChatEvent): void {
    if (event.event === 'done') this.conversationId = event.data.conversation_id;
  }

  /** Reads the whole reply: its text (the tokens joined) and the conversation id. */
  async finalReply(): Promise<{ conversation_id: string; text: string }> {
    let text = '';
    for await (const event of this) {
      if (event.event === 'token') text += event.data.content;
      if (event.event === 'done') return { conversation_id: event.data.conversation_id, text };
    }
    throw new APIConnectionError('The chat stream ended without its done event.');
  }
}

/** A job's status URL (the Location header): its type and id. */
export const JOB_LOCATION = /\/api\/jobs\/([a-z-]+)\/([0-9a-fA-F-]{36})\/status$/;

/** A streamed analysis: synthesis_chunk events, then done. */
export class AnalysisStream extends EventStream<AnalysisEvent> {
  constructor(transport: Transport, request: HttpRequest) {
    super(transport, request, { events: ['synthesis_chunk', 'done'], final: ['done'], maxReconnects: 0 });
  }

  /** The job's status URL (the Location header), e.g. /api/jobs/analysis/<id>/status. */
  async location(): Promise<string | undefined> {
    return (await this.response).headers.get('location') ?? undefined;
  }

  /** The job's type and id, from Location: its status and result stay available at the job routes. */
  async job(): Promise<{ jobType: JobType; jobId: string } | undefined> {
    const match = JOB_LOCATION.exec((await this.location()) ?? '');
    return match === null ? undefined : { jobType: match[1] as JobType, jobId: match[2] ?? '' };
  }

  /** Reads the whole stream: the text (the chunks joined) and the job id from `done`. */
  async finalText(): Promise<{ job_id: string; text: string }> {
    let text = '';
    for await (const event of this) {
      if (event.event === 'synthesis_chunk') text += event.data.chunk;
      else return { job_id: event.data.job_id, text };
    }
    throw new APIConnectionError('The analysis stream ended without its done event.');
  }
}

/**
 * A job's events (GET /api/jobs/{job_type}/{job_id}/events): `status`, `progress`, then `result` when it
 * completes. A failed job ends the stream with JobFailedError. Re-attaches with Last-Event-ID when the connection
 * drops.
 */
export class JobEventStream extends EventStream<JobEvent> {
  constructor(transport: Transport, request: HttpRequest, jobType: JobType, jobId: string, maxReconnects: number) {
    super(transport, request, {
      events: ['status', 'progress', 'result'],
      final: ['result'],
      reconnect: (lastEventId) => ({ ...request, headers: { ...request.headers, 'Last-Event-ID': lastEventId } }),
      maxReconnects,
      errorOf: (data, headers) => {
        const failed = data as Partial<JobErrorEvent>;
        return failed.job_id === undefined
          ? apiError(data.status_code, data, headers)
          : new JobFailedError(jobType, jobId, { type: data.type, detail: data.detail });
      },
    });
  }
}

/** The JSON-RPC messages the MCP endpoint answers a POST with (SSE `message` events). */
export class McpStream extends EventStream<McpEvent> {
  constructor(transport: Transport, request: HttpRequest) {
    super(transport, request, { events: ['message'], final: [], maxReconnects: 0, jsonEvent: 'message' });
  }
}
