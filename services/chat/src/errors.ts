// How a reply that did not complete is reported: the error body of the stream's last `error` event (and of a
// non-streamed answer's error response). Model failures are translated here from the engine's AiError kinds;
// interruptions are ours.
import { AiError } from '@fin/ai';
import type { ErrorBody } from '@fin/contracts';
import { AppError } from '@fin/http';

/** Why we stopped a reply ourselves (the reason its abort signal carries). */
export type Interruption = 'detached' | 'superseded' | 'shutdown';

export class ReplyInterrupted extends Error {
  constructor(readonly reason: Interruption) {
    super(`reply interrupted (${reason})`);
    this.name = 'ReplyInterrupted';
  }
}

const NOT_PART = 'It is not part of the conversation; send the message again.';

export const INTERRUPTION_ERRORS: Record<Interruption, ErrorBody> = {
  // Nobody was listening when this happened; a client that re-attaches later reads it.
  detached: { detail: `This reply was interrupted when its client disconnected. ${NOT_PART}`, status_code: 409, type: 'conflict' },
  superseded: {
    detail: `This reply was interrupted by a newer message in the conversation. ${NOT_PART}`,
    status_code: 409,
    type: 'conflict',
  },
  shutdown: {
    detail: `The chat service is shutting down, so this reply was interrupted. ${NOT_PART}`,
    status_code: 503,
    type: 'service_unavailable',
  },
};

const body = (type: ErrorBody['type'], status: number, detail: string): ErrorBody => ({ detail, status_code: status, type });

/** The error body for a reply the model run failed. Nothing internal reaches the client. */
export function replyFailure(error: unknown): ErrorBody {
  if (!(error instanceof AiError)) return body('internal_error', 500, 'An internal error occurred.');
  switch (error.kind) {
    case 'rate_limited':
    case 'overloaded':
      return body('service_unavailable', 503, 'The AI model is busy; send the message again in a moment.');
    case 'timeout':
      return body('gateway_timeout', 504, 'The AI model did not answer in time.');
    case 'upstream':
    case 'connection':
      return body('bad_gateway', 502, 'The AI model failed while answering.');
    case 'invalid_output':
      return body('bad_gateway', 502, 'The AI model did not produce a usable reply.');
    case 'refused':
      return body('model_refused', 422, 'The AI model declined to answer this message. Rephrasing it may help.');
    case 'bad_request':
      return body(
        'model_request_rejected',
        502,
        'The AI model provider refused the request this service built for the reply. This is our error, not yours: it has been logged for the operators.',
      );
    case 'limit_exceeded':
      return body('internal_error', 500, 'The reply exceeded its processing limits.');
    default:
      return body('internal_error', 500, 'An internal error occurred.');
  }
}

/** An error body as the error a non-streamed answer is refused with. */
export function toAppError(error: ErrorBody): AppError {
  return new AppError(error.type, error.detail, { status: error.status_code });
}
