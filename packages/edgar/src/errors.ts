// Failures of SEC EDGAR itself. A symbol EDGAR does not know is not one of them: every FilingsSource method answers
// null for it. Callers map `status` to their answer (503 while EDGAR holds us back, 502 for a broken answer).
export type EdgarErrorKind =
  /** EDGAR refused us for exceeding its request rate (403 with its "Request Rate Threshold Exceeded" page, or 429): every replica waits until `retryAt`. */
  | 'blocked'
  /** EDGAR refused the request otherwise (403 without the rate page: usually a User-Agent it does not accept). */
  | 'forbidden'
  /** 5xx, a timeout or a connection failure. */
  | 'unavailable'
  /** The answer was not the documented shape. */
  | 'invalid_response';

const STATUS: Record<EdgarErrorKind, number> = { blocked: 503, forbidden: 502, unavailable: 503, invalid_response: 502 };

export class EdgarError extends Error {
  /** The HTTP status a service answers with when this error reaches it. */
  readonly status: number;
  /** When EDGAR's block ends (kind `blocked`). */
  readonly retryAt: Date | undefined;

  constructor(
    readonly kind: EdgarErrorKind,
    message: string,
    options: { retryAt?: Date; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'EdgarError';
    this.status = STATUS[kind];
    this.retryAt = options.retryAt;
  }

  /** Seconds until the block ends, rounded up (for a Retry-After header). */
  get retryAfterSeconds(): number | undefined {
    return this.retryAt ? Math.max(1, Math.ceil((this.retryAt.getTime() - Date.now()) / 1000)) : undefined;
  }
}
