/** A pool whose statements a test counts, and how many it has sent. */
export interface CountingPool<P> {
  /** The pool to hand the code under test: the same pool, its `query` calls counted. */
  readonly pool: P;
  /** Statements sent through `pool.query` so far (a client checked out with `connect()` is not counted). */
  readonly queries: number;
}

/** `pool` with its `query` calls counted: what a test asserts a warm path does not do (a database round trip). */
export function countingPool<P extends object>(pool: P): CountingPool<P> {
  let queries = 0;
  const counted = new Proxy(pool, {
    get: (target, property): unknown => {
      const value = Reflect.get(target, property) as unknown;
      if (property !== 'query' || typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        queries++;
        return (value as (...given: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return {
    pool: counted,
    get queries() {
      return queries;
    },
  };
}
