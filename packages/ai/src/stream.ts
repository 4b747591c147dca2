/**
 * Turns a run that reports events through a callback into an async iterable of those events followed by its
 * result. A failure of the run is thrown from the iterator after the events that preceded it, so a consumer
 * can never mistake a broken stream for a finished one. Breaking out of the loop aborts the run.
 */
export type StreamItem<E, R> = { kind: 'event'; event: E } | { kind: 'result'; result: R };

export function streamOf<E, R>(
  run: (emit: (event: E) => void, signal: AbortSignal) => Promise<R>,
  outerSignal?: AbortSignal,
): AsyncIterable<StreamItem<E, R>> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<StreamItem<E, R>> {
      const controller = new AbortController();
      const onOuterAbort = () => controller.abort(outerSignal?.reason);
      // A signal that fired before the stream started counts too: the run starts aborted.
      if (outerSignal?.aborted) onOuterAbort();
      else outerSignal?.addEventListener('abort', onOuterAbort, { once: true });
      const queue: StreamItem<E, R>[] = [];
      let failure: { error: unknown } | undefined;
      let finished = false;
      let wake: (() => void) | undefined;
      const signalChange = () => {
        wake?.();
        wake = undefined;
      };
      run((event) => {
        queue.push({ kind: 'event', event });
        signalChange();
      }, controller.signal).then(
        (result) => {
          queue.push({ kind: 'result', result });
          finished = true;
          signalChange();
        },
        (error: unknown) => {
          failure = { error };
          finished = true;
          signalChange();
        },
      );
      const cleanup = () => outerSignal?.removeEventListener('abort', onOuterAbort);
      return {
        async next(): Promise<IteratorResult<StreamItem<E, R>>> {
          for (;;) {
            const item = queue.shift();
            if (item) return { value: item, done: false };
            if (failure) {
              cleanup();
              const { error } = failure;
              failure = undefined;
              throw error;
            }
            if (finished) {
              cleanup();
              return { value: undefined, done: true };
            }
            await new Promise<void>((resolve) => (wake = resolve));
          }
        },
        async return(): Promise<IteratorResult<StreamItem<E, R>>> {
          controller.abort(new Error('The consumer stopped reading the stream.'));
          cleanup();
          return { value: undefined, done: true };
        },
      };
    },
  };
}
