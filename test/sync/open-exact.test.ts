import { describe, expect, it } from 'vitest';
import { runPass } from '../../src/sync/index.ts';
import { MICROS_PER_DAY } from '../../src/util/timestamp.ts';
import { diffWithTruth, engineFor, perTest, SETTLE } from './kit.ts';

// `sync` followed by `sync` is exact: every change made before the second began is in the
// warehouse when it ends, however soon after the first it runs. Open runs are all checked when
// that fits the share of the key's rate open-run checks may use; only a set too large for it is
// checked as the runs come due, and the pass then says how many it deferred.

describe('a second sync soon after the first', () => {
  const each = perTest();

  it.each([['the rate not known', null] as const, ['a rate limit of 100 a second', { limit: 100, windowSeconds: 1 }]])(
    'with %s: every open run that settled in between is loaded',
    async (_, limit) => {
      const sim = await each.sim({ seed: 21, size: 2000, days: 4, rateLimit: { perKey: limit } });
      const dir = each.dir();
      const engine = engineFor({ sim, dir });
      try {
        expect((await runPass(engine.deps)).status).toBe('ok');
        sim.advance('20s');
        const old = sim.clock.now() - MICROS_PER_DAY;
        const settled = [...sim.world.settleOpenRuns(50, 0, old), ...sim.world.settleOpenRuns(150, old)];
        expect(settled.length).toBeGreaterThan(60);
        sim.advance('20s');
        const second = await runPass(engine.deps);
        expect(second.status).toBe('ok');
        expect(await diffWithTruth(sim, dir, sim.clock.now() - SETTLE)).toEqual([]);
        expect(second.openRunsDeferred).toBe(0);
      } finally {
        await engine.close();
      }
    },
  );
});
