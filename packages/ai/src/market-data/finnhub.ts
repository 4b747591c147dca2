// The Finnhub adapter (https://finnhub.io/docs/api): quote, company profile, basic financials and company news
// over fetch, with a timeout and a response-size cap per call, and every failure mapped to a MarketDataError.
//
// The key travels in the X-Finnhub-Token header, never in the URL, so it cannot leak through URLs in logs or
// error messages; redirects are refused so the header is never replayed to another host.
import { MarketDataError, type MarketDataErrorKind } from './errors';
import { normaliseNewsQuery, normaliseSymbol, toCompanyNews, toMetrics, toProfile, toQuote } from './finnhub-format';
import {
  type CompanyNews,
  type CompanyProfile,
  type KeyMetrics,
  type MarketDataCallOptions,
  type MarketDataProvider,
  type MarketDataResource,
  type NewsQuery,
  type Quote,
  resourceUrlUnder,
} from './types';

const FINNHUB_DEFAULT_BASE_URL = 'https://finnhub.io/api/v1';

export interface FinnhubProviderOptions {
  /** The Finnhub API key. */
  token: string;
  /** API root, default https://finnhub.io/api/v1 (tests point it at the fake). */
  baseUrl?: string;
  /** Per call, headers and body together (default 10 s). */
  timeoutMs?: number;
  /** Largest response body accepted (default 1 MiB); larger ones fail with 'response_too_large'. */
  maxResponseBytes?: number;
  /**
   * The fetch to call (default the platform's). The engine passes its keep-alive node:http transport (transport.ts),
   * which costs a fraction of undici's fetch per call. A transport that returns a redirect instead of refusing it
   * gets it refused here.
   */
  fetch?: typeof globalThis.fetch;
}

const PROVIDER = 'finnhub';

class TimeoutSignal extends Error {}

export class FinnhubProvider implements MarketDataProvider {
  readonly name = 'finnhub' as const;
  readonly publisher = 'Finnhub';
  readonly #token: string;
  readonly #baseUrl: string;
  readonly #timeoutMs: number;
  readonly #maxResponseBytes: number;
  readonly #fetch: typeof globalThis.fetch;

