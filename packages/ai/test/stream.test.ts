import { streamOf } from '../src/stream';

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

describe('streamOf', () => {
  it('yields the events in order, then the result', async () => {
    const items = await collect(
      streamOf<string, number>(async (emit) => {
        emit('a');
        await new Promise((resolve) => setTimeout(resolve, 5));
        emit('b');
        return 42;
      }),
    );
    expect(items).toEqual([
      { kind: 'event', event: 'a' },
      { kind: 'event', event: 'b' },
      { kind: 'result', result: 42 },
    ]);
  });

  it('throws a failure after the events that preceded it, with no result', async () => {
    const seen: unknown[] = [];
    const stream = streamOf<string, number>(async (emit) => {
      emit('partial');
      throw new Error('overloaded');
    });
    await expect(
      (async () => {
        for await (const item of stream) seen.push(item);
      })(),
    ).rejects.toThrow('overloaded');
    expect(seen).toEqual([{ kind: 'event', event: 'partial' }]);
  });

  it('hands events to a consumer already waiting for one, then the failure', async () => {
    let emit: ((event: string) => void) | undefined;
    let fail: ((error: Error) => void) | undefined;
    const iterator = streamOf<string, number>(
      (emitEvent) =>
        new Promise<number>((_resolve, reject) => {
          emit = emitEvent;
          fail = reject;
        }),
    )[Symbol.asyncIterator]();
    const first = iterator.next();
    emit!('a');
    expect(await first).toEqual({ value: { kind: 'event', event: 'a' }, done: false });
    const second = iterator.next();
    fail!(new Error('connection lost'));
    await expect(second).rejects.toThrow('connection lost');
  });

  it('aborts the run when the consumer stops reading', async () => {
    let aborted = false;
    const stream = streamOf<string, number>(
      (emit, signal) =>
        new Promise((resolve) => {
          emit('first');
          signal.addEventListener('abort', () => {
            aborted = true;
            resolve(0);
          });
        }),
    );
    for await (const item of stream) {
      expect(item).toEqual({ kind: 'event', event: 'first' });
      break;
    }
    expect(aborted).toBe(true);
  });

  it("starts aborted when the caller's signal fired before the stream began", async () => {
    const caller = new AbortController();
    caller.abort(new Error('client gone'));
    let sawAbort: boolean | undefined;
    const stream = streamOf<string, number>(async (_emit, signal) => {
      sawAbort = signal.aborted;
      if (signal.aborted) throw signal.reason as Error;
      return 1;
    }, caller.signal);
    await expect(collect(stream)).rejects.toThrow('client gone');
    expect(sawAbort).toBe(true);
  });
});
