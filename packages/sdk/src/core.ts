// The HTTP transport: builds each request (base URL, X-API-Key, JSON body), applies the time limit and the
// caller's AbortSignal, turns error answers into typed errors, and retries what is safe to retry:
// - 429: the request was refused before it did anything, so any request may be sent again; the wait is until
//   X-RateLimit-Reset (the end of the account's window), or Retry-After when there is no reset, at most
//   maxRetryDelayMs (a longer wait is not retried: the RateLimitError says when to come back);
// - 502, 503, 504, a connection error or a time-out: only requests that cannot do something twice — GET and PUT,
//   and POSTs carrying an Idempotency-Key (the SDK sends one with every product POST) — with exponential backoff
//   (0.5 s, 1 s, 2 s, … at most 8 s, with jitter), or Retry-After when the answer has one.
// At most maxRetries retries per call.
import { APIConnectionError, APIError, APITimeoutError, RedirectRefusedError, apiError, errorBody } from './errors';

/** The fetch function the client uses: the global fetch (Node ≥ 18, browsers) unless one is given. */
export type Fetch = (input: string, init: RequestInit) => Promise<Response>;

export interface ClientOptions {
  /** The API key (X-API-Key). */
  apiKey: string;
  /** The API's base URL, e.g. `https://api.example.com` (paths such as /api/products/news are appended). */
  baseUrl: string;
  /** A fetch implementation; default the global one. */
  fetch?: Fetch;
  /** Retries of a failed call (see "Retries" in the README); default 2. */
  maxRetries?: number;
  /** Time limit of each attempt in milliseconds, until the answer's headers (and, for JSON, its body) arrived; default 120 000. */
  timeoutMs?: number;
  /** The longest wait before a retry that the client accepts (a 429 whose window ends later is thrown); default 60 000. */
  maxRetryDelayMs?: number;
  /** Headers sent with every request. */
  defaultHeaders?: Record<string, string>;
}

/** Options every method takes. */
export interface RequestOptions {
  /** Aborts the call (and a stream being read). */
  signal?: AbortSignal;
  /** This call's time limit per attempt, instead of the client's. */
  timeoutMs?: number;
  /** This call's retries, instead of the client's. */
  maxRetries?: number;
  /** Extra headers, e.g. X-Request-Id. */
  headers?: Record<string, string>;
}

export interface HttpRequest extends RequestOptions {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** text/event-stream instead of application/json. */
  accept?: 'json' | 'sse' | 'html';
}

/** A successful answer with its body read. */
export interface APIResponse<T> {
  status: number;
  data: T;
  headers: Headers;
  /** X-Request-Id of the answer. */
  requestId: string | undefined;
}

const RETRY_STATUSES = new Set([502, 503, 504]);

function randomUuid(): string {
  const crypto = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (crypto?.randomUUID !== undefined) return crypto.randomUUID();
  return 'xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx'.replace(/[xy]/g, (c) => {
    const r = Math.floor(Math.random() * 16);
    return (c === 'x' ? r : (r & 0x3) | 0x8).toString(16);
  });
}

/** A fresh Idempotency-Key. */
export function newIdempotencyKey(): string {
  return randomUuid();
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (isAborted(signal)) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Whether the signal has aborted (a function, so checks after an await are not narrowed away). */
export function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** The error an aborted call rejects with: the signal's reason when it is an Error, else an AbortError. */
function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error) return reason;
  const error = new Error('The operation was aborted.', reason === undefined ? undefined : { cause: reason });
  error.name = 'AbortError';
  return error;
}

function backoffMs(attempt: number): number {
  const base = Math.min(8000, 500 * 2 ** attempt);
  return base / 2 + Math.random() * (base / 2);
}

