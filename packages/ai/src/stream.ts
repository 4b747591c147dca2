/**
 * Turns a run that reports events through a callback into an async iterable of those events followed by its
 * result. A failure of the run is thrown from the iterator after the events that preceded it, so a consumer
 * can never mistake a broken stream for a finished one. Breaking out of the loop aborts the run.
 */
export type StreamItem<E, R> = { kind: 'event'; event: E } | { kind: 'result'; result: R };

type Waiter<T> = { resolve: (result: IteratorResult<T>) => void; reject: (error: Error) => void };

/**
 * The run's failure as the iterator throws it. The engine's runs fail with Errors (AiError and what their
 * dependencies throw), passed on as they are; anything else is wrapped, with the value as the cause.
 */
function asError(failure: unknown): Error {
  return failure instanceof Error ? failure : new Error('The run failed with a value that is not an Error.', { cause: failure });
}

/**
 * The iterator of one run. A chat reply's run stays open for as long as the reply streams (minutes), with its
 * consumer waiting in next(): so next() is a plain function holding one pending promise, not a suspended async
 * function with its own frame and promises, and the whole state is this one object.
 */
class RunIterator<E, R> implements AsyncIterator<StreamItem<E, R>> {
  readonly #controller = new AbortController();
  readonly #outerSignal: AbortSignal | undefined;
  #queue: StreamItem<E, R>[] = [];
  #failure: { error: Error } | undefined;
  #finished = false;
  #waiter: Waiter<StreamItem<E, R>> | undefined;
  // Made once, so that it can be removed from the caller's signal by reference when the run ends.
  readonly #onOuterAbort: () => void;

  constructor(run: (emit: (event: E) => void, signal: AbortSignal) => Promise<R>, outerSignal: AbortSignal | undefined) {
    this.#outerSignal = outerSignal;
    this.#onOuterAbort = () => this.#controller.abort(outerSignal?.reason);
    // A signal that fired before the stream started counts too: the run starts aborted.
    if (outerSignal?.aborted) this.#onOuterAbort();
    else outerSignal?.addEventListener('abort', this.#onOuterAbort, { once: true });
    run((event) => this.#push({ kind: 'event', event }), this.#controller.signal).then(
      (result) => {
        this.#finished = true;
        this.#push({ kind: 'result', result });
      },
      (error: unknown) => {
        this.#failure = { error: asError(error) };
        this.#finished = true;
        this.#wake();
      },
    );
  }

  next(): Promise<IteratorResult<StreamItem<E, R>>> {
    const taken = this.#take();
    if (taken === undefined) return new Promise((resolve, reject) => (this.#waiter = { resolve, reject }));
    return 'error' in taken ? Promise.reject(taken.error) : Promise.resolve(taken.result);
  }

  return(): Promise<IteratorResult<StreamItem<E, R>>> {
    this.#controller.abort(new Error('The consumer stopped reading the stream.'));
    this.#cleanup();
    return Promise.resolve({ value: undefined, done: true });
  }

  #push(item: StreamItem<E, R>): void {
    this.#queue.push(item);
    this.#wake();
  }

  /** What next() gives now: the next item, the failure (after every item) or the end; undefined: nothing yet. */
  #take(): { result: IteratorResult<StreamItem<E, R>> } | { error: Error } | undefined {
    const item = this.#queue.shift();
    if (item !== undefined) return { result: { value: item, done: false } };
    if (this.#failure !== undefined) {
      this.#cleanup();
      const { error } = this.#failure;
      this.#failure = undefined;
      return { error };
    }
    if (this.#finished) {
      this.#cleanup();
      return { result: { value: undefined, done: true } };
    }
    return undefined;
  }

  /** Hands a waiting next() what there is now. */
  #wake(): void {
    const waiter = this.#waiter;
    const taken = waiter === undefined ? undefined : this.#take();
    if (waiter === undefined || taken === undefined) return;
    this.#waiter = undefined;
    if ('error' in taken) waiter.reject(taken.error);
    else waiter.resolve(taken.result);
  }

  #cleanup(): void {
    this.#outerSignal?.removeEventListener('abort', this.#onOuterAbort);
  }
}

export function streamOf<E, R>(
  run: (emit: (event: E) => void, signal: AbortSignal) => Promise<R>,
  outerSignal?: AbortSignal,
): AsyncIterable<StreamItem<E, R>> {
  return {
    [Symbol.asyncIterator]: () => new RunIterator(run, outerSignal),
  };
}
