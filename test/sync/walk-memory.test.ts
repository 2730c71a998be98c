import { describe, expect, it } from 'vitest';
import { runBackfill } from '../../src/sync/backfill.ts';
import { type PassResult, runPass } from '../../src/sync/index.ts';
import { planWindow } from '../../src/sync/live.ts';
import { emptyRunCounts } from '../../src/sync/types.ts';
import { Known, newWalk, walkRuns } from '../../src/sync/walk.ts';
import { MICROS_PER_DAY } from '../../src/util/timestamp.ts';
import { diffWithTruth, engineFor, perTest, SETTLE, spanStart, stored, truth } from './kit.ts';

// A walk remembers the runs it asked for, so a run listed again after a refused cursor is not
// fetched twice even before its detail is committed; it remembers only the latest of them (more
// than its work in flight), and a slice read anew looks the rest up in the warehouse. A first sync
// of a million runs, remembering every one, ran out of V8's heap at about 600,000.

describe('what a walk keeps in memory', () => {
  const each = perTest();

  it('remembers only the latest runs it asked for', () => {
    const known = new Known(new Map([['stored', 5]]), 100);
    for (let i = 0; i < 10_000; i++) known.set(`run-${i}`, i);
    expect(known.get('run-0')).toBeUndefined();
    expect(known.get('run-9899')).toBeUndefined();
    expect(known.get('run-9900')).toBe(9900);
    expect(known.get('stored')).toBe(5);
  });

  it('leaves the stored map it is given as it was, however many runs it loads', async () => {
    const sim = await each.sim({ seed: 41, size: 600, days: 10 });
    const dir = each.dir();
    const engine = engineFor({ sim, dir });
    try {
      const window = { from: spanStart(sim), to: sim.clock.now() - SETTLE };
      const deps = engine.deps;
      const plan = await deps.gate.use((wh) => planWindow(wh, deps, () => window));
      const stored = plan.stored ?? new Map();
      const walk = newWalk({ ...window, sliceMicros: plan.sliceMicros, filter: {}, force: false }, deps.now());
      const counts = emptyRunCounts();
      await walkRuns(deps, 'walk-memory-test', walk, {}, counts, stored);
      expect(counts.fetched).toBe(600);
      expect(stored.size).toBe(0);
      expect(await diffWithTruth(sim, dir, window.to)).toEqual([]);
    } finally {
      await engine.close();
    }
  });

  it('remembering fewer runs than its slice holds, a walk whose cursors are refused fetches nothing twice', async () => {
    // 1,200 runs in one slice, remembering at most 500 (a list-ahead of 50, one page buffered):
    // cursors of 1 s expire while the lister waits for the loads, and each restart reads the slice
    // (or a narrower piece) again. Where the restarts fall is up to timing: this need not re-read a
    // run the walk no longer remembers, so it does not prove the warehouse look-up.
    const sim = await each.sim({
      seed: 62,
      size: 1200,
      days: 1,
      cursorTtlMs: 1000,
      rateLimit: { perKey: { limit: 100, windowSeconds: 1 } },
    });
    const dir = each.dir();
    const engine = engineFor({ sim, dir, options: { settings: { listAheadRuns: 50, bufferedPages: 1 } } });
    let r: PassResult;
    try {
      r = await runPass(engine.deps);
    } finally {
      await engine.close();
    }
    expect(r.status).toBe('ok');
    expect(r.runs.cursorRestarts).toBeGreaterThan(0);
    expect(await diffWithTruth(sim, dir, sim.clock.now() - SETTLE)).toEqual([]);
    expect(sim.counters.count('runs.get', 200)).toBe(r.runs.fetched);
    expect(r.runs.fetched).toBe(r.runs.new);
  });

  it('judges a slice whose stored runs it may not hold by looking each page up in the warehouse', async () => {
    // 600 runs over two days, then a backfill of them all allowed to hold 100 stored runs: each
    // day's slice holds 300, so every page's runs are looked up, and only those changed since are
    // fetched.
    const sim = await each.sim({ seed: 43, size: 600, days: 2 });
    const dir = each.dir();
    const first = engineFor({ sim, dir });
    try {
      await runPass(first.deps);
    } finally {
      await first.close();
    }
    const to = sim.clock.now() - SETTLE;
    sim.advance('3h');
    const have = await stored(dir);
    const want = truth(sim, to);
    const changed = [...want].filter(([id, w]) => have.get(id)?.updatedAt !== w.updatedAt).length;
    expect(have.size).toBe(600);
    expect(changed).toBeGreaterThan(0);
    expect(changed).toBeLessThan(300);
    const served = sim.counters.count('runs.get', 200);
    const engine = engineFor({ sim, dir, options: { settings: { storedMapLimit: 100 } } });
    try {
      const r = await runBackfill(engine.deps, {
        from: spanStart(sim),
        to,
        filter: {},
        force: false,
        sliceMicros: MICROS_PER_DAY,
      });
      expect(r.runs.fetched).toBe(changed);
      expect(r.runs.unchanged).toBe(600 - changed);
    } finally {
      await engine.close();
    }
    expect(sim.counters.count('runs.get', 200) - served).toBe(changed);
    expect(await diffWithTruth(sim, dir, to)).toEqual([]);
  });
});
