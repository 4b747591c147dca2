// When a model call writes its conversation to the prompt cache. A write costs 1.25× the input price for what it
// adds (the conversation since the last write), where reading it back costs 0.1×: writing pays when another call
// reads it, and a write that no call reads costs a quarter more than not caching at all. The last call of a run
// (a news answer, a stock report's answer, a citation call) is followed by nothing, so its write is pure cost;
// which call is last, only the model decides. The engine learns it per product from the runs it has made: a
// call writes when the share of runs that made another call after it is above the break-even,
// (1.25 − 1) ÷ (1 − 0.1) ≈ 0.28. The shared prefix (tools and system prompt) is always marked: every run of the
// product reads it.
import { CACHE_READ_FACTOR, CACHE_WRITE_5M_FACTOR } from './prices';

/** The share of runs going on after a call above which writing the conversation at that call pays. */
export const TAIL_WRITE_BREAK_EVEN = (CACHE_WRITE_5M_FACTOR - 1) / (1 - CACHE_READ_FACTOR);

/** Before any run has been seen a call writes (as if one run had gone on after it); three runs that stopped there outweigh it. */
const PRIOR_CONTINUED = 1;
/** Past this many runs at a call, its counts are halved: the figures follow what the model does now. */
const MAX_RUNS_COUNTED = 500;

/** One product run's model calls, numbered as they are made; `finish` records how many there were. */
export interface CacheRun {
  /** Whether the next call writes the conversation's tail (and counts the call). */
  nextCallWrites: () => boolean;
  finish: () => void;
}

export class TailWritePolicy {
  /** Per product, per call number (0-based): runs that made that call, and runs that made another after it. */
  private readonly counts = new Map<string, Array<{ reached: number; continued: number }>>();

  /**
   * A run of `product`. With `firstCallRead` (a chat turn), the first call always writes: besides a tool round
   * of the same reply, the conversation's next turn reads it.
   */
  start(product: string, { firstCallRead = false }: { firstCallRead?: boolean } = {}): CacheRun {
    let calls = 0;
    let finished = false;
    return {
      nextCallWrites: () => {
        calls += 1;
        return (firstCallRead && calls === 1) || this.goesOnAfter(product, calls - 1) > TAIL_WRITE_BREAK_EVEN;
      },
      finish: () => {
        if (finished || calls === 0) return;
        finished = true;
        this.record(product, calls);
      },
    };
  }

  /** The share of `product`'s runs that made another call after call `index` (0-based), with the prior. */
  goesOnAfter(product: string, index: number): number {
    const count = this.counts.get(product)?.[index] ?? { reached: 0, continued: 0 };
    return (count.continued + PRIOR_CONTINUED) / (count.reached + PRIOR_CONTINUED);
  }

  private record(product: string, calls: number): void {
    let perCall = this.counts.get(product);
    if (!perCall) {
      perCall = [];
      this.counts.set(product, perCall);
    }
    for (let index = 0; index < calls; index++) {
      const count = (perCall[index] ??= { reached: 0, continued: 0 });
      count.reached += 1;
      if (index < calls - 1) count.continued += 1;
      if (count.reached > MAX_RUNS_COUNTED) {
        count.reached /= 2;
        count.continued /= 2;
      }
    }
  }
}
