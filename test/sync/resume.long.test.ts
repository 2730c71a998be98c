import { describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { LIVE_KEY, PassError, runPass, type WalkState } from '../../src/sync/index.ts';
import { RECHECK_MAX } from '../../src/sync/open-due.ts';
import { getState, openWarehouse, setState } from '../../src/warehouse/index.ts';
import { diffWithTruth, engineFor, perTest, SETTLE } from './kit.ts';

// Checkpoints: a pass stopped between pages resumes at the page after the last one it loaded and
// fetches nothing twice; a saved cursor the API no longer takes restarts the slice cleanly; and a
// pass with nothing new costs only its list pages.

async function storedRuns(dir: string): Promise<number> {
  const wh = await openWarehouse(dir, { readOnly: true });
  try {
    const [r] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM runs`);
    return Number(r?.n ?? 0);
  } finally {
    await wh.close();
  }
}

describe('checkpoints and costs', () => {
  const each = perTest();

  async function interruptedPass(s: Simulator, dir: string, afterDetails: number): Promise<number> {
    const controller = new AbortController();
    const engine = engineFor({ sim: s, dir, options: { signal: controller.signal } });
    const watch = setInterval(() => {
      if (s.counters.count('runs.get') >= afterDetails) controller.abort(new Error('stop'));
    }, 2);
    try {
      const e = await runPass(engine.deps).then(
        () => null,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(PassError);
      expect((e as PassError).pass.status).toBe('interrupted');
    } finally {
      clearInterval(watch);
      await engine.close();
    }
    return storedRuns(dir);
  }

  it('a pass stopped mid-window resumes at the next page and fetches nothing twice', async () => {
    const sim = await each.sim({ seed: 41, size: 800 });
    const dir = each.dir();
    const kept = await interruptedPass(sim, dir, 300);
    expect(kept).toBeGreaterThan(0);
    const listBefore = sim.counters.count('runs.list');
    const detailsBefore = sim.counters.count('runs.get');
    const engine = engineFor({ sim, dir: dir });
    try {
      const r = await runPass(engine.deps);
      expect(r.status).toBe('ok');
    } finally {
      await engine.close();
    }
    expect(await diffWithTruth(sim, dir, sim.clock.now() - SETTLE)).toEqual([]);
    const total = await storedRuns(dir);
    expect(sim.counters.count('runs.get') - detailsBefore).toBe(total - kept);
    // The rest of the window, one short window after it, and the open-run refresh: far fewer
    // list pages than reading the 800 runs again.
    expect(sim.counters.count('runs.list') - listBefore).toBeLessThan(Math.ceil((total - kept) / 100) + 8);
  });

  it('a saved cursor the API refuses makes the slice start over, and the pass still ends exact', async () => {
    const sim = await each.sim({ seed: 42, size: 500 });
    const dir = each.dir();
    await interruptedPass(sim, dir, 150);
    const wh = await openWarehouse(dir);
    const saved = (await getState<WalkState>(wh, LIVE_KEY)) as WalkState;
    expect(saved.done).toBe(false);
    await setState(
      wh,
      LIVE_KEY,
      { ...saved, position: { ...saved.position, cursor: 'not-a-cursor-the-api-gave' } },
      sim.clock.now(),
    );
    await wh.close();
    const warnings: string[] = [];
    const engine = engineFor({ sim, dir: dir });
    const logger = engine.deps.logger;
    engine.deps.logger = Object.assign(Object.create(logger), {
      warn: (o: unknown, msg?: string) => warnings.push(String(msg ?? o)),
      child: () => engine.deps.logger,
    });
    try {
      expect((await runPass(engine.deps)).status).toBe('ok');
    } finally {
      await engine.close();
    }
    expect(warnings.some((w) => /cursor is no longer accepted/.test(w))).toBe(true);
    expect(await diffWithTruth(sim, dir, sim.clock.now() - SETTLE)).toEqual([]);
  });

  it('a pass with nothing new fetches no detail and reads the open runs in batches, as they come due', async () => {
    const sim = await each.sim({ seed: 43, size: 1500 });
    const dir = each.dir();
    const engine = engineFor({ sim, dir: dir });
    // Every open run comes due again within RECHECK_MAX; the simulator's clock stands still, so
    // nothing has changed meanwhile.
    const later = engineFor({ sim, dir, options: { now: () => sim.clock.now() + RECHECK_MAX } });
    try {
      await runPass(engine.deps);
      // Passes back to back: none of the open runs is due yet, and none is listed again.
      sim.counters.reset();
      const again = await runPass(engine.deps);
      expect(again.openRunsChecked).toBe(0);
      expect(sim.counters.count('runs.list')).toBe(again.runs.pages);
      expect(again.runs.pages).toBeLessThanOrEqual(again.rolling?.step ? 3 : 1);
      sim.counters.reset();
      const r = await runPass(later.deps);
      const open = r.openRunsChecked;
      expect(open).toBeGreaterThan(30);
      expect(sim.counters.count('runs.get')).toBe(0);
      // The live window's page, then the open runs by ticket: a request answers for up to 200
      // tickets and a page holds 100 runs (the tickets' other runs come along).
      const listRequests = sim.counters.count('runs.list');
      expect(listRequests).toBe(r.runs.pages);
      expect(listRequests).toBeLessThanOrEqual(1 + Math.ceil((open * 1.3) / 100) + Math.ceil(open / 200));
      expect(r.runs.unchanged).toBeGreaterThanOrEqual(open);
    } finally {
      await engine.close();
      await later.close();
    }
  });
});
