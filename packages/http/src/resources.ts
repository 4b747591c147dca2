// What a unit runs on that a process may share: its database pool, event bus, AI engine. One given by the process
// (runSystem, a test) is used as it is and left to its owner; one absent is made here and closed here. A collector
// records a closer for each thing it made, and only for those, and closes them the last made first: what was made
// later may use what was made before it (an AI engine on the pool), never the reverse.
import type { Closer } from './shutdown';

export interface Resources {
  /**
   * `given` when the process shares one; else what `make` makes, recorded to be closed by `close`. When `make`
   * fails, what was made before it is closed (the unit being made will never be returned for anyone to close it),
   * and the failure is thrown.
   */
  ownOrShared<T>(name: string, given: T | undefined, make: () => T | Promise<T>, close: (made: T) => Promise<void>): Promise<T>;
  /** Records `made`, made here, to be closed by `close`; returns it. */
  own<T>(name: string, made: T, close: (made: T) => Promise<void>): T;
  /** The closers of what was made, the last made first: the end of a unit's closers, after everything that uses them. */
  closers(): Closer[];
  /**
   * Closes what was made, the last made first, each once: a closer that fails does not stop the others, and the
   * first failure is thrown once all have run.
   */
  close(): Promise<void>;
}

export function createResources(): Resources {
  const made: Closer[] = [];
  const own = <T>(name: string, value: T, close: (made: T) => Promise<void>): T => {
    made.push({ name, close: () => close(value) });
    return value;
  };
  const close = async (): Promise<void> => {
    const failures: unknown[] = [];
    for (const closer of made.splice(0).reverse()) await closer.close().catch((error: unknown) => failures.push(error));
    if (failures.length > 0) throw failures[0];
  };
  return {
    async ownOrShared<T>(name: string, given: T | undefined, make: () => T | Promise<T>, closeMade: (made: T) => Promise<void>) {
      if (given !== undefined) return given;
      const value = await Promise.resolve()
        .then(make)
        .catch(async (error: unknown) => {
          await close().catch(() => undefined);
          throw error;
        });
      return own(name, value, closeMade);
    },
    own,
    closers: () => [...made].reverse(),
    close,
  };
}
