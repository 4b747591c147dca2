// The scripting vocabulary of the fake Anthropic Messages API. Scripts are written in our own camelCase terms;
// the server renders them into the exact wire shapes (snake_case JSON, SSE events) the real API sends. The turns
// and the wire format are offline mode's (@fin/offline); what only a test needs (faults, error answers, the
// request log) is defined here.
import { type ApiErrorType, type AssistantReply, type MessagesRequestBody } from '@fin/offline';

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

/** A successful assistant turn, optionally misbehaving. */
export interface MessageReply extends AssistantReply {
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
  /**
   * How the fake answered: a scripted reply, the handler, a validation error, the unscripted-request 500, or the
   * rate limits' 429.
   */
  answeredBy: 'queue' | 'handler' | 'validation' | 'unscripted' | 'builtin' | 'rate_limited';
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