/** How long to wait before retrying a 429: until X-RateLimit-Reset, else Retry-After. */
function rateLimitDelayMs(headers: Headers, attempt: number): number {
  const reset = Number(headers.get('x-ratelimit-reset') ?? Number.NaN);
  const retryAfter = Number(headers.get('retry-after') ?? Number.NaN);
  const untilReset = Number.isFinite(reset) ? reset * 1000 - Date.now() : Number.NaN;
  const afterHeader = Number.isFinite(retryAfter) ? retryAfter * 1000 : Number.NaN;
  const delay = Math.max(Number.isFinite(untilReset) ? untilReset : 0, Number.isFinite(afterHeader) ? afterHeader : 0);
  // A little past the reset, so the retry lands in the new window even with some clock skew.
  return delay > 0 ? delay + 100 + Math.random() * 400 : backoffMs(attempt);
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 5;

export class Transport {
  readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly fetchImpl: Fetch;
  readonly maxRetries: number;
  private readonly timeoutMs: number;
  private readonly maxRetryDelayMs: number;
  private readonly defaultHeaders: Record<string, string>;

  constructor(options: ClientOptions) {
    if (typeof options.apiKey !== 'string' || options.apiKey === '') throw new TypeError('apiKey is required');
    if (typeof options.baseUrl !== 'string' || options.baseUrl === '') throw new TypeError('baseUrl is required');
    this.apiKey = options.apiKey;
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    const fetchImpl = options.fetch ?? (globalThis as { fetch?: Fetch }).fetch;
    if (fetchImpl === undefined) throw new TypeError('no fetch: pass options.fetch (Node 18 or later has a global fetch)');
    this.fetchImpl = fetchImpl;
    this.maxRetries = options.maxRetries ?? 2;
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 60_000;
    this.defaultHeaders = options.defaultHeaders ?? {};
  }

  url(path: string, query?: Record<string, string | number | undefined>): string {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) params.set(name, String(value));
    const search = params.toString();
    return `${this.baseUrl}${path}${search === '' ? '' : `?${search}`}`;
  }

  private canRetry(request: HttpRequest, status: number | 'network'): boolean {
    if (status === 429) return true;
    if (status !== 'network' && !RETRY_STATUSES.has(status)) return false;
    if (request.method === 'GET' || request.method === 'PUT') return true;
    return request.method === 'POST' && Object.keys(request.headers ?? {}).some((name) => name.toLowerCase() === 'idempotency-key');
  }

  /**
   * Sends the request (retrying what is safe) and returns the successful response with its body unread, after
   * `read` consumed it within the attempt's time limit (read is where a JSON body is parsed; a stream leaves the
   * body to its reader). Error answers are thrown as APIError subclasses.
   */
  async send<T>(request: HttpRequest, read: (response: Response) => Promise<T>): Promise<{ response: Response; value: T }> {
    const maxRetries = request.maxRetries ?? this.maxRetries;
    const timeoutMs = request.timeoutMs ?? this.timeoutMs;
    const headers: Record<string, string> = {
      ...this.defaultHeaders,
      'X-API-Key': this.apiKey,
      Accept: request.accept === 'sse' ? 'text/event-stream' : request.accept === 'html' ? 'text/html' : 'application/json',
      ...(request.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      ...request.headers,
    };
    const body = request.body === undefined ? undefined : JSON.stringify(request.body);
    const url = this.url(request.path, request.query);
    for (let attempt = 0; ; attempt++) {
      const controller = new AbortController();
      const onAbort = () => controller.abort(abortReason(request.signal));
      if (isAborted(request.signal)) throw abortReason(request.signal);
      request.signal?.addEventListener('abort', onAbort, { once: true });
      const timer = setTimeout(() => {
        controller.abort(new APITimeoutError(`${request.method} ${request.path} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      let retryDelay: number;
      let failure: unknown;
      // A stream's body is read after this returns: the caller's signal must still reach it then.
      let streaming = false;
      try {
        const response = await this.fetchSameOrigin(url, { method: request.method, headers, body, signal: controller.signal });
        if (response.ok) {
          const value = await read(response);
          streaming = request.accept === 'sse';
          return { response, value };
        }
        const text = await response.text().catch(() => '');
        failure = apiError(response.status, errorBody(response.status, text), response.headers);
        if (attempt >= maxRetries || !this.canRetry(request, response.status)) throw failure;
        retryDelay =
          response.status === 429 || response.headers.has('retry-after') ? rateLimitDelayMs(response.headers, attempt) : backoffMs(attempt);
        if (retryDelay > this.maxRetryDelayMs) throw failure;
      } catch (error) {
        if (error === failure || error instanceof RedirectRefusedError) throw error;
        if (isAborted(request.signal)) throw abortReason(request.signal);
        const timeout: unknown = controller.signal.reason;
        const connectionError =
          timeout instanceof APITimeoutError
            ? timeout
            : error instanceof APIError
              ? error
              : new APIConnectionError(
                  `${request.method} ${request.path} failed: ${error instanceof Error ? error.message : String(error)}`,
                  {
                    cause: error,
                  },
                );
        if (connectionError instanceof APIError || attempt >= maxRetries || !this.canRetry(request, 'network')) throw connectionError;
        retryDelay = backoffMs(attempt);
      } finally {
        clearTimeout(timer);
        if (!streaming) request.signal?.removeEventListener('abort', onAbort);
      }
      await sleep(retryDelay, request.signal);
    }
  }

  /**
   * fetch, following redirects only within the origin the request went to. fetch's own following would send the
   * API key (a custom header, which fetch does not strip as it does Authorization) to any host a redirect names.
   * A redirect to another origin, or one a browser keeps opaque, is refused with RedirectRefusedError.
   */
  private async fetchSameOrigin(url: string, init: RequestInit & { method: string }): Promise<Response> {
    let current = new URL(url);
    let { method, body } = init;
    for (let hops = 0; ; hops++) {
      const response = await this.fetchImpl(current.toString(), { ...init, method, body, redirect: 'manual' });
      if (response.type === 'opaqueredirect')
        throw new RedirectRefusedError(`${method} ${current.pathname} was redirected; the SDK does not follow redirects it cannot inspect`);
      if (!REDIRECT_STATUSES.has(response.status)) return response;
      const location = response.headers.get('location');
      if (location === null) return response;
      await response.body?.cancel().catch(() => undefined);
      const next = new URL(location, current);
      if (next.origin !== current.origin)
        throw new RedirectRefusedError(
          `${method} ${current.pathname} was redirected to another origin (${next.origin}); not followed, so the API key is not sent there`,
        );
      if (hops >= MAX_REDIRECTS) throw new RedirectRefusedError(`${method} ${current.pathname}: more than ${MAX_REDIRECTS} redirects`);
      // As fetch does: 303, and 301/302 after a POST, become a GET without a body.
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
      }
      current = next;
    }
  }

  /** A JSON call: the parsed body of the successful answer (undefined for 204). */
  async json<T>(request: HttpRequest): Promise<APIResponse<T>> {
    const { response, value } = await this.send(request, async (answer) => {
      const text = await answer.text();
      return (text === '' ? undefined : JSON.parse(text)) as T;
    });
    return {
      status: response.status,
      data: value,
      headers: response.headers,
      requestId: response.headers.get('x-request-id') ?? undefined,
    };
  }
}
