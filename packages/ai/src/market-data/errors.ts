export type MarketDataErrorKind =
  /** A malformed symbol or news window: our caller's input, never worth retrying. */
  | 'invalid_request'
  /** The provider knows no such symbol (see UnknownSymbolError). */
  | 'unknown_symbol'
  /** The API key was refused (401): configuration must change. */
  | 'unauthorized'
  /** The key's plan does not cover the endpoint (403). */
  | 'forbidden'
  /** 429: the provider's quota; retry after `retryAfterSeconds` when known. */
  | 'rate_limited'
  /** 5xx from the provider or its edge. */
  | 'unavailable'
  | 'timeout'
  /** The provider could not be reached (DNS, refused, reset). */
  | 'connection'
  /** The response exceeded the configured size cap. */
  | 'response_too_large'
  /** The response was not the documented shape. */
  | 'invalid_response'
  /** The caller's signal aborted the call. */
  | 'aborted';

const RETRYABLE: ReadonlySet<MarketDataErrorKind> = new Set(['rate_limited', 'unavailable', 'timeout', 'connection']);

/**
 * A failed market-data call. Messages name the provider, the endpoint and the symbol, never the API key, so they
 * can be logged and shown to the model as a tool error as they are.
 */
export class MarketDataError extends Error {
  readonly retryable: boolean;
  readonly provider: string;
  /** The HTTP status when the provider answered with one. */
  readonly status: number | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly kind: MarketDataErrorKind,
    message: string,
    options: { provider: string; status?: number; retryAfterSeconds?: number; cause?: unknown },
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'MarketDataError';
    this.retryable = RETRYABLE.has(kind);
    this.provider = options.provider;
    this.status = options.status;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** The provider has no data for the symbol (Finnhub answers such requests with zeros or `{}`). */
export class UnknownSymbolError extends MarketDataError {
  constructor(
    readonly symbol: string,
    provider: string,
    what: string,
  ) {
    super('unknown_symbol', `${provider} has no ${what} for symbol ${symbol}`, { provider });
    this.name = 'UnknownSymbolError';
  }
}
