import { afterEach, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { runPass } from '../../src/sync/index.ts';
import { diffWithTruth, engineFor, SETTLE, startSim, tempDir } from './sync-kit.ts';

describe('a sync pass against the simulator', () => {
  let sim: Simulator | null = null;
  let tmp: ReturnType<typeof tempDir> | null = null;
  afterEach(async () => {
    await sim?.close();
    tmp?.cleanup();
    sim = null;
    tmp = null;
  });

  it('ends equal to the ground truth, and again after the clock moves', async () => {
    sim = await startSim({ runs: { postSettleFraction: 0 } });
    tmp = tempDir();
    const engine = engineFor({ sim, dir: tmp.dir });
    try {
      const first = await runPass(engine.deps);
      expect(first.status).toBe('ok');
      expect(await diffWithTruth(sim, tmp.dir, sim.clock.now() - SETTLE)).toEqual([]);
      for (const step of ['2h', '1d', '3d']) {
        sim.advance(step);
        const r = await runPass(engine.deps);
        expect(r.status).toBe('ok');
        expect(await diffWithTruth(sim, tmp.dir, sim.clock.now() - SETTLE)).toEqual([]);
      }
    } finally {
      await engine.close();
    }
  });
});
