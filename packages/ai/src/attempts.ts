// What one model call cost when it did not end in a whole message. The SDK retries a call inside
// `messages.create` (a 408/409/429/5xx answer, a timeout, a lost connection: its own policy, with Retry-After and
// x-should-retry), and a request middleware sees every HTTP attempt it makes; the engine keeps the SDK's retries
// and counts through it (docs/products.md#usage--what-a-job-cost-metausage).
import type { Middleware } from '@anthropic-ai/sdk';
import type { Message } from '@anthropic-ai/sdk/resources/messages/messages';
import { NO_USAGE, usageOfMessage, type Usage } from './usage';

/**
 * The HTTP attempts of one call. An attempt answered with an error status was refused before the model ran it
 * (the API bills nothing for it); every other attempt sent may have been run and billed: one that answered, one
 * whose stream broke, one that timed out, lost its connection or was aborted by us while waiting.
 */
export class CallAttempts {
  #sent = 0;
  #refused = 0;

  /** `observe` is told each attempt's answer (status and headers: the organisation's rate limits, a 429's retry-after). */
  constructor(
    private readonly observe?: (status: number, headers: Headers) => void,
    /**
     * Whether a 429 goes back to the caller at once instead of being retried by the SDK after its retry-after: where
     * the shared model budget governs the model, the call waits for its share again there (its job's time limit
     * standing still), not asleep inside the SDK while the clock runs.
     */
    private readonly returnRateLimits = false,
  ) {}

  /** The per-request middleware that counts them (passed as the request option `middleware`). */
  readonly middleware: readonly Middleware[] = [
    async (request, next) => {
      this.#sent += 1;
      const response = await next(request);
      if (!response.ok) this.#refused += 1;
      this.observe?.(response.status, response.headers);
      if (response.status === 429 && this.returnRateLimits) {
        // The SDK retries unless the answer says not to (x-should-retry: false), whatever its maxRetries.
        const headers = new Headers(response.headers);
        headers.set('x-should-retry', 'false');
        return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
      }
      return response;
    },
  ];

  /** Attempts the model may have run (and billed). */
  get calls(): number {
    return this.#sent - this.#refused;
  }

  /**
   * What the call cost when it failed: the tokens the failed attempt's stream reported before it ended (`partial`,
   * when its message_start had arrived) and every attempt the model may have run as a call.
   */
  spent(partial: Pick<Message, 'usage'> | undefined): Usage {
    return { ...(partial ? usageOfMessage(partial) : NO_USAGE), modelCalls: this.calls };
  }
}
