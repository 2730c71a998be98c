import { describe, expect, it } from 'vitest';
import { planWindow } from '../../src/sync/live.ts';
import { emptyRunCounts } from '../../src/sync/types.ts';
import { newWalk, walkRuns } from '../../src/sync/walk.ts';
import { MICROS_PER_DAY } from '../../src/util/timestamp.ts';
import { diffWithTruth, engineFor, perTest, SETTLE, spanStart } from './kit.ts';

// A walk learns what it asked for (so a run listed again after a refused cursor is not fetched
// twice), and what it learns is kept until its slice ends: a run lies in one slice only. A first
// sync's history is walked a day at a time, so however many runs it loads, it holds no more than
// a day's of them; a window whose runs are stored (a reconciliation) is still listed in one walk.

describe('what a walk keeps in memory', () => {
  const each = perTest();

  it('a first sync walks its history a day at a time and keeps what it asked for only until the day ends', async () => {
    const sim = await each.sim({ seed: 41, size: 600, days: 10 });
    const dir = each.dir();
    const engine = engineFor({ sim, dir });
    try {
      const window = { from: spanStart(sim), to: sim.clock.now() - SETTLE };
      const deps = engine.deps;
      const first = await deps.gate.use((wh) => planWindow(wh, deps, () => window, true));
      expect(first.sliceMicros).toBe(MICROS_PER_DAY);
      // The stored map a walk is given is read through, never added to.
      const stored = first.stored ?? new Map();
      const walk = newWalk({ ...window, sliceMicros: first.sliceMicros, filter: {}, force: false }, deps.now());
      const counts = emptyRunCounts();
      await walkRuns(deps, 'walk-memory-test', walk, {}, counts, stored);
      expect(counts.fetched).toBe(600);
      expect(stored.size).toBe(0);
      expect(await diffWithTruth(sim, dir, window.to)).toEqual([]);
      // Every run of the window stored now: listed again, it is one walk.
      const again = await deps.gate.use((wh) => planWindow(wh, deps, () => window));
      expect(again.sliceMicros).toBe(window.to - window.from);
      expect(again.stored?.size).toBe(600);
    } finally {
      await engine.close();
    }
  });
});