  constructor(options: FinnhubProviderOptions) {
    if (!options.token.trim()) throw new Error('FinnhubProvider needs an API token');
    this.#token = options.token;
    this.#baseUrl = (options.baseUrl ?? FINNHUB_DEFAULT_BASE_URL).replace(/\/+$/, '');
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#maxResponseBytes = options.maxResponseBytes ?? 1024 * 1024;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  resourceUrl(kind: MarketDataResource, symbol: string): string {
    return resourceUrlUnder(this.#baseUrl, kind, symbol);
  }

  async quote(symbol: string, options: MarketDataCallOptions = {}): Promise<Quote> {
    const normalised = normaliseSymbol(symbol, PROVIDER);
    return toQuote(await this.#get('/quote', { symbol: normalised }, 'quote', options.signal), normalised, PROVIDER);
  }

  async profile(symbol: string, options: MarketDataCallOptions = {}): Promise<CompanyProfile> {
    const normalised = normaliseSymbol(symbol, PROVIDER);
    return toProfile(await this.#get('/stock/profile2', { symbol: normalised }, 'profile', options.signal), normalised, PROVIDER);
  }

  async metrics(symbol: string, options: MarketDataCallOptions = {}): Promise<KeyMetrics> {
    const normalised = normaliseSymbol(symbol, PROVIDER);
    return toMetrics(
      await this.#get('/stock/metric', { symbol: normalised, metric: 'all' }, 'metrics', options.signal),
      normalised,
      PROVIDER,
    );
  }

  async companyNews(symbol: string, query: NewsQuery): Promise<CompanyNews> {
    const normalised = normaliseSymbol(symbol, PROVIDER);
    const window = normaliseNewsQuery(query, PROVIDER);
    const body = await this.#get('/company-news', { symbol: normalised, from: window.from, to: window.to }, 'news', query.signal);
    return toCompanyNews(body, normalised, window, PROVIDER);
  }

  /** Any text that might reach a log or the model, with the key blanked out should a server have echoed it. */
  #redact(value: string): string {
    return value.split(this.#token).join('[redacted]');
  }

  #error(
    kind: MarketDataErrorKind,
    what: string,
    detail: string,
    extra: { status?: number; retryAfterSeconds?: number; cause?: unknown } = {},
  ): MarketDataError {
    return new MarketDataError(kind, this.#redact(`Finnhub ${what} request failed: ${detail}`), { provider: PROVIDER, ...extra });
  }

  async #get(path: string, params: Record<string, string>, what: string, callerSignal: AbortSignal | undefined): Promise<unknown> {
    const url = new URL(`${this.#baseUrl}${path}`);
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    const label = `${what} (${params.symbol ?? ''})`;

    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new TimeoutSignal()), this.#timeoutMs);
    const signal = callerSignal ? AbortSignal.any([callerSignal, timeout.signal]) : timeout.signal;
    const failure = (error: unknown): MarketDataError => {
      if (timeout.signal.aborted) return this.#error('timeout', label, `no complete answer within ${this.#timeoutMs} ms`, { cause: error });
      if (callerSignal?.aborted) return this.#error('aborted', label, 'aborted by the caller', { cause: error });
      return this.#error('connection', label, 'could not reach the API', { cause: error });
    };

    try {
      let response: Response;
      try {
        response = await this.#fetch(url, {
          headers: { 'X-Finnhub-Token': this.#token, accept: 'application/json' },
          redirect: 'error',
          signal,
        });
      } catch (error) {
        throw failure(error);
      }
      if (response.status >= 300 && response.status < 400) {
        await response.body?.cancel().catch(() => undefined);
        throw this.#error('connection', label, 'the API answered with a redirect, which is not followed', { status: response.status });
      }
      if (!response.ok) {
        const message = await this.#errorText(response);
        await response.body?.cancel().catch(() => undefined);
        throw this.#statusError(response, label, message);
      }
      const text = await this.#readCapped(response, label).catch((error: unknown) => {
        throw error instanceof MarketDataError ? error : failure(error);
      });
      try {
        return JSON.parse(text) as unknown;
      } catch (error) {
        throw this.#error('invalid_response', label, 'the response is not valid JSON', { status: response.status, cause: error });
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** Finnhub's `{"error": "..."}` text, short and redacted; '' when the body says nothing usable. */
  async #errorText(response: Response): Promise<string> {
    try {
      const body = (await this.#readCapped(response, 'error', 4096)).trim();
      const parsed = JSON.parse(body) as { error?: unknown };
      return typeof parsed.error === 'string' ? parsed.error.slice(0, 200) : '';
    } catch {
      return '';
    }
  }

  #statusError(response: Response, label: string, message: string): MarketDataError {
    const status = response.status;
    const detail = `HTTP ${status}${message ? ` (${message})` : ''}`;
    if (status === 401) return this.#error('unauthorized', label, `${detail}; check the configured Finnhub API key`, { status });
    if (status === 403) return this.#error('forbidden', label, `${detail}; the key's plan does not cover this endpoint`, { status });
    if (status === 429) return this.#error('rate_limited', label, detail, { status, retryAfterSeconds: retryAfter(response.headers) });
    if (status >= 500) return this.#error('unavailable', label, detail, { status });
    return this.#error('invalid_request', label, detail, { status });
  }

  /** The body as text, refusing it as soon as it is known to exceed the cap (declared or counted). */
  async #readCapped(response: Response, label: string, cap = this.#maxResponseBytes): Promise<string> {
    const tooLarge = () => this.#error('response_too_large', label, `the response exceeds ${cap} bytes`, { status: response.status });
    const declared = Number(response.headers.get('content-length'));
    if (Number.isFinite(declared) && declared > cap) {
      await response.body?.cancel().catch(() => undefined);
      throw tooLarge();
    }
    if (!response.body) return '';
    const chunks: Uint8Array[] = [];
    let total = 0;
    // Iterated rather than read through getReader(): both a web stream and the node:http transport's body are
    // async iterables of bytes, and leaving the loop early cancels either.
    for await (const value of response.body as AsyncIterable<Uint8Array>) {
      total += value.byteLength;
      if (total > cap) throw tooLarge();
      chunks.push(value);
    }
    return Buffer.concat(chunks).toString('utf8');
  }
}

/** Seconds to wait from Retry-After, or else from Finnhub's X-Ratelimit-Reset (unix seconds). */
function retryAfter(headers: Headers): number | undefined {
  const retry = Number(headers.get('retry-after'));
  if (headers.has('retry-after') && Number.isFinite(retry) && retry >= 0) return retry;
  const reset = Number(headers.get('x-ratelimit-reset'));
  if (!headers.has('x-ratelimit-reset') || !Number.isFinite(reset)) return undefined;
  return Math.max(0, Math.ceil(reset - Date.now() / 1000));
}
