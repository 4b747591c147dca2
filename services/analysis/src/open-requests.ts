// The requests the API role is holding open, so that shutdown can end them properly instead of letting the
// drain deadline cut their connections: a request waiting for its job stops waiting at once (and answers 202;
// the job goes on in a worker), and a streamed analysis gets a grace period to finish, then ends with a final
// `error` event.
import { AppError, createLifecycle, type Lifecycle } from '@fin/http';

/** Why an open request is being stopped; it is the abort reason of the request's signal. */
export class RequestStopped extends Error {
  constructor(
    readonly why: 'client_left' | 'shutdown',
    readonly error: AppError,
  ) {
    super(error.detail);
    this.name = 'RequestStopped';
  }
}

export const clientLeft = () =>
  new RequestStopped(
    'client_left',
    // Not the service's fault, and not the request's: like a 503, it says the request itself can be sent again.
    new AppError(
      'service_unavailable',
      'The analysis was cancelled because the client closed the stream before it finished. Send the request again to run it.',
    ),
  );

const shuttingDown = () =>
  new RequestStopped(
    'shutdown',
    new AppError(
      'service_unavailable',
      'The analysis service is restarting and stopped this analysis before it finished. Send the request again.',
    ),
  );

export interface OpenRequests {
  /**
   * Tracks a request until the returned function is called. `stream`s are stopped a grace period after shutdown
   * begins, `wait`s at once. The request's controller is aborted with a RequestStopped.
   */
  track(kind: 'stream' | 'wait', controller: AbortController): () => void;
  /** Shutdown has begun. */
  shutdown(): void;
  readonly size: number;
}

export function createOpenRequests({ streamGraceMs }: { streamGraceMs: number }): OpenRequests {
  const open = new Map<AbortController, 'stream' | 'wait'>();
  let graceTimer: NodeJS.Timeout | undefined;
  const stop = (kind: 'stream' | 'wait') => {
    for (const [controller, of] of open) if (of === kind && !controller.signal.aborted) controller.abort(shuttingDown());
  };
  return {
    track(kind, controller) {
      open.set(controller, kind);
      return () => {
        open.delete(controller);
        if (open.size === 0) clearTimeout(graceTimer);
      };
    },
    shutdown() {
      stop('wait');
      if (graceTimer || ![...open.values()].includes('stream')) return;
      graceTimer = setTimeout(() => stop('stream'), streamGraceMs);
      // The process exits when shutdown is done; this timer must not hold it open.
      graceTimer.unref();
    },
    get size() {
      return open.size;
    },
  };
}

/** The process's lifecycle: beginning the shutdown (readiness off) also stops the open requests. */
export function lifecycleStopping(openRequests: OpenRequests): Lifecycle {
  const base = createLifecycle();
  return {
    get shuttingDown() {
      return base.shuttingDown;
    },
    beginShutdown() {
      base.beginShutdown();
      openRequests.shutdown();
    },
  };
}
