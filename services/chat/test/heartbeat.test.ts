// One keep-alive timer for all open streams: every open stream gets its comment each interval, a stream that
// closed gets none, and the timer stops once no stream is open (an idle service holds no timer).
import { Heartbeat, type KeptAlive } from '../src/sse';

function stream(): KeptAlive & { beats: number } {
  return {
    beats: 0,
    keepAlive() {
      this.beats += 1;
    },
  };
}

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

it('keeps every open stream alive from one timer, and stops it when the last stream closes', () => {
  const heartbeat = new Heartbeat(1_000);
  expect(jest.getTimerCount()).toBe(0);
  const [first, second] = [stream(), stream()];
  heartbeat.add(first);
  heartbeat.add(second);
  expect(jest.getTimerCount()).toBe(1);

  jest.advanceTimersByTime(1_000);
  expect([first.beats, second.beats]).toEqual([1, 1]);

  heartbeat.delete(first);
  jest.advanceTimersByTime(2_000);
  expect([first.beats, second.beats]).toEqual([1, 3]);

  heartbeat.delete(second);
  heartbeat.delete(second);
  expect(jest.getTimerCount()).toBe(0);

  // A stream opened later starts the timer again.
  const third = stream();
  heartbeat.add(third);
  jest.advanceTimersByTime(1_000);
  expect(third.beats).toBe(1);
  heartbeat.delete(third);
  expect(jest.getTimerCount()).toBe(0);
});
