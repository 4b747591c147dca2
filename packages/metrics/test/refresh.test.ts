import { refreshEvery } from '../src/refresh';

describe('refreshEvery', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('reads at start and on each tick, never two reads at once, and stop waits for the read in flight', async () => {
    let reads = 0;
    let finish: () => void = () => undefined;
    const refresher = refreshEvery(
      1_000,
      () => {
        reads++;
        return new Promise<void>((resolve) => (finish = resolve));
      },
      () => undefined,
    );
    refresher.start();
    refresher.start();
    expect(reads).toBe(1);
    // The first read still runs: three ticks start nothing.
    await jest.advanceTimersByTimeAsync(3_000);
    expect(reads).toBe(1);
    finish();
    await jest.advanceTimersByTimeAsync(1_000);
    expect(reads).toBe(2);
    let stopped = false;
    const stopping = refresher.stop().then(() => (stopped = true));
    await jest.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    finish();
    await stopping;
    await jest.advanceTimersByTimeAsync(5_000);
    expect(reads).toBe(2);
  });

  it('hands a failed read to onError and keeps reading', async () => {
    const errors: unknown[] = [];
    let reads = 0;
    const refresher = refreshEvery(
      1_000,
      () => (++reads === 1 ? Promise.reject(new Error('database down')) : Promise.resolve()),
      (error) => errors.push(error),
    );
    refresher.start();
    await jest.advanceTimersByTimeAsync(1_000);
    expect(errors).toEqual([new Error('database down')]);
    expect(reads).toBe(2);
    await refresher.stop();
  });
});
