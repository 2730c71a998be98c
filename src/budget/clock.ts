import { setTimeout as delay } from 'node:timers/promises';
import type { BudgetClock } from './types.ts';

// Wall-clock time: the API's windows and Retry-After are in real seconds.

export const systemClock: BudgetClock = {
  now: () => Date.now(),
  async sleep(ms, signal) {
    if (signal?.aborted) throw signal.reason;
    if (ms <= 0) return;
    try {
      // Node may fire a timer a fraction of a millisecond early; waiting one more keeps a pause whole.
      await delay(Math.ceil(ms) + 1, undefined, signal ? { signal } : undefined);
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      throw e;
    }
  },
};
